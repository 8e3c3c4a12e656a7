/**
 * The baseline of the smtp suite, run as its own process: a bare `smtp-server` with the options of
 * Mailroom's inbound listener that matter for speed (no reverse lookup, no AUTH, no STARTTLS, the
 * same SIZE limit, no logger) that accepts every sender and recipient and discards the data. The
 * ratio service ÷ bare is then the cost of everything Mailroom adds to an SMTP transaction:
 * recipient check, SPF/DKIM/DMARC, MIME parsing and the durable write.
 *
 *   BENCH_BARE_PORT      port on 127.0.0.1
 *   BENCH_BARE_MAX_SIZE  SIZE limit in bytes (Mailroom's MAILROOM_SMTP_MAX_SIZE default: 25 MiB)
 *
 * On SIGTERM it prints `accepted <n>` (messages answered 250) before it exits, so the bench can
 * check that the load generator's messages all arrived; on SIGUSR2 it prints `count <n> bytes <total message bytes>` and goes on
 * (the outbound suite checks each sender's messages on one sink).
 */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

const port = Number(process.env.BENCH_BARE_PORT);
const maxSize = Number(process.env.BENCH_BARE_MAX_SIZE ?? 25 * 1024 * 1024);
if (!Number.isInteger(port) || port <= 0 || !Number.isInteger(maxSize) || maxSize < 1024) {
  console.error('bare-smtp.server: set BENCH_BARE_PORT (and optionally BENCH_BARE_MAX_SIZE)');
  process.exit(2);
}

let accepted = 0;
/** Bytes of the accepted messages (as received, dot-unstuffed). */
let acceptedBytes = 0;

const server = new SMTPServer({
  name: 'bare.bench.localhost',
  banner: 'Bare ESMTP',
  size: maxSize,
  authOptional: true,
  disabledCommands: ['AUTH', 'STARTTLS'],
  disableReverseLookup: true,
  closeTimeout: 1000,
  logger: false,
  onData(stream, _session, callback) {
    // Read to the final dot and drop the bytes; answer as Mailroom would (552 past the limit).
    let bytes = 0;
    stream.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
    });
    stream.on('error', (err: Error) => callback(err));
    stream.on('end', () => {
      if (stream.sizeExceeded) {
        callback(Object.assign(new Error(`5.3.4 Message too big (at most ${maxSize} bytes)`), { responseCode: 552 }));
        return;
      }
      accepted++;
      acceptedBytes += bytes;
      callback(null, '2.0.0 Discarded');
    });
  },
});
server.on('error', (err) => console.error('bare smtp server error:', err.message));

await new Promise<void>((resolve, reject) => {
  server.server.once('error', reject);
  server.listen(port, '127.0.0.1', () => {
    server.server.off('error', reject);
    resolve();
  });
});
console.log(`listening ${(server.server.address() as AddressInfo).port}`);

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  console.log(`accepted ${accepted}`);
  server.close(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.on('SIGUSR2', () => console.log(`count ${accepted} bytes ${acceptedBytes}`));
