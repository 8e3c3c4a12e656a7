/**
 * The retention sweep at scale: fill a mailbox with BENCH_RETENTION_COUNT messages through the service's own message
 * store (tools/fill-mailbox.ts, as the inbox suite does), move them all to trash dated 60 days back, then run one
 * sweep in this process (the worker's code, `services.retention.sweep.sweep()`) and report rows a second, the longest
 * time one batch held its transaction, and what the database's files did.
 *
 *   BENCH_RETENTION_DATABASE_URL  an empty database: sqlite:PATH (a new file) or postgres://… (a new database)
 *   BENCH_RETENTION_COUNT         messages filled (default 100000)
 *   BENCH_RETENTION_COPIES        times the filled messages are there in all, copied by SQL (default 1)
 *   BENCH_RETENTION_BATCH         MAILROOM_RETENTION_BATCH for the sweep (default 500)
 *   BENCH_FILL_DIST               the modules the fill stores with (default: this checkout's src/, run by tsx)
 *
 *   npx tsx bench/tools/retention-sweep.ts
 *
 * Prints `swept <json>` last.
 */
import { spawn } from 'node:child_process';
import { statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql, type Kysely } from 'kysely';
import { loadConfig } from '../../src/config/config.js';
import { manualClock } from '../../src/lib/clock.js';
import { createServices } from '../../src/main.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const DAY = 86_400_000;
/** UIDs each SQL copy of the filled messages is moved up by (more than any fill), and those of spam when all go to trash. */
const COPY_UID_RANGE = 10_000_000_000;
const SPAM_UID_OFFSET = 1_000 * COPY_UID_RANGE;
const url = process.env.BENCH_RETENTION_DATABASE_URL?.trim() || `sqlite:${join(ROOT, 'data', `retention-bench-${Date.now()}.db`)}`;
const count = Number(process.env.BENCH_RETENTION_COUNT?.trim() || 100_000);
const batch = process.env.BENCH_RETENTION_BATCH?.trim() || '500';
const MAILBOX = 'retention@mailroom.localhost';
const secretEnv = url.startsWith('postgres') ? { MAILROOM_SECRET_KEY: '6d61696c726f6f6d2d746573742d6b65792d3031323334353637383961626364' } : {};
const env = { MAILROOM_DATABASE_URL: url, MAILROOM_LOG_LEVEL: 'silent', MAILROOM_RETENTION_BATCH: batch, ...secretEnv };

/** Run tools/fill-mailbox.ts as the inbox suite does, its progress on stderr. */
function fill(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'tools', 'fill-mailbox.ts')], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, BENCH_FILL_DATABASE_URL: url, BENCH_FILL_DIST: process.env.BENCH_FILL_DIST ?? join(ROOT, 'src'), BENCH_FILL_MAILBOX: MAILBOX, BENCH_FILL_COUNT: String(count), BENCH_FILL_BATCH: '5000' },
    });
    child.stdout.on('data', (chunk: Buffer) => process.stderr.write(chunk));
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`fill-mailbox exited ${code}`))));
  });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the bench copies rows of tables by name
type AnyDb = Kysely<any>;

async function columns(db: AnyDb, dialect: string, table: string): Promise<string[]> {
  const query = dialect === 'sqlite' ? sql<{ name: string }>`select name from pragma_table_info(${table})` : sql<{ name: string }>`select column_name as name from information_schema.columns where table_name = ${table} and table_schema = current_schema() order by ordinal_position`;
  return (await query.execute(db)).rows.map((r) => r.name);
}

/**
 * BENCH_RETENTION_COPIES: every filled message once more per copy, by SQL (composing and parsing is the fill's slow
 * part): its thread, contents, attachments, labels and search-index row, each id with `suffix`. The counters follow.
 */
