import type { GroupCommit } from '../db/group-commit.js';
import { asWork, type Work } from '../db/tables.js';
import type { Logger } from '../lib/logger.js';
import type { Metrics } from '../lib/metrics.js';
import { backoffDelay, type BackoffPolicy } from './backoff.js';
import type { ClaimedJob, Queue } from './queue.js';

/** What a handler decided about one job. */
export type JobOutcome =
  | { type: 'done' }
  /** The handler has already completed, retried or buried the job itself (in its own transaction): nothing left to do. */
  | { type: 'settled' }
  | { type: 'retry'; error: string; delayMs?: number }
  | { type: 'dead'; error: string };

export interface JobHandler<P = unknown> {
  queue: string;
  /** Jobs of this queue run at once in this process. */
  concurrency: number;
  /**
   * Jobs of one group (`groupKey`, e.g. one webhook endpoint) running at once in every process together; unset =
   * no limit. Jobs of a group at its limit are left in the queue, so one slow group cannot take every slot.
   */
  groupConcurrency?: number;
  /** The same for the jobs of one workspace: one tenant's backlog or slow work cannot take every slot. */
  workspaceConcurrency?: number;
  /** Delay after a thrown error or a retry without its own delay. */
  backoff: BackoffPolicy;
  /**
   * Run one job. `signal` aborts when the lease is lost or the process must stop now. A handler that
   * settles the job itself inside its own transaction (outbox style) returns `{type:'done'}` after
   * calling `queue.complete(job, trx)` (completing twice is harmless), or `{type:'settled'}` when it
   * has completed, retried or buried it and the worker should not touch it again.
   */
  handle(job: ClaimedJob<P>, signal: AbortSignal): Promise<JobOutcome>;
}

export interface WorkerOptions {
  queue: Queue;
  logger: Logger;
  leaseMs: number;
  /** Sleep between polls when a queue had nothing due. */
  pollMs?: number;
  /** Settle jobs through shared commits (db/group-commit.ts) instead of one commit each. */
  commits?: GroupCommit;
  /** Counts the jobs taken over after their lease ran out. */
  metrics?: Pick<Metrics, 'leaseExpired'>;
}

export interface Worker {
  start(): void;
  /** Wake the poller of a queue now (work was just enqueued in this process). */
  wake(queue?: string): void;
  /**
   * Stop claiming and wait up to `graceMs` for running jobs; then abort those still running, give them a moment
   * (ABORT_SETTLE_MS at most) to record an outcome, and hand the rest back to the queue for another worker.
   */
  stop(graceMs?: number): Promise<void>;
  /** Jobs running right now. */
  active(): number;
}

/**
 * Record a handler's outcome on its job: completed, retried later, or buried once it is dead or out of
 * attempts. Every write is guarded by the job's lease token, so after a lost lease nothing changes and
 * this resolves false. For handlers that settle their job inside their own transaction (returning
 * `{type:'settled'}`), the worker calls it otherwise.
 */
export async function settleJob(
  deps: { queue: Pick<Queue, 'complete' | 'retry' | 'bury'>; logger: Logger; backoff: BackoffPolicy },
  job: ClaimedJob<unknown>,
  outcome: Exclude<JobOutcome, { type: 'settled' }>,
  trx?: Work,
): Promise<boolean> {
  const { queue, logger } = deps;
  if (outcome.type === 'done') return queue.complete(job, trx);
  if (outcome.type === 'dead' || job.attempt >= job.maxAttempts) {
    const buried = await queue.bury(job, outcome.error, trx);
    logger.warn({ jobId: job.id, queue: job.queue, attempt: job.attempt, error: outcome.error }, 'job given up');
    return buried;
  }
  return queue.retry(job, outcome.error, outcome.delayMs ?? backoffDelay(deps.backoff, job.attempt), trx);
}

const DEFAULT_POLL_MS = 200;
const DEFAULT_GRACE_MS = 10_000;
/** After the grace period, how long aborted handlers get to record an outcome before their jobs are handed back. */
const ABORT_SETTLE_MS = 1000;

/** Resolves with `promise`'s settling, or after `ms`; true when it settled in time. */
async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs handlers over the durable queue: claims up to each handler's free concurrency, renews the
 * leases of running jobs every third of the lease, and settles each job with the handler's outcome.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- handlers of different payload types share one list
