import { randomUUID } from 'node:crypto';
import { sql, type OperandExpression, type QueryCreator, type UpdateQueryBuilder } from 'kysely';
import { afterCommit } from '../db/commit-hooks.js';
import type { Kysely } from 'kysely';
import type { DialectInfo } from '../db/dialect.js';
import { insertRows, preparedQuery, type Param } from '../db/prepared.js';
import { deleteWorkspaceBatch } from '../db/purge.js';
import { tablesOf, type Work } from '../db/tables.js';
import type { Clock } from '../lib/clock.js';
import type { QueueReading } from '../lib/metrics.js';
import { newId } from '../lib/ids.js';
import type { JobState, JobTable, QueueTables } from './job.table.js';

/** The queue's own view of a handle: only `jobs`. */
type Jobs = Kysely<QueueTables>;

/** Claims per queue beyond which a job is given up (dead), unless the enqueuer says otherwise. */
export const DEFAULT_MAX_ATTEMPTS = 25;
/** Longest error text kept on a job row. */
const MAX_ERROR_LENGTH = 2000;
/** Rows per INSERT in `enqueueMany`. */
const ENQUEUE_BATCH = 500;
/** A claim reads this many ranked candidates per job it may take, plus GROUPED_SCAN_MIN (some may be over a cap). */
const GROUPED_SCAN_FACTOR = 4;
const GROUPED_SCAN_MIN = 64;
/** Claims read again when every job they picked was taken by another claim meanwhile. */
const CLAIM_RETRIES = 3;

export interface EnqueueInput {
  queue: string;
  payload: unknown;
  workspaceId?: string | null;
  /** Earliest time to run (epoch ms); default now. */
  runAt?: number;
  maxAttempts?: number;
  /** Jobs sharing a group key (e.g. one webhook endpoint) can be limited in how many run at once, and cancelled together. */
  groupKey?: string | null;
  /** At most one pending job of the queue has this key: see `enqueueNew`. */
  dedupKey?: string | null;
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
   * Jobs of one group (e.g. one webhook endpoint) running at once, in every process together (counted from the
   * leased rows): a group at its cap is skipped, so its backlog cannot fill the claim. Jobs without a group are
   * not limited. Unset: no limit.
   */
  perGroup?: number;
  /** The same for the jobs of one workspace (jobs without a workspace count as one more workspace). */
  perWorkspace?: number;
}

/** Which jobs `inspect` shows: every one, or those matching each field given. */
export interface JobFilter {
  id?: string;
  queue?: string;
  workspaceId?: string;
  groupKey?: string;
  state?: JobState;
}

/** A job as `inspect` shows it: where it stands, not how the queue keeps it (the payload is parsed). */
export interface JobView<P = unknown> {
  id: string;
  queue: string;
  workspaceId: string | null;
  groupKey: string | null;
  payload: P;
  /** `pending` until it succeeds (and is removed) or is given up (`dead`). */
  state: JobState;
  /** Claims so far, an expired lease counting as one. */
  attempts: number;
  maxAttempts: number;
  /** When it may next be claimed; while leased, when the lease runs out. */
  runAt: number;
  /** The current claim's token; null while no worker holds it. */
  leaseToken: string | null;
  lastError: string | null;
}

