import type { Db } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import { LOGIN_FAILURE_WINDOW_MS, SESSION_IDLE_MS } from './auth.service.js';
import { tenancyRepository as repo } from './tenancy.repository.js';

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
export function createMaintenance({ db, clock, logger }: { db: Db; clock: Clock; logger: Logger }): Maintenance {
  let timer: NodeJS.Timeout | undefined;
  async function sweep() {
    const now = clock.now();
    const cutoff = now - SESSION_RETENTION_MS;
    const sessions = await db
      .deleteFrom('sessions')
      .where((eb) =>
        eb.or([eb('expires_at', '<', cutoff), eb('last_seen_at', '<', cutoff - SESSION_IDLE_MS), eb('revoked_at', '<', cutoff)]),
      )
      .executeTakeFirst();
    const failures = await db.deleteFrom('login_failures').where('failed_at', '<', now - LOGIN_FAILURE_WINDOW_MS).executeTakeFirst();
    const counts = await repo.deleteRequestCountsBefore(db, now - REQUEST_COUNT_RETENTION_MS);
    return { sessions: Number(sessions.numDeletedRows), loginFailures: Number(failures.numDeletedRows), requestCounts: Number(counts.numDeletedRows) };
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
