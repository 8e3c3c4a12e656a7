/**
 * The stream suite's client, run as its own process so that the bench's mail sending never delays its
 * reads: one Server-Sent Events connection, and one stdout line per event as it arrives.
 *
 *   BENCH_SSE_URL      the stream's URL (http://127.0.0.1:…)
 *   BENCH_SSE_SESSION  optional X-Service-Session token
 *
 * Prints `connected` on the stream's `: connected` comment, then `e <id> <type> <latency ms>` per event, where the
 * latency is the arrival of the chunk holding it minus the event's `created_at` (ms precision, same machine clock).
 * The arrival time is taken before anything is parsed. A stream that ends or fails prints `ended …` and exits 1.
 */
import { request } from 'node:http';

const url = process.env.BENCH_SSE_URL;
if (!url) {
  console.error('sse-reader: set BENCH_SSE_URL');
  process.exit(2);
}
const session = process.env.BENCH_SSE_SESSION;

/** One SSE block (between blank lines): its `id`, `event` and `data` fields, or the comment it is. */
function handleBlock(block: string, arrivedAt: number): void {
  let id: string | undefined;
  let type = '';
  let data: string | undefined;
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) {
      if (line.slice(1).trim() === 'connected') process.stdout.write('connected\n');
      continue;
    }
    const colon = line.indexOf(':');
    const field = line.slice(0, colon);
    const value = line.slice(colon + 1).replace(/^ /, '');
    if (field === 'id') id = value;
    else if (field === 'event') type = value;
    else if (field === 'data') data = value;
  }
  if (id === undefined || data === undefined) return;
  const createdAt = Date.parse((JSON.parse(data) as { created_at: string }).created_at);
  process.stdout.write(`e ${id} ${type || 'message'} ${arrivedAt - createdAt}\n`);
}

const req = request(url, { headers: { accept: 'text/event-stream', ...(session ? { 'x-service-session': session } : {}) } }, (res) => {
  if (res.statusCode !== 200) {
    process.stdout.write(`ended status ${res.statusCode ?? '?'}\n`);
    process.exit(1);
  }
  res.setEncoding('utf8');
  let buffer = '';
  res.on('data', (chunk: string) => {
    const arrivedAt = Date.now();
    buffer += chunk;
    let cut: number;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      handleBlock(buffer.slice(0, cut), arrivedAt);
      buffer = buffer.slice(cut + 2);
    }
  });
  res.on('end', () => {
    process.stdout.write('ended by the server\n');
    process.exit(1);
  });
});
req.on('error', (err) => {
  process.stdout.write(`ended ${err.message}\n`);
  process.exit(1);
});
req.end();
process.on('SIGTERM', () => process.exit(0));