export interface Queue {
  /** Add a job inside the caller's transaction (or on its own when given the root db). */
  enqueue(trx: Work, input: EnqueueInput): Promise<string>;
  /** Add several jobs in one statement (same rules as `enqueue`); their ids, in order. */
  enqueueMany(trx: Work, inputs: readonly EnqueueInput[]): Promise<string[]>;
  /**
   * Add the jobs whose `dedupKey` no pending job of their queue has yet (the others are left out, whoever wrote the
   * pending one, in any process); the ids of those added. Jobs without a key are always added.
   */
  enqueueNew(trx: Work, inputs: readonly EnqueueInput[]): Promise<string[]>;
  /** Make the pending job of `queue` with `dedupKey` due now, unless a worker holds it; false when there was none to move. */
  hurry(trx: Work, queue: string, dedupKey: string): Promise<boolean>;
  /** Lease up to `limit` due jobs of one queue; each stays invisible to others until its lease expires. */
  claim<P = unknown>(queue: string, limit: number, options?: ClaimOptions): Promise<ClaimedJob<P>[]>;
  /** Remove every job of a group that is not dead, leased ones included (their holders lose the lease); the number removed. */
  cancelGroup(trx: Work, queue: string, groupKey: string): Promise<number>;
  /** Remove one job that is not dead, leased or not (its holder loses the lease); false when there was none. */
  cancel(trx: Work, id: string): Promise<boolean>;
  /** Move a job that is not dead to `runAt`, dropping any lease (its holder loses it); false when there was none. */
  reschedule(trx: Work, id: string, runAt: number): Promise<boolean>;
  /** Extend a held lease; false when the lease was lost (another worker took the job over). */
  renew(job: ClaimedJob<unknown>): Promise<boolean>;
  /** The job succeeded: remove it. False when the lease was lost meanwhile. */
  complete(job: ClaimedJob<unknown>, trx?: Work): Promise<boolean>;
  /** Try again after `delayMs` (transient failure). */
  retry(job: ClaimedJob<unknown>, error: string, delayMs: number, trx?: Work): Promise<boolean>;
  /** Give up for good; the row stays as `dead` with its last error. */
  bury(job: ClaimedJob<unknown>, error: string, trx?: Work): Promise<boolean>;
  /** Hand a job back untouched (shutdown before it started): runnable now, the claim not counted. */
  release(job: ClaimedJob<unknown>): Promise<boolean>;
  /**
   * Hand back a job still running when its worker must stop (after its handler was aborted and given time to
   * settle): due now for another worker, its claim counted and marked interrupted, as if its lease had run out.
   * False when the lease was no longer this claim's.
   */
  abandon(job: ClaimedJob<unknown>): Promise<boolean>;
  /**
   * Touch a claimed job while its lease is still this claim's (with `liveAfter`: and runs past that time): false
   * means the lease was lost, and whatever the claim was about to do must not happen. The UPDATE locks the job row,
   * so a concurrent claim, cancel or reschedule waits for (PostgreSQL) or is serialized with (SQLite) `work`.
   */
  holdLease(work: Work, job: ClaimedJob<unknown>, options?: { liveAfter?: number }): Promise<boolean>;
  /**
   * `holdLease` as a part of another store's prepared statement (a writable CTE, on PostgreSQL), so that a
   * lease-guarded write is one round trip: a row `{ id }` back means the lease held. It reads the statement's
   * parameters `jobId`, `leaseToken`, `now` and, when given, `liveAfter`.
   */
  leaseHoldPart<DB>(qc: QueryCreator<DB>, p: Param): LeaseHold<DB>;
  /**
   * Several jobs succeeded: remove them in one statement, each only while its lease is still held (a job taken
   * over meanwhile stays with its new holder).
   */
  completeAll(work: Work, jobs: readonly ClaimedJob<unknown>[]): Promise<void>;
  /** One batch of a deleted workspace's jobs, pending, leased or dead (at most `limit`); 0 once none is left. */
  purgeWorkspaceBatch(work: Work, workspaceId: string, limit: number): Promise<number>;
  /** Jobs of `queue` not yet done (leased ones included, not the dead) of a workspace, or of one group of it. */
  countPending(work: Work, queue: string, workspaceId: string, groupKey?: string): Promise<number>;
  /** The payloads of the jobs of `queue` not yet done (leased ones included, not the dead) of one group of a workspace. */
  pendingPayloads<P>(work: Work, queue: string, workspaceId: string, groupKey: string): Promise<P[]>;
  /**
   * The jobs matching `filter`, dead ones included, in id order: for looking at the queue (operators, tests), never
   * for running jobs (that is `claim`). Reads in `work`, so an open transaction sees its own enqueued jobs.
   */
  inspect<P = unknown>(work: Work, filter: JobFilter): Promise<JobView<P>[]>;
  /** Where each named queue stands (metrics at scrape time): two bounded reads per queue on the claim index. */
  stats(queues: readonly string[]): Promise<QueueStats[]>;
  /**
   * Retention: delete up to `limit` dead jobs of these queues given up before `cutoff` (walked on the claim index:
   * a dead job's `run_at` is its last lease's end). The number deleted; fewer than `limit` means none is left.
   */
  deleteDeadOlderThan(work: Work, queues: readonly string[], cutoff: number, limit: number): Promise<number>;
}

