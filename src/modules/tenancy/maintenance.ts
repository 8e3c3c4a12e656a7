import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import { LOGIN_FAILURE_WINDOW_MS, SESSION_IDLE_MS } from './auth.service.js';
import type { TenancyStore } from './tenancy.store.js';

const SWEEP_INTERVAL_MS = 10 * 60_000;
/** Sessions are kept this long after they end, so a late request still gets "expired", not "unknown". */
const SESSION_RETENTION_MS = 7 * 86_400_000;
/** Rate-limit windows are a minute or so; their counters are useless an hour later. */
const REQUEST_COUNT_RETENTION_MS = 60 * 60_000;

export interface Maintenance {
  /** Delete ended sessions and stale login failures once. */
  sweep(): Promise<{ sessions: number; loginFailures: number; requestCounts: number }>;
  start(): void;
  stop(): void;
}

/** Housekeeping of the tenancy tables, run by the worker role. */
export function createMaintenance({ work, store, clock, logger }: { work: Work; store: Pick<TenancyStore, 'deleteSessionsEndedBefore' | 'deleteLoginFailuresBefore' | 'deleteRequestCountsBefore'>; clock: Clock; logger: Logger }): Maintenance {
  let timer: NodeJS.Timeout | undefined;
  async function sweep() {
    const now = clock.now();
    const cutoff = now - SESSION_RETENTION_MS;
    const sessions = await store.deleteSessionsEndedBefore(work, cutoff, SESSION_IDLE_MS);
    const loginFailures = await store.deleteLoginFailuresBefore(work, now - LOGIN_FAILURE_WINDOW_MS);
    const counts = await store.deleteRequestCountsBefore(work, now - REQUEST_COUNT_RETENTION_MS);
    return { sessions, loginFailures, requestCounts: Number(counts.numDeletedRows) };
  }
  return {
    sweep,
    start() {
      timer = setInterval(() => {
        sweep().then(
          (counts) => logger.debug(counts, 'maintenance sweep'),
          (err: unknown) => logger.warn({ err }, 'maintenance sweep failed'),
        );
      }, SWEEP_INTERVAL_MS);
      timer.unref();
    },
    stop() {
      clearInterval(timer);
    },
  };
}
