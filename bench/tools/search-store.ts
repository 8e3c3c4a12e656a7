/**
 * A search's statements on a database the `search` suite kept (`BENCH_KEEP_DB=1`), as the service runs them on
 * PostgreSQL: each search in its own transaction with a `statement_timeout`, page of 50 and count. Prints p50 / p99
 * ms a query, over `rounds` timed runs after 5 warm-up runs of each. Migrates the database first, so a kept database
 * of an older build measures this one (the migration's time is printed).
 *
 *   MAILROOM_DATABASE_URL=postgres://postgres@127.0.0.1:5432/mailroom_bench_… \
 *     node --import tsx bench/tools/search-store.ts [--rounds 40] 'from:alice.0@sender1.test' 'invoice' …
 */
import { sql } from 'kysely';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { createDb } from '../../src/db/database.js';
import { createMigrator } from '../../src/db/migrator.js';
import { asWork } from '../../src/db/tables.js';
import { createSearchStore } from '../../src/modules/mail/search.store.js';
import { parseSearchQuery } from '../../src/modules/messages/search-query.js';

const MAILBOX = 'search@bench.mailroom.localhost';
const PAGE = 50;
const WARM_UP = 5;

const { values, positionals } = parseArgs({ allowPositionals: true, options: { rounds: { type: 'string', default: '40' } } });
const url = process.env.MAILROOM_DATABASE_URL;
if (!url) throw new Error('MAILROOM_DATABASE_URL: the kept bench database');
const rounds = Number(values.rounds);

const handle = createDb(url);
const started = performance.now();
const migrated = await createMigrator(handle.db).migrateToLatest();
if (migrated.error) throw migrated.error instanceof Error ? migrated.error : new Error(`migration failed: ${JSON.stringify(migrated.error)}`);
console.log(JSON.stringify({ migrations: migrated.results?.map((r) => r.migrationName) ?? [], ms: Math.round(performance.now() - started) }));

const { workspace_id: workspaceId } = await handle.db.selectFrom('mailboxes').select('workspace_id').where('address', '=', MAILBOX).executeTakeFirstOrThrow();
const store = createSearchStore({ dialect: handle.dialect });

async function once(q: string): Promise<{ ms: number; total: number }> {
  const node = parseSearchQuery(q);
  const at = performance.now();
  const page = await handle.db.transaction().execute(async (trx) => {
    await sql`set local statement_timeout = 5000`.execute(trx);
    return store.searchMessages(asWork(trx), workspaceId, {}, node, PAGE, 0);
  });
  return { ms: performance.now() - at, total: page.total };
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
for (const q of positionals) {
  for (let i = 0; i < WARM_UP; i++) await once(q);
  const times: number[] = [];
  let total = 0;
  for (let i = 0; i < rounds; i++) {
    const run = await once(q);
    total = run.total;
    times.push(run.ms);
  }
  times.sort((a, b) => a - b);
  console.log(JSON.stringify({ q, total, p50: Number(percentile(times, 50).toFixed(1)), p99: Number(percentile(times, 99).toFixed(1)) }));
}
await handle.destroy();