/** Where one queue stands (metrics): the counts stop at STATS_CAP, so a read is bounded however long the queue. */
export type QueueStats = QueueReading;

/** Rows a `stats` count reads at most, per queue and state. */
export const STATS_CAP = 10_000;

/** What `leaseHoldPart` gives a store's `with(…)`: its own tables stay the store's, the part names only `jobs`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the tables the update names are the queue's, not the caller's
export type LeaseHold<DB> = UpdateQueryBuilder<DB, any, any, { id: string }>;

/** The parameters of a lease hold, as `leaseHoldPart` reads them. */
export type LeaseHoldParams = { jobId: string; leaseToken: string; now: number; liveAfter?: number | undefined };

/** The job row, touched if the lease is still this claim's (and, with `liveAfter`, has not run out). */
function leaseUpdate(qc: Pick<QueryCreator<QueueTables>, 'updateTable'>, p: Param) {
  let update = qc.updateTable('jobs').set({ updated_at: p<number>('now') }).where('id', '=', p<string>('jobId')).where('lease_token', '=', p<string>('leaseToken'));
  if (p.has('liveAfter')) update = update.where('run_at', '>', p<number>('liveAfter'));
  return update.returning('id');
}
/** A delivery step's lease check (prepared: see db/prepared.ts); a row back means the lease is still held. */
const holdLeaseQuery = preparedQuery<LeaseHoldParams, { id: string }, QueueTables>((db, p) => leaseUpdate(db, p));

export interface QueueDeps {
  /** The pool: claims, renewals and releases run on it; everything else in the caller's handle. */
  work: Work;
  dialect: DialectInfo;
  clock: Clock;
  leaseMs: number;
  /** Called after a transaction that enqueued on `queue` commits (wakes the workers; services.ts). */
  wake?: (queue: string) => void;
  /**
   * The tenancy store's part: the ids of workspaces whose jobs wait (suspended, being deleted). A claim passes their
   * jobs over, so they stay queued, untouched, and run once the workspace is active again.
   */
  heldWorkspaces?: HeldWorkspacesPart;
}

/** A select of workspace ids, built by their owner over its own table, for a claim's `not in`. */
export type HeldWorkspacesPart = (handle: Parameters<typeof tablesOf>[0]) => OperandExpression<string>;

