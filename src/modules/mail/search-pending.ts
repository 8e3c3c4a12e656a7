import { sql } from 'kysely';
import type { DialectInfo } from '../../db/dialect.js';
import type { Work } from '../../db/tables.js';
import type { Logger } from '../../lib/logger.js';

/** How often a serving process merges the pending list (about a second of ingest is what a search scans besides). */
export const SEARCH_PENDING_MERGE_MS = 1000;

/** PostgreSQL's error for a function the connection's role may not run (here: it does not own the index). */
const INSUFFICIENT_PRIVILEGE = '42501';

export interface SearchPendingMerge {
  /**
   * Merge the search index's pending list into the index now, in a statement of its own. The pages merged; null
   * when another process was merging (it skips instead of waiting) or on SQLite, which has no such list.
   */
  mergeOnce(): Promise<number | null>;
  /** Merge every interval until `stop` (one merge at a time; nothing on SQLite). */
  start(): void;
  stop(): Promise<void>;
}

/**
 * PostgreSQL's GIN index of `message_contents.search_document` takes new documents into a pending list and merges that
 * list into the index when it outgrows its limit, inside the insert that outgrew it: ~250 ms, in a transaction that
 * a group of sends or deliveries waits for. The index's limit is raised (migration `search_pending_limit`) and every
 * serving process merges the list on this interval on a connection of its own, so no store waits for a merge. The
 * merge takes turns under an advisory lock that the others skip, so any number of processes cost one merge at a time.
 */
export function createSearchPendingMerge({ work, dialect, logger, intervalMs = SEARCH_PENDING_MERGE_MS }: { work: Work; dialect: Pick<DialectInfo, 'fullText'>; logger: Logger; intervalMs?: number }): SearchPendingMerge {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | null = null;

  async function mergeOnce(): Promise<number | null> {
    if (dialect.fullText !== 'tsvector') return null;
    // One statement, so the transaction-scoped lock ends with it; pages is null when another process holds it.
    const { rows } = await sql<{ pages: string | number | null }>`
      select case when pg_try_advisory_xact_lock(hashtext('mailroom.search.pending'))
        then gin_clean_pending_list('message_contents_search_idx'::regclass) end as pages`.execute(work);
    const pages = rows[0]?.pages;
    return pages === null || pages === undefined ? null : Number(pages);
  }

  function tick(): void {
    if (running) return;
    running = mergeOnce().then(
      (pages) => {
        if (pages) logger.debug({ pages }, 'search index pending list merged');
      },
      (err: unknown) => {
        // A role that does not own the index cannot merge it; the inserts then merge it themselves, as before.
        if ((err as { code?: string }).code === INSUFFICIENT_PRIVILEGE) {
          logger.warn({ err }, 'cannot merge the search index pending list (the database user does not own message_contents); stores will merge it themselves');
          clearInterval(timer);
        } else logger.warn({ err }, 'merging the search index pending list failed');
      },
    ).finally(() => {
      running = null;
    });
  }

  return {
    mergeOnce,
    start() {
      if (dialect.fullText !== 'tsvector' || timer) return;
      timer = setInterval(tick, intervalMs);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
      await running;
    },
  };
}
