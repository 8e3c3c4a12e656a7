/**
 * Fill one hosted mailbox with many messages, fast, writing exactly what SMTP ingest writes: each
 * message is real MIME (nodemailer's composer), parsed by the service's own parser, given the
 * Authentication-Results that the service's authenticator produces for it, and stored through the
 * service's message store (`createMessageStore`) with its `message.received` event, as
 * `InboundService.deliver` does, but many messages per transaction instead of one, and without the
 * SMTP session and DNS round trips. Composing and parsing run on helper threads (fill-worker.ts)
 * while this thread stores, in order. Every service module comes from the measured build's dist/
 * (BENCH_FILL_DIST), so the rows are those of the code under test. Run by the inbox suite as a
 * child process (not profiled).
 *
 *   BENCH_FILL_DATABASE_URL  MAILROOM_DATABASE_URL of a migrated database
 *   BENCH_FILL_DIST          the measured build's dist/ directory
 *   BENCH_FILL_MAILBOX       address of an existing mailbox
 *   BENCH_FILL_COUNT         messages to store
 *   BENCH_FILL_BATCH         messages per transaction (default 5000)
 *   BENCH_FILL_THREADS       helper threads composing and parsing (default: the number of CPUs, at most 4)
 *
 * Prints `progress <n>` after every transaction and finally `filled <json>`.
 */
import { cpus } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type * as Tables from '../../src/db/tables.js';
import type * as Database from '../../src/db/database.js';
import type * as Clock from '../../src/lib/clock.js';
import type { DnsResolve } from '../../src/lib/dns.js';
import type * as Events from '../../src/modules/events/events.service.js';
import type * as EventStore from '../../src/modules/events/event.store.js';
import type * as Authentication from '../../src/modules/messages/authentication.js';
import type { AuthOutcome } from '../../src/modules/messages/authentication.js';
import type * as Mail from '../../src/modules/mail/mail.store.js';
import type * as Views from '../../src/modules/messages/message.views.js';
import type { FillWorkerData, Prepared } from './fill-worker.js';

/** The mail spans about two months up to now, like a mailbox in use. */
const SPAN_MS = 60 * 86_400_000;
/** The SMTP facts every message gets, as if it had come over loopback from one client. */
const REMOTE_IP = '127.0.0.1';
const HELO = 'client.bench.localhost';

function env(name: string): string {
  const value = process.env[name]?.trim();
  if (!value) {
    console.error(`fill-mailbox: set ${name}`);
    process.exit(2);
  }
  return value;
}

const databaseUrl = env('BENCH_FILL_DATABASE_URL');
const dist = env('BENCH_FILL_DIST');
const address = env('BENCH_FILL_MAILBOX');
const count = Number(env('BENCH_FILL_COUNT'));
const batch = Number(process.env.BENCH_FILL_BATCH?.trim() || 5000);
const threads = Number(process.env.BENCH_FILL_THREADS?.trim() || Math.min(4, cpus().length));
if (![count, batch, threads].every((n) => Number.isInteger(n) && n >= 1)) {
  console.error('fill-mailbox: BENCH_FILL_COUNT, BENCH_FILL_BATCH and BENCH_FILL_THREADS must be whole numbers ≥ 1');
  process.exit(2);
}
/** Messages handed to the helper threads ahead of the one being stored. */
const LOOKAHEAD = 64 * threads;

const load = async <T>(path: string) => (await import(pathToFileURL(join(dist, path)).href)) as T;
const { asWork } = await load<typeof Tables>('db/tables.js');
const { createDb } = await load<typeof Database>('db/database.js');
const { manualClock } = await load<typeof Clock>('lib/clock.js');
const { createEventsService } = await load<typeof Events>('modules/events/events.service.js');
const { createEventStore } = await load<typeof EventStore>('modules/events/event.store.js');
const { createMailauthAuthenticator } = await load<typeof Authentication>('modules/messages/authentication.js');
const { createReceivedMailStore } = await load<typeof Mail>('modules/mail/mail.store.js');
const { toMessageListView } = await load<typeof Views>('modules/messages/message.views.js');

const started = performance.now();
const database = createDb(databaseUrl);
const { db, dialect } = database;
const mail = createReceivedMailStore({ clock: manualClock(Date.now()), dialect });
const mailbox = await mail.mailboxForRecipient(asWork(db), address);
if (!mailbox) {
  console.error(`fill-mailbox: no mailbox ${address}`);
  await database.destroy();
  process.exit(2);
}