export function createWorker(handlers: readonly JobHandler<any>[], options: WorkerOptions): Worker {
  const { queue, logger, leaseMs } = options;
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  const running = new Map<string, { job: ClaimedJob<unknown>; controller: AbortController; done: Promise<void> }>();
  const wakers = new Map<string, () => void>();
  /** Queues woken while their poller was busy claiming: its next sleep returns at once instead. */
  const missedWakes = new Set<string>();
  let stopping = false;
  let renewTimer: NodeJS.Timeout | undefined;
  const loops: Promise<void>[] = [];

  async function settle(handler: JobHandler, job: ClaimedJob<unknown>, outcome: JobOutcome): Promise<void> {
    if (outcome.type === 'settled') return;
    const record = (trx?: Work) => settleJob({ queue, logger, backoff: handler.backoff }, job, outcome, trx);
    await (options.commits ? options.commits.run((trx) => record(asWork(trx)), job.workspaceId ?? undefined) : record());
  }

  async function run(handler: JobHandler, job: ClaimedJob<unknown>, controller: AbortController): Promise<void> {
    let outcome: JobOutcome;
    if (job.attempt > job.maxAttempts) {
      // Every allowed claim ran out without an outcome: a job that kills or stalls its worker is not run again.
      outcome = { type: 'dead', error: `interrupted on each of its ${job.maxAttempts} allowed attempts` };
    } else {
      try {
        outcome = await handler.handle(job, controller.signal);
      } catch (err) {
        logger.error({ err, jobId: job.id, queue: job.queue, attempt: job.attempt }, 'job handler threw');
        outcome = { type: 'retry', error: err instanceof Error ? err.message : String(err) };
      }
    }
    // Settling is guarded by the lease token: after a lost lease these writes change nothing.
    try {
      await settle(handler, job, outcome);
    } catch (err) {
      // The lease will expire and the job will be claimed again; nothing is lost.
      logger.error({ err, jobId: job.id }, 'could not record job outcome');
    }
  }

  function sleep(name: string): Promise<void> {
    // A stop or wake-up that came while the poller was claiming must not wait out a whole poll interval.
    if (stopping || missedWakes.delete(name)) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, pollMs);
      function done() {
        clearTimeout(timer);
        wakers.delete(name);
        resolve();
      }
      wakers.set(name, done);
    });
  }

  async function loop(handler: JobHandler): Promise<void> {
    const mine = () => [...running.values()].filter((r) => r.job.queue === handler.queue).length;
    const perGroup = handler.groupConcurrency;
    /** Running jobs of this queue per group. */
    const groups = () => {
      const counts = new Map<string, number>();
      for (const { job } of running.values()) {
        if (job.queue === handler.queue && job.groupKey !== null) counts.set(job.groupKey, (counts.get(job.groupKey) ?? 0) + 1);
      }
      return counts;
    };
    const caps = {
      ...(perGroup === undefined ? {} : { perGroup }),
      ...(handler.workspaceConcurrency === undefined ? {} : { perWorkspace: handler.workspaceConcurrency }),
    };
    while (!stopping) {
      const free = handler.concurrency - mine();
      let claimed: ClaimedJob<unknown>[] = [];
      if (free > 0) {
        try {
          claimed = await queue.claim(handler.queue, free, caps);
        } catch (err) {
          logger.error({ err, queue: handler.queue }, 'claim failed');
        }
      }
      for (const job of claimed) {
        if (job.interrupted) options.metrics?.leaseExpired(job.queue);
        if (stopping) {
          await queue.release(job).catch(() => undefined);
          continue;
        }
        if (perGroup !== undefined && job.groupKey !== null && (groups().get(job.groupKey) ?? 0) >= perGroup) {
          // Not expected (the claim counts the running jobs of each group), but never run more of a group
          // than allowed: the surplus goes back, its claim not counted.
          await queue.release(job).catch(() => undefined);
          continue;
        }
        const controller = new AbortController();
        const entry = { job, controller, done: Promise.resolve() };
        entry.done = run(handler, job, controller).finally(() => {
          running.delete(job.id);
          wakers.get(handler.queue)?.();
        });
        running.set(job.id, entry);
      }
      // Full, or the queue had no more than this claim took: wait for a slot, a wake-up or the next poll.
      if (claimed.length < free || mine() >= handler.concurrency) await sleep(handler.queue);
    }
  }

  async function renewAll(): Promise<void> {
    for (const { job, controller } of running.values()) {
      try {
        if (!(await queue.renew(job))) controller.abort(new Error('lease lost'));
      } catch (err) {
        logger.warn({ err, jobId: job.id }, 'lease renewal failed');
      }
    }
  }

  /** Hand the jobs still running back to the queue: their handlers' later writes find the lease gone and change nothing. */
  async function abandonRunning(): Promise<void> {
    const left = [...running.values()].map((r) => r.job);
    let handedBack = 0;
    for (const job of left) {
      try {
        if (await queue.abandon(job)) handedBack += 1;
      } catch (err) {
        logger.warn({ err, jobId: job.id }, 'could not hand a job back; its lease will expire');
      }
    }
    logger.warn({ jobs: left.length, handed_back: handedBack }, 'stopped with jobs still running; handed back to the queue for another worker');
  }

  return {
    start() {
      renewTimer = setInterval(() => void renewAll(), Math.max(50, Math.floor(leaseMs / 3)));
      renewTimer.unref();
      for (const handler of handlers) loops.push(loop(handler));
    },
    wake(name) {
      for (const handler of handlers) {
        if (name !== undefined && handler.queue !== name) continue;
        const waker = wakers.get(handler.queue);
        if (waker) waker();
        else missedWakes.add(handler.queue);
      }
    },
    async stop(graceMs = DEFAULT_GRACE_MS) {
      stopping = true;
      for (const w of [...wakers.values()]) w();
      await Promise.all(loops);
      const settled = () => Promise.all([...running.values()].map((r) => r.done));
      if (!(await within(settled(), graceMs))) {
        for (const r of running.values()) r.controller.abort(new Error('shutting down'));
        if (!(await within(settled(), Math.min(ABORT_SETTLE_MS, graceMs)))) await abandonRunning();
      }
      clearInterval(renewTimer);
    },
    active: () => running.size,
  };
}
