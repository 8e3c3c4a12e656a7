/**
 * Where and how long searches run. A search is a read whose cost the caller chooses (a dozen prefixes over a large
 * mailbox), so no one workspace's searches may take the event loop, every slot, or unbounded time:
 * - SQLite: on reader threads, each with a read-only connection of its own (better-sqlite3 runs a statement to
 *   its end on the calling thread, which would stall SMTP and HTTP for every tenant);
 * - PostgreSQL: on the pool, in a transaction whose `statement_timeout` is what is left of the search's budget;
 * - both: slots per workspace and in all (fair-gate.ts: waiting searches are granted round-robin across
 *   workspaces), waiting bounded (429 `search_busy`), and a deadline from arrival (503 `search_timeout`).
 */
import { sql } from 'kysely';
import type { DialectInfo } from '../../db/dialect.js';
import type { Work } from '../../db/tables.js';
import { DomainError, rateLimited } from '../../lib/errors.js';
import { createFairGate, GateFull, type Release } from '../../lib/fair-gate.js';
import type { Logger } from '../../lib/logger.js';
import { createThreadPool, type ThreadPool } from '../../lib/thread-pool.js';
import { executeSearch, type SearchAnswer, type SearchStore, type SearchTask } from './search-task.js';
import type { SearchWorkerData } from './search.worker.js';

export interface SearchLimits {
  /** A search's budget from its arrival, waiting included (MAILROOM_SEARCH_TIMEOUT_MS). */
  timeoutMs: number;
  /** SQLite's reader threads (MAILROOM_SEARCH_THREADS); searches at once there are at most this many. */
  threads: number;
  /** Searches running at once in the process (MAILROOM_SEARCH_CONCURRENCY). */
  concurrency: number;
  /** Searches running at once for one workspace (MAILROOM_SEARCH_CONCURRENCY_PER_WORKSPACE). */
  perWorkspace: number;
}

/** Searches one workspace may have waiting for a slot; one more is refused with 429 `search_busy`. */
export const SEARCH_WAITING_PER_WORKSPACE = 4;
/** Searches waiting in all, every workspace together; one more is refused with 429 `search_busy`. */
export const SEARCH_WAITING = 64;
/** What a refused search is told to wait before it tries again. */
const BUSY_RETRY_AFTER_S = 1;
/** PostgreSQL's SQLSTATE for a statement cancelled by `statement_timeout`. */
const PG_QUERY_CANCELED = '57014';

export interface SearchRunner {
  /** The task's answer, under the slots and the deadline; throws `search_busy` (429) or `search_timeout` (503). */
  run(task: SearchTask): Promise<SearchAnswer>;
  /** Stop the reader threads (part of closing the database). */
  close(): Promise<void>;
}

const searchBusy = (full: GateFull): DomainError =>
  rateLimited('search_busy', full.scope === 'key' ? 'too many searches of this workspace are waiting; try again shortly' : 'too many searches are waiting; try again shortly', BUSY_RETRY_AFTER_S);

const searchTimeout = (timeoutMs: number): DomainError =>
  new DomainError(
    'unavailable',
    'search_timeout',
    `the search did not finish within ${timeoutMs} ms; narrow it (longer prefixes, fewer terms, a folder, a date range)`,
    Math.max(1, Math.ceil(timeoutMs / 1000)),
  );

const readerFailed = (): DomainError => new DomainError('unavailable', 'search_unavailable', 'the search could not be run; try again shortly', BUSY_RETRY_AFTER_S);

/** Where searches run: the process's pool, and on SQLite the database file the reader threads open. */
export interface SearchDatabase {
  work: Work;
  dialect: DialectInfo;
  /** SQLite: the database file, or null in memory (no reader threads then). */
  sqliteFile: string | null;
  /** SQLite: how long a reader waits for a lock (the process's own setting). */
  busyTimeoutMs: number;
}

/** SQLite's reader threads, or null where there is no file to open beside the process's connection (in memory). */
function readerPool(database: SearchDatabase, limits: SearchLimits, logger: Logger): ThreadPool<SearchTask, SearchAnswer> | null {
  if (database.sqliteFile === null) return null;
  const workerData: SearchWorkerData = { path: database.sqliteFile, busyTimeoutMs: database.busyTimeoutMs };
  return createThreadPool<SearchTask, SearchAnswer>({
    near: import.meta.url,
    worker: 'search.worker',
    threads: limits.threads,
    tasksPerThread: 1,
    workerData,
    what: 'search',
    logger,
    // Never on the calling thread: a search there would stall every tenant; the caller may try again.
    inProcess: () => Promise.reject(readerFailed()),
  });
}

export function createSearchRunner({ database, store, limits, logger }: { database: SearchDatabase; store: SearchStore; limits: SearchLimits; logger: Logger }): SearchRunner {
  const { work, dialect } = database;
  const pool = dialect.name === 'sqlite' ? readerPool(database, limits, logger) : null;
  // A granted SQLite search always finds a thread of its own: slots are never more than threads.
  const total = pool ? Math.min(limits.concurrency, limits.threads) : limits.concurrency;
  const gate = createFairGate({ total, perKey: limits.perWorkspace, maxWaitingPerKey: SEARCH_WAITING_PER_WORKSPACE, maxWaiting: SEARCH_WAITING });

  /** PostgreSQL: the server cancels the statement at the budget's end, so a slot is never held past it. */
  async function onPostgres(task: SearchTask, budgetMs: number): Promise<SearchAnswer> {
    try {
      return await work.transaction().execute(async (trx) => {
        await sql`set local statement_timeout = ${sql.lit(Math.max(1, Math.ceil(budgetMs)))}`.execute(trx);
        return executeSearch(trx, store, task);
      });
    } catch (err) {
      if ((err as { code?: unknown }).code === PG_QUERY_CANCELED) throw searchTimeout(limits.timeoutMs);
      throw err;
    }
  }

  const execute = (task: SearchTask, budgetMs: number): Promise<SearchAnswer> => {
    if (pool) return pool.run(task);
    return dialect.name === 'postgres' ? onPostgres(task, budgetMs) : executeSearch(work, store, task);
  };

  /** Waits for a slot; a full queue is `search_busy`. */
  async function acquire(workspaceId: string): Promise<Release> {
    try {
      return await gate.acquire(workspaceId);
    } catch (err) {
      throw err instanceof GateFull ? searchBusy(err) : err;
    }
  }

  return {
    async run(task) {
      const deadline = Date.now() + limits.timeoutMs;
      let answered = false;
      let timer: NodeJS.Timeout | undefined;
      const expired = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(searchTimeout(limits.timeoutMs)), limits.timeoutMs);
      });
      // The slot is given back when the work ends, not when the caller is answered: a search that cannot be
      // stopped (SQLite) keeps its thread counted, so abandoned searches never pile up past the slots.
      const work = (async () => {
        const release = await acquire(task.workspaceId);
        try {
          if (answered) throw searchTimeout(limits.timeoutMs);
          return await execute(task, deadline - Date.now());
        } finally {
          release();
        }
      })();
      try {
        return await Promise.race([work, expired]);
      } finally {
        answered = true;
        clearTimeout(timer);
        work.catch(() => undefined);
      }
    },
    async close() {
      await pool?.close();
    },
  };
}