function toView<P>(row: JobTable): JobView<P> {
  return {
    id: row.id,
    queue: row.queue,
    workspaceId: row.workspace_id,
    groupKey: row.group_key,
    payload: JSON.parse(row.payload) as P,
    state: row.state,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    runAt: row.run_at,
    leaseToken: row.lease_token,
    lastError: row.last_error,
  };
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
const completeQuery = preparedQuery<{ id: string; leaseToken: string }, { id: string }, QueueTables>((db, p) =>
  db.deleteFrom('jobs').where('id', '=', p<string>('id')).where('lease_token', '=', p<string>('leaseToken')).returning('id'),
);

const truncate = (text: string): string => (text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH)}…` : text);

/** Leased jobs (lease not expired) of a queue, per workspace and per group: what runs now, in every process. */
interface Running {
  workspaces: Map<string | null, number>;
  groups: Map<string, number>;
}

async function runningCounts(trx: Jobs, queue: string, now: number, options: ClaimOptions): Promise<Running> {
  const running: Running = { workspaces: new Map(), groups: new Map() };
  if (options.perGroup === undefined && options.perWorkspace === undefined) return running;
  const rows = await trx
    .selectFrom('jobs')
    .select(['workspace_id', 'group_key', (eb) => eb.fn.countAll<number | string>().as('n')])
    .where('queue', '=', queue)
    .where('lease_token', 'is not', null)
    .where('state', '=', 'pending')
    .where('run_at', '>', now)
    .groupBy(['workspace_id', 'group_key'])
    .execute();
  for (const row of rows) {
    const n = Number(row.n);
    running.workspaces.set(row.workspace_id, (running.workspaces.get(row.workspace_id) ?? 0) + n);
    if (row.group_key !== null) running.groups.set(row.group_key, (running.groups.get(row.group_key) ?? 0) + n);
  }
  return running;
}

interface Candidate {
  id: string;
  workspace_id: string | null;
  group_key: string | null;
}

/**
 * The due jobs a claim chooses from, in the order it takes them: each workspace's first job, then each one's
 * second, and so on (arrival order only within a workspace); inside a workspace its groups take turns the same way.
 * Each workspace offers at most what its cap or the claim could take, each group at most its cap.
 */
async function dueCandidates(trx: Jobs, queue: string, limit: number, now: number, options: ClaimOptions, held: HeldWorkspacesPart | undefined): Promise<Candidate[]> {
  const perWorkspace = Math.min(limit, options.perWorkspace ?? limit);
  const due = trx
    .selectFrom('jobs')
    .select(['id', 'workspace_id', 'group_key', 'run_at', sql<number>`row_number() over (partition by workspace_id, group_key order by run_at, id)`.as('group_rank')])
    .where('queue', '=', queue)
    .where('state', '=', 'pending')
    .where('run_at', '<=', now)
    // A held workspace's jobs are not candidates (a job of no workspace never is held).
    .$if(held !== undefined, (qb) => qb.where((eb) => eb.or([eb('workspace_id', 'is', null), eb('workspace_id', 'not in', held!(trx))])));
  const inGroup = trx
    .selectFrom(due.as('due'))
    .select(['id', 'workspace_id', 'group_key', 'run_at', sql<number>`row_number() over (partition by workspace_id order by group_rank, run_at, id)`.as('turn')])
    .$if(options.perGroup !== undefined, (qb) => qb.where((eb) => eb.or([eb('group_key', 'is', null), eb('group_rank', '<=', options.perGroup!)])));
  return trx
    .selectFrom(inGroup.as('ranked'))
    .select(['id', 'workspace_id', 'group_key'])
    .where('turn', '<=', perWorkspace)
    .orderBy('turn')
    .orderBy('run_at')
    .orderBy('id')
    // Room for what full groups and workspaces leave out of this list (pickFairly skips them).
    .limit(limit * GROUPED_SCAN_FACTOR + GROUPED_SCAN_MIN)
    .execute();
}

/** The candidates this claim takes, in their order, while their workspace and group have room. */
function pickFairly(candidates: readonly Candidate[], running: Running, limit: number, options: ClaimOptions): string[] {
  const picked: string[] = [];
  const workspaces = new Map(running.workspaces);
  const groups = new Map(running.groups);
  for (const c of candidates) {
    if (picked.length >= limit) break;
    const inWorkspace = workspaces.get(c.workspace_id) ?? 0;
    if (options.perWorkspace !== undefined && inWorkspace >= options.perWorkspace) continue;
    const inGroup = c.group_key === null ? 0 : groups.get(c.group_key) ?? 0;
    if (options.perGroup !== undefined && c.group_key !== null && inGroup >= options.perGroup) continue;
    picked.push(c.id);
    workspaces.set(c.workspace_id, inWorkspace + 1);
    if (c.group_key !== null) groups.set(c.group_key, inGroup + 1);
  }
  return picked;
}

/**
 * The durable job queue shared by every worker process. A claimed job's `run_at` is its lease expiry,
 * so one index serves both "due" and "lease expired" jobs. A claim takes due jobs round-robin across
 * workspaces (and groups within one), within caps counted from the leased rows of every process. On
 * PostgreSQL claims of a queue take turns under an advisory lock and pass over rows held by others
 * (`FOR UPDATE SKIP LOCKED`); SQLite serves one process. A claim's UPDATE takes only rows still due, so a
 * job is never leased twice.
 */
export function createQueue({ work, dialect, clock, leaseMs, wake, heldWorkspaces }: QueueDeps): Queue {
  const db = tablesOf<QueueTables>(work);
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
      dedup_key: input.dedupKey ?? null,
      created_at: now,
      updated_at: now,
    };
  }

  return {
    async enqueue(work, input) {
      const trx = tablesOf<QueueTables>(work);
      const values = row(input, clock.now());
      await insertRows(tablesOf<QueueTables>(trx), 'jobs', [values]);
      if (wake) await afterCommit(trx, () => wake(input.queue));
      return values.id;
    },

    async enqueueMany(work, inputs) {
      const trx = tablesOf<QueueTables>(work);
      if (inputs.length === 0) return [];
      const now = clock.now();
      const rows = inputs.map((input) => row(input, now));
      // Bound the statement's parameters (SQLite allows 32766, PostgreSQL 65535; 15 columns a row).
      for (let i = 0; i < rows.length; i += ENQUEUE_BATCH) await insertRows(trx, 'jobs', rows.slice(i, i + ENQUEUE_BATCH));
      if (wake) for (const name of new Set(inputs.map((input) => input.queue))) await afterCommit(trx, () => wake(name));
      return rows.map((r) => r.id);
    },

    async enqueueNew(work, inputs) {
      const trx = tablesOf<QueueTables>(work);
      if (inputs.length === 0) return [];
      const now = clock.now();
      const rows = inputs.map((input) => row(input, now));
      const ids: string[] = [];
      for (let i = 0; i < rows.length; i += ENQUEUE_BATCH) {
        // Against the partial unique index on (queue, dedup_key) of pending jobs: a duplicate is skipped, not an error.
        const added = await trx.insertInto('jobs').values(rows.slice(i, i + ENQUEUE_BATCH)).onConflict((oc) => oc.doNothing()).returning('id').execute();
        ids.push(...added.map((r) => r.id));
      }
      if (wake && ids.length > 0) for (const name of new Set(inputs.map((input) => input.queue))) await afterCommit(trx, () => wake(name));
      return ids;
    },

    async hurry(work, queue, dedupKey) {
      const trx = tablesOf<QueueTables>(work);
      const now = clock.now();
      const result = await trx
        .updateTable('jobs')
        .set({ run_at: now, updated_at: now })
        .where('queue', '=', queue)
        .where('dedup_key', '=', dedupKey)
        .where('state', '=', 'pending')
        .where('lease_token', 'is', null)
        .where('run_at', '>', now)
        .executeTakeFirst();
      const moved = result.numUpdatedRows > 0n;
      if (wake && moved) await afterCommit(trx, () => wake(queue));
      return moved;
    },

    async cancelGroup(work, queue, groupKey) {
      const trx = tablesOf<QueueTables>(work);
      const result = await trx.deleteFrom('jobs').where('queue', '=', queue).where('group_key', '=', groupKey).where('state', '=', 'pending').executeTakeFirst();
      return Number(result.numDeletedRows);
    },

    async cancel(work, id) {
      const trx = tablesOf<QueueTables>(work);
      const result = await trx.deleteFrom('jobs').where('id', '=', id).where('state', '=', 'pending').executeTakeFirst();
      return result.numDeletedRows > 0n;
    },

    async reschedule(work, id, runAt) {
      const trx = tablesOf<QueueTables>(work);
      const result = await trx
        .updateTable('jobs')
        .set({ run_at: runAt, lease_token: null, updated_at: clock.now() })
        .where('id', '=', id)
        .where('state', '=', 'pending')
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },

    async claim<P>(queue: string, limit: number, options: ClaimOptions = {}) {
      if (limit <= 0) return [];
      const take = async (trx: Jobs) => {
        const now = clock.now();
        const picked = pickFairly(await dueCandidates(trx, queue, limit, now, options, heldWorkspaces), await runningCounts(trx, queue, now, options), limit, options);
        if (picked.length === 0) return { picked: 0, rows: [] };
        // A row another transaction holds (a cancel, a settle) is passed over, not waited for: the UPDATE takes the
        // picks through a SKIP LOCKED subquery, in the same statement.
        const free = dialect.supportsSkipLocked ? trx.selectFrom('jobs as held').select('held.id').where('held.id', 'in', picked).forUpdate().skipLocked() : picked;
        const rows = await trx
          .updateTable('jobs')
          .set({
            lease_token: randomUUID(),
            run_at: now + leaseMs,
            attempts: sql<number>`attempts + 1`,
            // SET expressions read the row as it was: a non-null token means an earlier lease ran out. A
            // released claim (token cleared, flag untouched) passes the flag on: the run it interrupted is not undone.
            interrupted: sql<number>`case when lease_token is null then interrupted else 1 end`,
            updated_at: now,
          })
          // Still due: a cancel, reschedule or settle between the read and this write wins.
          .where('id', 'in', free)
          .where('state', '=', 'pending')
          .where('run_at', '<=', now)
          .returningAll()
          .execute();
        // PostgreSQL's claims take turns under the lock, so a pick the UPDATE missed was held or settled by another
        // transaction, not taken by a claim: reading again would pick it again.
        return { picked: dialect.sharedByProcesses ? rows.length : picked.length, rows };
      };
      // PostgreSQL: claims of one queue take turns across processes, so the caps are counted and filled with no other
      // claim between. SQLite serves one process (one connection): no lock, and a write transaction held across
      // statements would stall other connections of the process. Either way the UPDATE takes only rows still due,
      // so two claims never lease one job.
      const once = () =>
        dialect.sharedByProcesses
          ? db.transaction().execute(async (trx) => {
              await sql`select pg_advisory_xact_lock(hashtext(${`mailroom.jobs.claim:${queue}`}))`.execute(trx);
              return take(trx);
            })
          : take(db);
      let { picked, rows } = await once();
      // Every pick taken by another claim between the read and the write (SQLite, several processes): read again,
      // rather than answer "nothing due" while there is.
      for (let retry = 0; retry < CLAIM_RETRIES && picked > 0 && rows.length === 0; retry += 1) ({ picked, rows } = await once());
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

    async complete(job, work?: Work) {
      const trx = work ? tablesOf<QueueTables>(work) : db;
      return (await completeQuery(trx, { id: job.id, leaseToken: job.leaseToken })).length > 0;
    },

    async retry(job, error, delayMs, work?: Work) {
      const trx = work ? tablesOf<QueueTables>(work) : db;
      const now = clock.now();
      const result = await trx
        .updateTable('jobs')
        .set({ run_at: now + Math.max(0, delayMs), lease_token: null, interrupted: 0, last_error: truncate(error), updated_at: now })
        .where('id', '=', job.id)
        .where('lease_token', '=', job.leaseToken)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },

    async bury(job, error, work?: Work) {
      const trx = work ? tablesOf<QueueTables>(work) : db;
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

    async abandon(job) {
      const now = clock.now();
      const result = await db
        .updateTable('jobs')
        .set({ run_at: now, lease_token: null, interrupted: 1, updated_at: now })
        .where('id', '=', job.id)
        .where('lease_token', '=', job.leaseToken)
        .where('state', '=', 'pending')
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },

    async holdLease(work, job, options = {}) {
      const params = { jobId: job.id, leaseToken: job.leaseToken, now: clock.now(), liveAfter: options.liveAfter };
      return (await holdLeaseQuery(tablesOf<QueueTables>(work), params)).length > 0;
    },

    leaseHoldPart<DB>(qc: QueryCreator<DB>, p: Param): LeaseHold<DB> {
      // The caller's statement is typed over its own tables; this part is built over the queue's (see LeaseHold).
      return leaseUpdate(qc as unknown as QueryCreator<QueueTables>, p) as unknown as LeaseHold<DB>;
    },

    async completeAll(work, jobs) {
      if (jobs.length === 0) return;
      await tablesOf<QueueTables>(work)
        .deleteFrom('jobs')
        .where((eb) => eb.or(jobs.map((job) => eb.and([eb('id', '=', job.id), eb('lease_token', '=', job.leaseToken)]))))
        .execute();
    },

    purgeWorkspaceBatch: (work, workspaceId, limit) => deleteWorkspaceBatch(tablesOf<QueueTables>(work), 'jobs', 'id', workspaceId, limit),

    async countPending(work, queue, workspaceId, groupKey) {
      let query = tablesOf<QueueTables>(work)
        .selectFrom('jobs')
        .select((eb) => eb.fn.countAll<number | string>().as('n'))
        .where('queue', '=', queue)
        .where('workspace_id', '=', workspaceId)
        .where('state', '=', 'pending');
      if (groupKey !== undefined) query = query.where('group_key', '=', groupKey);
      return Number((await query.executeTakeFirstOrThrow()).n);
    },

    async pendingPayloads<P>(work: Work, queue: string, workspaceId: string, groupKey: string) {
      const rows = await tablesOf<QueueTables>(work)
        .selectFrom('jobs')
        .select('payload')
        .where('queue', '=', queue)
        .where('group_key', '=', groupKey)
        .where('workspace_id', '=', workspaceId)
        .where('state', '=', 'pending')
        .execute();
      return rows.map((r) => JSON.parse(r.payload) as P);
    },

    async deleteDeadOlderThan(work, queues, cutoff, limit) {
      if (queues.length === 0) return 0;
      const jobs = tablesOf<QueueTables>(work);
      let due = jobs
        .selectFrom('jobs')
        .select('id')
        .where('queue', 'in', queues)
        .where('state', '=', 'dead')
        .where('run_at', '<', cutoff)
        .where('updated_at', '<', cutoff)
        .limit(limit);
      if (dialect.supportsSkipLocked) due = due.forUpdate().skipLocked();
      return Number((await jobs.deleteFrom('jobs').where('id', 'in', due).executeTakeFirst()).numDeletedRows);
    },

    async inspect<P>(work: Work, filter: JobFilter) {
      let query = tablesOf<QueueTables>(work).selectFrom('jobs').selectAll().orderBy('id');
      if (filter.id !== undefined) query = query.where('id', '=', filter.id);
      if (filter.queue !== undefined) query = query.where('queue', '=', filter.queue);
      if (filter.workspaceId !== undefined) query = query.where('workspace_id', '=', filter.workspaceId);
      if (filter.groupKey !== undefined) query = query.where('group_key', '=', filter.groupKey);
      if (filter.state !== undefined) query = query.where('state', '=', filter.state);
      return (await query.execute()).map((row) => toView<P>(row));
    },

    async stats(queues) {
      const out: QueueStats[] = [];
      for (const queue of queues) out.push(await queueStats(db, queue, clock.now()));
      return out;
    },
  };
}

/**
 * One queue's standing from at most STATS_CAP pending jobs, earliest first (so the due ones are counted first, and
 * the earliest is the oldest due one when it is due), and at most STATS_CAP dead ones: index range scans of
 * `jobs_claim_idx` (queue, state, run_at), never the whole table.
 */
async function queueStats(db: Jobs, queue: string, now: number): Promise<QueueStats> {
  const pendingWindow = db.selectFrom('jobs').select(['run_at', 'lease_token']).where('queue', '=', queue).where('state', '=', 'pending').orderBy('run_at').limit(STATS_CAP);
  const pending = await db
    .selectFrom(pendingWindow.as('p'))
    .select((eb) => [
      eb.fn.countAll<number | string>().as('pending'),
      eb.fn.count<number | string>(eb.case().when('run_at', '<=', now).then(sql.lit(1)).end()).as('due'),
      eb.fn.count<number | string>(eb.case().when(eb.and([eb('run_at', '<=', now), eb('lease_token', 'is not', null)])).then(sql.lit(1)).end()).as('expired'),
      eb.fn.min<number | string | null>('run_at').as('earliest'),
    ])
    .executeTakeFirstOrThrow();
  const deadWindow = db.selectFrom('jobs').select('id').where('queue', '=', queue).where('state', '=', 'dead').limit(STATS_CAP);
  const dead = await db.selectFrom(deadWindow.as('d')).select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow();
  const earliest = pending.earliest === null ? null : Number(pending.earliest);
  return {
    queue,
    pending: Number(pending.pending),
    due: Number(pending.due),
    oldestDueSeconds: earliest !== null && earliest <= now ? (now - earliest) / 1000 : 0,
    expiredLeases: Number(pending.expired),
    dead: Number(dead.n),
  };
}
