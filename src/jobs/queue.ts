import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterCommit } from '../db/commit-hooks.js';
import type { Db } from '../db/database.js';
import type { DialectInfo } from '../db/dialect.js';
import { insertRows, preparedQuery } from '../db/prepared.js';
import type { Clock } from '../lib/clock.js';
import { newId } from '../lib/ids.js';
import type { JobTable } from './job.table.js';

/** Claims per queue beyond which a job is given up (dead), unless the enqueuer says otherwise. */
export const DEFAULT_MAX_ATTEMPTS = 25;
/** Longest error text kept on a job row. */
const MAX_ERROR_LENGTH = 2000;
/** Rows per INSERT in `enqueueMany`. */
const ENQUEUE_BATCH = 500;
/** A grouped claim ranks this many due candidates per job it may take (at least GROUPED_SCAN_MIN). */
const GROUPED_SCAN_FACTOR = 4;
const GROUPED_SCAN_MIN = 64;

export interface EnqueueInput {
  queue: string;
  payload: unknown;
  workspaceId?: string | null;
  /** Earliest time to run (epoch ms); default now. */
  runAt?: number;
  maxAttempts?: number;
  /** Jobs sharing a group key (e.g. one webhook endpoint) can be limited in how many run at once, and cancelled together. */
  groupKey?: string | null;
}

export interface ClaimedJob<P = unknown> {
  id: string;
  queue: string;
  workspaceId: string | null;
  payload: P;
  /** This claim's number, 1 for the first. */
  attempt: number;
  maxAttempts: number;
  /** The previous claim's lease expired without an outcome: its worker died or stalled mid-job. */
  interrupted: boolean;
  leaseToken: string;
  createdAt: number;
  groupKey: string | null;
}

export interface ClaimOptions {
  /**
   * Take at most `max` jobs of one group, counting the `running` ones (this worker's, by group): a
   * group at `max` is skipped, so its backlog cannot fill the claim. Jobs without a group are not limited.
   */
  groups?: { max: number; running: ReadonlyMap<string, number> };
}

export interface Queue {
  /** Add a job inside the caller's transaction (or on its own when given the root db). */
  enqueue(trx: Db, input: EnqueueInput): Promise<string>;
  /** Add several jobs in one statement (same rules as `enqueue`); their ids, in order. */
  enqueueMany(trx: Db, inputs: readonly EnqueueInput[]): Promise<string[]>;
  /** Lease up to `limit` due jobs of one queue; each stays invisible to others until its lease expires. */
  claim<P = unknown>(queue: string, limit: number, options?: ClaimOptions): Promise<ClaimedJob<P>[]>;
  /** Remove every job of a group that is not dead, leased ones included (their holders lose the lease); the number removed. */
  cancelGroup(trx: Db, queue: string, groupKey: string): Promise<number>;
  /** Remove one job that is not dead, leased or not (its holder loses the lease); false when there was none. */
  cancel(trx: Db, id: string): Promise<boolean>;
  /** Move a job that is not dead to `runAt`, dropping any lease (its holder loses it); false when there was none. */
  reschedule(trx: Db, id: string, runAt: number): Promise<boolean>;
  /** Extend a held lease; false when the lease was lost (another worker took the job over). */
  renew(job: ClaimedJob<unknown>): Promise<boolean>;
  /** The job succeeded: remove it. False when the lease was lost meanwhile. */
  complete(job: ClaimedJob<unknown>, trx?: Db): Promise<boolean>;
  /** Try again after `delayMs` (transient failure). */
  retry(job: ClaimedJob<unknown>, error: string, delayMs: number, trx?: Db): Promise<boolean>;
  /** Give up for good; the row stays as `dead` with its last error. */
  bury(job: ClaimedJob<unknown>, error: string, trx?: Db): Promise<boolean>;
  /** Hand a job back untouched (shutdown before it started): runnable now, the claim not counted. */
  release(job: ClaimedJob<unknown>): Promise<boolean>;
}