// Each message gets its own time, spread over SPAN_MS up to now (chosen by the helper threads); the store reads it from this clock.
const startAt = Date.now() - SPAN_MS;
const clock = manualClock(startAt);
const store = createReceivedMailStore({ clock, dialect });
const events = createEventsService({ clock, store: createEventStore({ dialect }) });
// Every sender domain is NXDOMAIN in the bench, as in the smtp suite: answer so without a network round trip.
const nxdomain: DnsResolve = async (name) => {
  throw Object.assign(new Error(`queryTxt ENOTFOUND ${name}`), { code: 'ENOTFOUND', hostname: name });
};
const authenticator = createMailauthAuthenticator({ resolve: nxdomain, hostname: 'mx.bench.localhost' });
// The verdict depends on the sender, HELO and IP only (nothing is signed), so it is computed once per sender.
const authBySender = new Map<string, AuthOutcome>();

// Prepared messages by seq, and whoever waits for the next one in order.
const ready = new Map<number, Prepared>();
let wanted: { seq: number; resolve: (p: Prepared) => void; reject: (err: Error) => void } | null = null;
let failure: Error | null = null;
// A worker thread does not inherit the `--import tsx` loader: it registers tsx itself, then loads the TypeScript helper.
const workerSource = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then(({ register }) => { register(); return import(${JSON.stringify(new URL('./fill-worker.ts', import.meta.url).href)}); })`;
const runId = `fill.${Date.now()}`;
const workers = Array.from({ length: threads }, (_, index) => {
  const workerData: FillWorkerData = { mimeModule: pathToFileURL(join(dist, 'modules/messages/mime.js')).href, mailbox: mailbox.address, count, threads, index, startAt, spanMs: SPAN_MS, runId };
  const worker = new Worker(workerSource, { eval: true, workerData });
  worker.on('message', (p: Prepared) => {
    if (wanted?.seq === p.seq) {
      wanted.resolve(p);
      wanted = null;
    } else {
      ready.set(p.seq, p);
    }
  });
  worker.on('error', (err) => {
    failure = err;
    wanted?.reject(err);
  });
  return worker;
});

/** Message `seq`, once its helper has prepared it; keeps the helpers LOOKAHEAD messages ahead. */
function take(seq: number): Promise<Prepared> {
  if (seq % 64 === 0) for (const w of workers) w.postMessage({ upTo: seq + LOOKAHEAD });
  if (failure) return Promise.reject(failure);
  const p = ready.get(seq);
  if (p) {
    ready.delete(seq);
    return Promise.resolve(p);
  }
  return new Promise((resolve, reject) => {
    wanted = { seq, resolve, reject };
  });
}

/** Structured cloning turned Buffers into Uint8Arrays; the store and the drivers want Buffers. */
const buffer = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

let stored = 0;
let withAttachment = 0;
let rawBytes = 0;
try {
  while (stored < count) {
    const size = Math.min(batch, count - stored);
    await db.transaction().execute(async (trx) => {
      for (let i = 0; i < size; i++) {
        const item = await take(stored + i);
        const raw = buffer(item.raw);
        const { parsed } = item;
        for (const a of parsed.attachments) a.content = buffer(a.content);
        clock.set(item.at);
        let auth = authBySender.get(item.from);
        if (!auth) {
          auth = await authenticator.check(raw, { ip: REMOTE_IP, helo: HELO, sender: item.from });
          authBySender.set(item.from, auth);
        }
        // From here on as InboundService.deliver: Authentication-Results in front of the source and the header list.
        const source = auth.headerLines ? Buffer.concat([Buffer.from(auth.headerLines.replace(/\r?\n$/, '') + '\r\n'), raw]) : raw;
        if (auth.headerLines) {
          const added = auth.headerLines
            .split(/\r?\n(?![ \t])/)
            .filter((line) => line.includes(':'))
            .map((line) => ({ name: line.slice(0, line.indexOf(':')), value: line.slice(line.indexOf(':') + 1).replace(/\r?\n[ \t]+/g, ' ').trim() }));
          parsed.headers.unshift(...added);
        }
        const row = await store.storeCopy(asWork(trx), {
          workspaceId: mailbox.workspace_id,
          mailboxId: mailbox.id,
          mailboxAddress: mailbox.address,
          direction: 'inbound',
          folder: auth.summary.dmarc === 'fail' ? 'spam' : 'inbox',
          read: false,
          raw: source,
          parsed,
          auth: auth.summary,
          envelope: { mail_from: item.from, remote_ip: REMOTE_IP, helo: HELO, rcpt_to: mailbox.address },
        });
        await events.emit(asWork(trx), { workspaceId: mailbox.workspace_id, type: 'message.received', data: { ...toMessageListView(row) } });
        if (item.hasAttachment) withAttachment++;
        rawBytes += source.length;
      }
    });
    stored += size;
    console.log(`progress ${stored}`);
  }
} finally {
  await Promise.all(workers.map((w) => w.terminate()));
  await database.destroy();
}
const ms = Math.round(performance.now() - started);
console.log(`filled ${JSON.stringify({ messages: stored, ms, per_second: Math.round(stored / (ms / 1000)), batch, threads, with_attachment: withAttachment, raw_mib: Math.round(rawBytes / 2 ** 20) })}`);
