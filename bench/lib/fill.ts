import { join } from 'node:path';
import type { BenchDatabase } from './databases.js';
import { ROOT, SERVICE_DIST } from './mailroom.js';
import { settleAfterBulkLoad } from './store.js';
import type { SuiteContext } from './suite.js';

const FILL_TOOL = join(ROOT, 'bench', 'tools', 'fill-mailbox.ts');
/** Messages per fill transaction. */
export const FILL_BATCH = 5000;

/** What tools/fill-mailbox.ts reports. */
interface FillOutput {
  messages: number;
  ms: number;
  per_second: number;
  batch: number;
  threads: number;
  with_attachment: number;
  raw_mib: number;
}

/** The fill, and the settle step that followed it. */
export interface FillReport extends FillOutput {
  /** PostgreSQL's VACUUM ANALYZE after the fill; null on SQLite, which gets none. */
  vacuum_analyze_ms: number | null;
}

/**
 * Fill `mailbox` with `messages` generated messages through the measured build's own message store
 * (tools/fill-mailbox.ts, FILL_BATCH per transaction), then settle the database as a mailbox of that size would be
 * (VACUUM ANALYZE on PostgreSQL). Fails after `timeoutS`.
 */
export async function fillMailbox(context: SuiteContext, database: BenchDatabase, mailbox: string, messages: number, timeoutS: number): Promise<FillReport> {
  const dialect = database.dialect;
  context.log(`  [${dialect}] filling ${mailbox} with ${messages} messages through the message store (${FILL_BATCH} per transaction)…`);
  const output = await context.processes.run('fill-mailbox', {
    args: ['--import', 'tsx', FILL_TOOL],
    cwd: ROOT,
    env: { ...process.env, BENCH_FILL_DATABASE_URL: database.url, BENCH_FILL_DIST: SERVICE_DIST, BENCH_FILL_MAILBOX: mailbox, BENCH_FILL_COUNT: String(messages), BENCH_FILL_BATCH: String(FILL_BATCH) },
    timeoutMs: timeoutS * 1000,
  });
  const filledLine = /^filled (\{.*\})$/m.exec(output);
  if (!filledLine) throw new Error(`fill-mailbox printed no result:\n${output}`);
  const fill = JSON.parse(filledLine[1]!) as FillOutput;
  const settleStarted = performance.now();
  await settleAfterBulkLoad(database);
  const settleMs = Math.round(performance.now() - settleStarted);
  context.log(`  [${dialect}] filled ${fill.messages} messages in ${(fill.ms / 1000).toFixed(1)} s (${fill.per_second} msg/s)${dialect === 'postgres' ? `; VACUUM ANALYZE ${(settleMs / 1000).toFixed(1)} s` : ''}`);
  return { ...fill, vacuum_analyze_ms: dialect === 'postgres' ? settleMs : null };
}