export interface QueueDeps {
  db: Db;
  dialect: DialectInfo;
  clock: Clock;
  leaseMs: number;
  /** Called after a transaction that enqueued on `queue` commits (wakes the workers; services.ts). */
  wake?: (queue: string) => void;
}

function toClaimed<P>(row: JobTable): ClaimedJob<P> {
  return {
    id: row.id,
    queue: row.queue,
    workspaceId: row.workspace_id,
    payload: JSON.parse(row.payload) as P,
    attempt: row.attempts,
    maxAttempts: row.max_attempts,
    interrupted: row.interrupted === 1,
    leaseToken: row.lease_token ?? '',
    createdAt: row.created_at,
    groupKey: row.group_key,
  };
}

/** Every job ends here (prepared: see db/prepared.ts); a row back means the lease was still held. */
const completeQuery = preparedQuery<{ id: string; leaseToken: string }, { id: string }>((db, p) =>
  db.deleteFrom('jobs').where('id', '=', p<string>('id')).where('lease_token', '=', p<string>('leaseToken')).returning('id'),
);

const truncate = (text: string): string => (text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH)}…` : text);

/**
 * The durable job queue shared by every worker process. A claimed job's `run_at` is its lease expiry,
 * so one index serves both "due" and "lease expired" jobs. PostgreSQL claims with
 * `FOR UPDATE SKIP LOCKED` (many workers, no blocking, no double claims); SQLite has one writer and the
 * claim is a single UPDATE statement, which is atomic there.
 */
export function createQueue({ db, dialect, clock, leaseMs, wake }: QueueDeps): Queue {
  function row(input: EnqueueInput, now: number): JobTable {
    return {
      id: newId('job'),
      queue: input.queue,
      workspace_id: input.workspaceId ?? null,
      payload: JSON.stringify(input.payload),
      state: 'pending',
      attempts: 0,
      max_attempts: input.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
      run_at: input.runAt ?? now,
      lease_token: null,
      interrupted: 0,
      last_error: null,
      group_key: input.groupKey ?? null,
      created_at: now,
      updated_at: now,
    };
  }

  return {
    async enqueue(trx, input) {
      const values = row(input, clock.now());
      await insertRows(trx, 'jobs', [values]);
      if (wake) await afterCommit(trx, () => wake(input.queue));
      return values.id;
    },

    async enqueueMany(trx, inputs) {
      if (inputs.length === 0) return [];
      const now = clock.now();
      const rows = inputs.map((input) => row(input, now));
      // Bound the statement's parameters (SQLite allows 32766, PostgreSQL 65535; 14 columns a row).
      for (let i = 0; i < rows.length; i += ENQUEUE_BATCH) await insertRows(trx, 'jobs', rows.slice(i, i + ENQUEUE_BATCH));
      if (wake) for (const name of new Set(inputs.map((input) => input.queue))) await afterCommit(trx, () => wake(name));
      return rows.map((r) => r.id);
    },

    async cancelGroup(trx, queue, groupKey) {
      const result = await trx.deleteFrom('jobs').where('queue', '=', queue).where('group_key', '=', groupKey).where('state', '=', 'pending').executeTakeFirst();
      return Number(result.numDeletedRows);
    },

    async cancel(trx, id) {
      const result = await trx.deleteFrom('jobs').where('id', '=', id).where('state', '=', 'pending').executeTakeFirst();
      return result.numDeletedRows > 0n;
    },

    async reschedule(trx, id, runAt) {
      const result = await trx
        .updateTable('jobs')
        .set({ run_at: runAt, lease_token: null, updated_at: clock.now() })
        .where('id', '=', id)
        .where('state', '=', 'pending')
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },

    async claim<P>(queue: string, limit: number, options: ClaimOptions = {}) {
      const now = clock.now();
      const token = randomUUID();
      const groups = options.groups;
      const rows = await db
        .updateTable('jobs')
        .set({
          lease_token: token,
          run_at: now + leaseMs,
          attempts: sql<number>`attempts + 1`,
          // SET expressions read the row as it was: a non-null token means an earlier lease ran out. A
          // released claim (token cleared, flag untouched) passes the flag on: the run it interrupted is not undone.
          interrupted: sql<number>`case when lease_token is null then interrupted else 1 end`,
          updated_at: now,
        })
        .where('id', 'in', (eb) => {
          const due = eb.selectFrom('jobs').where('queue', '=', queue).where('state', '=', 'pending').where('run_at', '<=', now);
          if (!groups) {
            const first = due.select('id').orderBy('run_at').limit(limit);
            return dialect.supportsSkipLocked ? first.forUpdate().skipLocked() : first;
          }
          // Grouped: the earliest due candidates of groups below their limit (rows locked by another
          // claimer skipped), ranked within their group; each group contributes what it has room for.
          const full = [...groups.running].filter(([, n]) => n >= groups.max).map(([group]) => group);
          const partial = [...groups.running].filter(([, n]) => n > 0 && n < groups.max);
          let candidates = due.select(['id', 'group_key', 'run_at']);
          if (full.length > 0) candidates = candidates.where((w) => w.or([w('group_key', 'is', null), w('group_key', 'not in', full)]));
          candidates = candidates.orderBy('run_at').orderBy('id').limit(Math.max(GROUPED_SCAN_MIN, limit * GROUPED_SCAN_FACTOR));
          const locked = dialect.supportsSkipLocked ? candidates.forUpdate().skipLocked() : candidates;
          const int = (n: number) => sql<number>`cast(${n} as integer)`;
          const room =
            partial.length === 0
              ? int(groups.max)
              : sql<number>`case group_key ${sql.join(partial.map(([group, n]) => sql`when ${group} then ${int(groups.max - n)}`), sql` `)} else ${int(groups.max)} end`;
          const ranked = eb
            .selectFrom(locked.as('candidate'))
            .select(['id', 'group_key', 'run_at', sql<number>`row_number() over (partition by group_key order by run_at, id)`.as('rank')]);
          return eb
            .selectFrom(ranked.as('ranked'))
            .select('id')
            .where((w) => w.or([w('group_key', 'is', null), w('rank', '<=', room)]))
            .orderBy('run_at')
            .orderBy('id')
            .limit(limit);
        })
        .returningAll()
        .execute();
      return rows.map((row) => toClaimed<P>(row)).sort((a, b) => a.id.localeCompare(b.id));
    },

    async renew(job) {
      const now = clock.now();
      const result = await db
        .updateTable('jobs')
        .set({ run_at: now + leaseMs, updated_at: now })
        .where('id', '=', job.id)
        .where('lease_token', '=', job.leaseToken)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },

    async complete(job, trx = db) {
      return (await completeQuery(trx, { id: job.id, leaseToken: job.leaseToken })).length > 0;
    },

    async retry(job, error, delayMs, trx = db) {
      const now = clock.now();
      const result = await trx
        .updateTable('jobs')
        .set({ run_at: now + Math.max(0, delayMs), lease_token: null, interrupted: 0, last_error: truncate(error), updated_at: now })
        .where('id', '=', job.id)
        .where('lease_token', '=', job.leaseToken)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },

    async bury(job, error, trx = db) {
      const now = clock.now();
      const result = await trx
        .updateTable('jobs')
        .set({ state: 'dead', lease_token: null, last_error: truncate(error), updated_at: now })
        .where('id', '=', job.id)
        .where('lease_token', '=', job.leaseToken)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },

    async release(job) {
      const now = clock.now();
      const result = await db
        .updateTable('jobs')
        .set({ run_at: now, lease_token: null, attempts: sql<number>`attempts - 1`, updated_at: now })
        .where('id', '=', job.id)
        .where('lease_token', '=', job.leaseToken)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },
  };
}