async function copyAll(db: AnyDb, dialect: string, copy: number): Promise<void> {
  const suffix = `_c${copy}`;
  // A copy an interrupted run already made is kept (BENCH_RETENTION_FILLED=1 then resumes after the copies).
  const made = await sql.raw<{ n: number }>(`select count(*) as n from (select 1 from messages where substr(id, 31) = '${suffix}' limit 1) t`).execute(db);
  if (Number(made.rows[0]?.n ?? 0) > 0) return console.error(`kept ${suffix}`);
  const renamed: Record<string, string[]> = { threads: ['id'], messages: ['id', 'thread_id'], message_contents: ['message_id'], attachments: ['id', 'message_id'], message_labels: ['message_id'] };
  for (const [table, keys] of Object.entries(renamed)) {
    const cols = await columns(db, dialect, table);
    const list = cols.map((c) => `"${c}"`).join(', ');
    // UIDs are unique per folder: each copy's are the filled ones moved up by a range of their own.
    const select = cols.map((c) => (keys.includes(c) ? `"${c}" || '${suffix}'` : table === 'messages' && c === 'uid' ? `"uid" + ${copy * COPY_UID_RANGE}` : `"${c}"`)).join(', ');
    // The filled rows only (ids of 30 characters: a prefix and a ULID), not earlier copies.
    const source = `where length("${keys[keys.length - 1]}") = 30`;
    await sql.raw(`insert into ${table} (${list}) select ${select} from ${table} ${source}`).execute(db);
  }
  if (dialect === 'sqlite') {
    await sql.raw(`insert into message_fts_keys (message_id, workspace_id) select id, workspace_id from messages where substr(id, 31) = '${suffix}'`).execute(db);
    await sql.raw(`insert into message_fts (rowid, subject, "from", "to", cc, filename, body) select k.id, m.subject, m.from_json, m.to_json, m.cc_json, m.attachments_json, coalesce(c.text_body, '') from message_fts_keys k join messages m on m.id = k.message_id left join message_contents c on c.message_id = m.id where substr(k.message_id, 31) = '${suffix}'`).execute(db);
  }
  await sql.raw(`update folder_counts set total = (select count(*) from messages where messages.mailbox_id = folder_counts.mailbox_id and messages.folder = folder_counts.folder)`).execute(db);
  console.error(`copied ${suffix}`);
}

const sqliteBytes = (): number | null => {
  if (!url.startsWith('sqlite:')) return null;
  const path = url.slice('sqlite:'.length);
  return [path, `${path}-wal`].reduce((sum, file) => sum + (statSync(file, { throwIfNoEntry: false })?.size ?? 0), 0);
};

// A workspace and its mailbox, then the fill (BENCH_RETENTION_FILLED=1: the database was filled by an earlier run, kept).
const fillStarted = performance.now();
if (process.env.BENCH_RETENTION_FILLED !== '1') {
  const setup = await createServices(loadConfig(env));
  const made = await setup.tenancy.admin.bootstrap({ email: 'bench@example.com', password: 'retention-bench', workspace: 'Bench' });
  await setup.mailboxes.createAsOperator(made.workspace_id, { address: MAILBOX });
  await setup.database.destroy();
  await fill();
  if (process.env.BENCH_RETENTION_FILL_ONLY === '1') process.exit(0);
}
const fillMs = performance.now() - fillStarted;

// Everything to trash, last changed 60 days ago; the folder counters move with it. Then a clock 30 days on.
const clock = manualClock(Date.now() + 30 * DAY);
const services = await createServices(loadConfig(env), { clock });
const db = services.database.db;
const copies = Number(process.env.BENCH_RETENTION_COPIES?.trim() || 1);
for (let k = 1; k < copies; k++) await copyAll(db, services.database.dialect.name, k);
// Inbox and spam UIDs overlap: the spam ones move past every copy's range, so all are unique in trash. The offset is
// a literal: as a parameter PostgreSQL would type it integer (from the 0 beside it), and it is past 32 bits.
await sql`update ${sql.table('messages')} set folder = 'trash', uid = ${sql.ref('uid')} + (case when ${sql.ref('folder')} = 'spam' then ${sql.lit(SPAM_UID_OFFSET)} else 0 end), updated_at = ${Date.now() - 60 * DAY}`.execute(db);
await sql`update ${sql.table('folder_counts')} set folder = 'trash'`.execute(db);
if (services.database.dialect.name === 'postgres') await sql`vacuum analyze`.execute(db);
const before = sqliteBytes();

const started = performance.now();
const report = await services.retention.sweep.sweep();
const ms = performance.now() - started;
const left = await sql<{ n: number | string }>`select count(*) as n from ${sql.table('messages')}`.execute(db);
await services.database.destroy();
const result = {
  dialect: url.startsWith('sqlite:') ? 'sqlite' : 'postgres',
  messages: count * copies,
  fill_s: Math.round(fillMs / 100) / 10,
  swept: report.messages,
  left: Number(left.rows[0]?.n ?? -1),
  sweep_s: Math.round(ms / 100) / 10,
  rows_per_second: Math.round(report.messages / (ms / 1000)),
  batch: Number(batch),
  batches: report.batches,
  longest_batch_ms: Math.round(report.longestBatchMs),
  longest_message_batch_ms: Math.round(report.longestMessageBatchMs),
  pages_freed: report.pagesFreed,
  file_mib_before: before === null ? null : Math.round(before / 2 ** 20),
  file_mib_after: before === null ? null : Math.round((sqliteBytes() ?? 0) / 2 ** 20),
};
console.log(`swept ${JSON.stringify(result)}`);
