/**
 * Write a backlog of events for the webhook suite through the measured build's own outbox: each
 * `events.emit` runs the webhook fan-out, so every event gets one delivery job per active endpoint of
 * the workspace, exactly as a producer's transaction writes them (many events per transaction here).
 * Every module comes from the measured build's dist/ (BENCH_FILL_DIST). No worker runs in this process.
 *
 *   BENCH_FILL_DATABASE_URL  MAILROOM_DATABASE_URL of a migrated database
 *   BENCH_FILL_SECRET_KEY    MAILROOM_SECRET_KEY of the service on that database
 *   BENCH_FILL_DIST          the measured build's dist/ directory
 *   BENCH_FILL_WORKSPACE     workspace id
 *   BENCH_FILL_COUNT         events to write
 *   BENCH_FILL_BATCH         events per transaction (default 200)
 *
 * Prints `filled <events> <ms>`.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as Tables from '../../src/db/tables.js';
import type * as ConfigModule from '../../src/config/config.js';
import type * as Main from '../../src/main.js';

function env(name: string): string {
  const value = process.env[name]?.trim();
  if (!value) {
    console.error(`webhook-fill: set ${name}`);
    process.exit(2);
  }
  return value;
}

const databaseUrl = env('BENCH_FILL_DATABASE_URL');
const dist = env('BENCH_FILL_DIST');
const workspaceId = env('BENCH_FILL_WORKSPACE');
const count = Number(env('BENCH_FILL_COUNT'));
const batch = Number(process.env.BENCH_FILL_BATCH?.trim() || 200);

const load = async <T>(path: string) => (await import(pathToFileURL(join(dist, path)).href)) as T;
const { asWork } = await load<typeof Tables>('db/tables.js');
const { loadConfig } = await load<typeof ConfigModule>('config/config.js');
const { createServices } = await load<typeof Main>('main.js');

// A message list view of typical size (about 1 KB of JSON), as message.received carries.
const data = (n: number) => ({
  message_id: `msg_bench${String(n).padStart(21, '0')}`,
  mailbox: 'helpdesk@bench.mailroom.localhost',
  direction: 'inbound',
  folder: 'inbox',
  read: false,
  labels: [],
  thread_id: `thr_bench${String(n).padStart(21, '0')}`,
  from: { name: 'Alice Example', address: 'alice@sender.test' },
  to: [{ name: '', address: 'helpdesk@bench.mailroom.localhost' }],
  cc: [],
  subject: `Order ${100_000 + n} has not arrived`,
  date: new Date().toISOString(),
  snippet: 'Hello, my order has not arrived yet. Could you check where it is? It was due last week. Thanks, Alice',
  size: 2048,
  attachments: [],
  auth: { spf: 'pass', dkim: 'pass', dmarc: 'pass' },
  internet_message_id: `order-${n}@sender.test`,
  created_at: new Date().toISOString(),
});

const started = performance.now();
const services = await createServices(loadConfig({ MAILROOM_DATABASE_URL: databaseUrl, MAILROOM_SECRET_KEY: env('BENCH_FILL_SECRET_KEY'), MAILROOM_LOG_LEVEL: 'silent' }), { migrate: false });
const { db } = services.database;
for (let done = 0; done < count; done += batch) {
  const size = Math.min(batch, count - done);
  await db.transaction().execute(async (trx) => {
    for (let i = 0; i < size; i++) await services.events.emit(asWork(trx), { workspaceId, type: 'message.received', data: data(done + i) });
  });
}
await services.webhooks.close();
await services.database.destroy();
console.log(`filled ${count} ${Math.round(performance.now() - started)}`);
