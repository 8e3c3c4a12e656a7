import { assertLoopback, createPostgresDatabase, createSqliteDatabase, postgresBaseUrl, probePostgres, redactUrl, type BenchDatabase, type Dialect } from './databases.js';
import type { Scope } from './scope.js';
import type { SuiteContext, SuiteResult } from './suite.js';

const ALL_DIALECTS: readonly Dialect[] = ['sqlite', 'postgres'];

/**
 * The databases every suite runs on, in this order: both, or those named in BENCH_DATABASES
 * (comma-separated, for a quicker try; a goal is only judged on the databases that ran).
 */
export const DIALECTS: readonly Dialect[] = selectDialects(process.env.BENCH_DATABASES);

function selectDialects(given: string | undefined): readonly Dialect[] {
  const names = (given ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (names.length === 0) return ALL_DIALECTS;
  const unknown = names.filter((n) => !ALL_DIALECTS.includes(n as Dialect));
  if (unknown.length > 0) throw new Error(`BENCH_DATABASES: unknown database ${unknown.join(', ')} (sqlite, postgres)`);
  return ALL_DIALECTS.filter((d) => names.includes(d));
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * Run `body` once per database. PostgreSQL is skipped (with the reason) when it does not answer and
 * fails when MAILROOM_BENCH_PG_URL is not a loopback address; a failing body is recorded under
 * `dialect` and the next database still runs. An abort (Ctrl-C, budget) ends the loop.
 */
export async function forEachDialect(context: SuiteContext, result: SuiteResult, body: (dialect: Dialect) => Promise<void>): Promise<void> {
  for (const dialect of DIALECTS) {
    context.signal.throwIfAborted();
    if (dialect === 'postgres') {
      const base = postgresBaseUrl();
      try {
        assertLoopback(base, 'MAILROOM_BENCH_PG_URL');
      } catch (err) {
        context.log(`  [postgres] FAILED: ${message(err)}`);
        result.failed.push({ case: dialect, error: message(err) });
        continue;
      }
      result.info.postgres_server = redactUrl(base);
      const problem = await probePostgres(base);
      if (problem) {
        const reason = `PostgreSQL does not answer at ${redactUrl(base)} (${problem}); set MAILROOM_BENCH_PG_URL to run it`;
        context.log(`  [postgres] skipped: ${reason}`);
        result.skipped.push({ case: dialect, reason });
        continue;
      }
    }
    try {
      await body(dialect);
    } catch (err) {
      if (context.signal.aborted) throw err;
      context.log(`  [${dialect}] FAILED: ${message(err)}`);
      result.failed.push({ case: dialect, error: message(err) });
    }
  }
}

/** A fresh, empty database of `dialect` (dropped or removed with `scope` / the run's work directory). */
export async function freshDatabase(context: SuiteContext, scope: Scope, dialect: Dialect, name: string): Promise<BenchDatabase> {
  const database = dialect === 'postgres' ? await createPostgresDatabase(postgresBaseUrl(), scope) : createSqliteDatabase(context.workDir, `${name}-${Date.now()}`);
  context.log(`  [${dialect}] database ${database.label}`);
  return database;
}
