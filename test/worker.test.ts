import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { asWork } from '../src/db/tables.js';
import { loadConfig } from '../src/config/config.js';
import type { BackoffPolicy } from '../src/jobs/backoff.js';
import { createQueue, type ClaimedJob, type Queue } from '../src/jobs/queue.js';
import { createWorker, type JobHandler, type JobOutcome, type Worker } from '../src/jobs/worker.js';
import { manualClock, systemClock } from '../src/lib/clock.js';
import { createLogger } from '../src/lib/logger.js';
import { createServices, type Services } from '../src/main.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from './helpers/database.js';
import { effectHandler, jobRow, jobsOf, spawnFixture, uniqueQueue, type EffectPayload, type EffectRun, type FixtureProcess } from './helpers/jobs.js';

const LEASE_MS = 30_000;
const POLL_MS = 20;
/** No jitter, so every delay is exact: 1 s, 2 s, 4 s, … */
const POLICY: BackoffPolicy = { baseMs: 1000, factor: 2, capMs: 60_000, jitter: 0 };
const logger = createLogger('silent');
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Settle within `ms` or fail the test, so that no wait can hang. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The real queue with a window on the worker's polling: how many claims it made, whether one is under
 * way, and a way to hold the next claim after it has read the database, before it returns.
 */
function probeQueue(inner: Queue) {
  let inClaim = false;
  let hold: { claimed: (count: number) => void; wait: Promise<void> } | null = null;
  const probe = {
    claims: 0,
    queue: {
      ...inner,
      async claim<P>(queueName: string, limit: number): Promise<ClaimedJob<P>[]> {
        inClaim = true;
        probe.claims += 1;
        try {
          const jobs = await inner.claim<P>(queueName, limit);
          const current = hold;
          if (current) {
            hold = null;
            current.claimed(jobs.length);
            await current.wait;
          }
          return jobs;
        } finally {
          inClaim = false;
        }
      },
    } satisfies Queue,
    /** Wait until the poller has polled, runs nothing and is not claiming: it is asleep. */
    async asleep(worker: Worker): Promise<void> {
      await vi.waitFor(
        () => {
          expect(probe.claims).toBeGreaterThan(0);
          expect(inClaim).toBe(false);
          expect(worker.active()).toBe(0);
        },
        { timeout: 2000, interval: 10 },
      );
    },
    holdNextClaim(): { claimed: Promise<number>; release: () => void } {
      const release = gate();
      let claimed!: (count: number) => void;
      const claimedPromise = new Promise<number>((resolve) => {
        claimed = resolve;
      });
      hold = { claimed, wait: release.wait };
      return { claimed: claimedPromise, release: release.open };
    },
  };
  return probe;
}

/** A promise the test opens by hand. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { wait, open };
}

describe(`worker (${TEST_DIALECT})`, () => {
  let database: TestDatabase;
  let services: Services;
  let clock: ReturnType<typeof manualClock>;
  let queue: Queue;
  const workers: Worker[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    clock = manualClock(Date.UTC(2026, 10, 21, 12, 0, 0));
    const config = loadConfig({ MAILROOM_DATABASE_URL: database.url, ...database.secretEnv, MAILROOM_LOG_LEVEL: 'silent', MAILROOM_LEASE_MS: String(LEASE_MS) });
    services = await createServices(config, { clock });
    queue = services.queue;
  });
  afterEach(async () => {
    // A test that failed half-way must not leave a poller running into the next one.
    await within(Promise.all(workers.splice(0).map((w) => w.stop(200))), 5000, 'stopping the workers');
  });
  afterAll(async () => {
    await services.database.destroy();
    await database.drop();
  });

  const db = () => services.database.db;

  function startWorker(handlers: JobHandler[], options: { queue?: Queue; pollMs?: number; leaseMs?: number } = {}): Worker {
    const worker = createWorker(handlers, {
      queue: options.queue ?? queue,
      logger,
      leaseMs: options.leaseMs ?? LEASE_MS,
      pollMs: options.pollMs ?? POLL_MS,
    });
    workers.push(worker);
    worker.start();
    return worker;
  }

  function handler<P>(name: string, handle: (job: ClaimedJob<P>, signal: AbortSignal) => Promise<JobOutcome>, concurrency = 4): JobHandler<P> {
    return { queue: name, concurrency, backoff: POLICY, handle };
  }

  describe('outcomes', () => {
    type Plan = 'done' | 'retry-own-delay' | 'retry-policy-delay' | 'dead' | 'throw';

    it('settles each outcome: done deletes, retry reschedules, dead buries, a throw retries', async () => {
      const name = uniqueQueue();
      const calls: Array<{ plan: Plan; attempt: number }> = [];
      const ids = new Map<Plan, string>();
      for (const plan of ['done', 'retry-own-delay', 'retry-policy-delay', 'dead', 'throw'] as const) {
        ids.set(plan, await queue.enqueue(asWork(db()), { queue: name, payload: plan }));
      }
      const id = (plan: Plan) => ids.get(plan)!;
      startWorker([
        handler<Plan>(name, async (job) => {
          calls.push({ plan: job.payload, attempt: job.attempt });
          switch (job.payload) {
            case 'done':
              return { type: 'done' };
            case 'retry-own-delay':
              return { type: 'retry', error: '451 try later', delayMs: 1234 };
            case 'retry-policy-delay':
              return { type: 'retry', error: 'connection reset' };
            case 'dead':
              return { type: 'dead', error: '550 no such user' };
            case 'throw':
              throw new Error('kaboom');
          }
        }),
      ]);

      const now = clock.now();
      await vi.waitFor(
        async () => {
          expect(calls).toHaveLength(5);
          expect(await jobRow(db(), id('done'))).toBeUndefined();
          expect(await jobRow(db(), id('retry-own-delay'))).toMatchObject({ state: 'pending', run_at: now + 1234, lease_token: null, last_error: '451 try later', attempts: 1 });
          expect(await jobRow(db(), id('retry-policy-delay'))).toMatchObject({ state: 'pending', run_at: now + POLICY.baseMs, lease_token: null, last_error: 'connection reset', attempts: 1 });
          expect(await jobRow(db(), id('dead'))).toMatchObject({ state: 'dead', lease_token: null, last_error: '550 no such user', attempts: 1 });
          expect(await jobRow(db(), id('throw'))).toMatchObject({ state: 'pending', run_at: now + POLICY.baseMs, lease_token: null, last_error: 'kaboom', attempts: 1 });
        },
        { timeout: 5000, interval: 20 },
      );

      // The policy delay grows with the attempt: the second failure waits base × factor.
      clock.advance(POLICY.baseMs);
      await vi.waitFor(
        async () => {
          expect(await jobRow(db(), id('retry-policy-delay'))).toMatchObject({ attempts: 2, run_at: clock.now() + 2 * POLICY.baseMs, lease_token: null });
          expect(await jobRow(db(), id('throw'))).toMatchObject({ attempts: 2, run_at: clock.now() + 2 * POLICY.baseMs, lease_token: null });
        },
        { timeout: 5000, interval: 20 },
      );
      // The job with its own longer delay is not due yet, the dead one never again.
      await sleep(5 * POLL_MS);
      expect(calls.filter((c) => c.plan === 'retry-own-delay')).toEqual([{ plan: 'retry-own-delay', attempt: 1 }]);
      expect(calls.filter((c) => c.plan === 'dead')).toHaveLength(1);
      expect(calls.filter((c) => c.plan === 'throw').map((c) => c.attempt)).toEqual([1, 2]);
    });

    it('buries a job when its last allowed attempt fails, by retry or by throw', async () => {
      const name = uniqueQueue();
      const retried = await queue.enqueue(asWork(db()), { queue: name, payload: 'retry', maxAttempts: 2 });
      const thrown = await queue.enqueue(asWork(db()), { queue: name, payload: 'throw', maxAttempts: 1 });
      const calls: Array<[string, number]> = [];
      startWorker([
        handler<string>(name, async (job) => {
          calls.push([job.payload, job.attempt]);
          if (job.payload === 'throw') throw new Error('always fails');
          return { type: 'retry', error: `failure ${job.attempt}`, delayMs: 10 };
        }),
      ]);
      await vi.waitFor(
        async () => {
          expect(await jobRow(db(), thrown)).toMatchObject({ state: 'dead', last_error: 'always fails', attempts: 1 });
          expect(await jobRow(db(), retried)).toMatchObject({ state: 'pending', attempts: 1, last_error: 'failure 1' });
        },
        { timeout: 5000, interval: 20 },
      );
      clock.advance(10);
      await vi.waitFor(
        async () => expect(await jobRow(db(), retried)).toMatchObject({ state: 'dead', attempts: 2, last_error: 'failure 2', lease_token: null }),
        { timeout: 5000, interval: 20 },
      );
      clock.advance(86_400_000);
      await sleep(5 * POLL_MS);
      expect(calls.sort()).toEqual([
        ['retry', 1],
        ['retry', 2],
        ['throw', 1],
      ]);
    });

    it('buries without running it a job whose claims went beyond max_attempts (earlier holders died)', async () => {
      const name = uniqueQueue();
      const id = await queue.enqueue(asWork(db()), { queue: name, payload: {}, maxAttempts: 1 });
      // A worker that claims the job and dies: its lease simply runs out.
      const dying = createQueue({ work: asWork(db()), dialect: services.database.dialect, clock, leaseMs: LEASE_MS });
      expect(await dying.claim(name, 1)).toHaveLength(1);
      clock.advance(LEASE_MS);
      const calls: number[] = [];
      startWorker([
        handler(name, async (job) => {
          calls.push(job.attempt);
          return { type: 'done' };
        }),
      ]);
      await vi.waitFor(async () => expect(await jobRow(db(), id)).toMatchObject({ state: 'dead', attempts: 2, lease_token: null }), {
        timeout: 5000,
        interval: 20,
      });
      expect((await jobRow(db(), id))?.last_error).toMatch(/interrupted/);
      expect(calls).toEqual([]);
    });
  });

  describe('scheduling', () => {
    it('never runs more than `concurrency` jobs at once, nor leases more than it runs', async () => {
      const name = uniqueQueue();
      const CONCURRENCY = 3;
      const JOBS = 12;
      for (let n = 0; n < JOBS; n += 1) await queue.enqueue(asWork(db()), { queue: name, payload: n });
      let running = 0;
      let maxRunning = 0;
      let maxLeased = 0;
      const seen: number[] = [];
      startWorker([
        handler<number>(
          name,
          async (job) => {
            running += 1;
            maxRunning = Math.max(maxRunning, running);
            try {
              const leased = (await jobsOf(db(), name)).filter((r) => r.lease_token !== null).length;
              maxLeased = Math.max(maxLeased, leased);
              await sleep(25);
              seen.push(job.payload);
              return { type: 'done' };
            } finally {
              running -= 1;
            }
          },
          CONCURRENCY,
        ),
      ]);
      await vi.waitFor(async () => expect(await jobsOf(db(), name)).toEqual([]), { timeout: 10_000, interval: 20 });
      expect(seen.sort((a, b) => a - b)).toEqual(Array.from({ length: JOBS }, (_, n) => n));
      expect(maxRunning).toBe(CONCURRENCY);
      expect(maxLeased).toBeLessThanOrEqual(CONCURRENCY);
    });

    it('wake() makes a sleeping poller claim at once', async () => {
      const name = uniqueQueue();
      const probe = probeQueue(queue);
      const handled: string[] = [];
      // A poll interval far beyond the test's waits: only a wake-up can get the jobs run in time.
      const worker = startWorker(
        [
          handler(name, async (job) => {
            handled.push(job.id);
            return { type: 'done' };
          }),
        ],
        { queue: probe.queue, pollMs: 60_000 },
      );
      for (const [payload, wake] of [
        [1, () => worker.wake(name)],
        [2, () => worker.wake()], // every queue
      ] as const) {
        await probe.asleep(worker);
        const claims = probe.claims;
        const id = await queue.enqueue(asWork(db()), { queue: name, payload });
        await sleep(50);
        expect(handled).not.toContain(id); // asleep: the job waits for a wake-up
        expect(probe.claims).toBe(claims);
        wake();
        await vi.waitFor(() => expect(handled).toContain(id), { timeout: 2000, interval: 10 });
      }
      worker.wake('some-other-queue'); // harmless
    });

    it('does not lose a wake() that arrives while the poller is in the middle of a claim', async () => {
      const name = uniqueQueue();
      const probe = probeQueue(queue);
      const handled: string[] = [];
      const worker = startWorker(
        [
          handler(name, async (job) => {
            handled.push(job.id);
            return { type: 'done' };
          }),
        ],
        { queue: probe.queue, pollMs: 60_000 },
      );
      await probe.asleep(worker);
      const held = probe.holdNextClaim();
      worker.wake(name);
      await within(held.claimed, 2000, 'the woken claim');
      // The claim has read the queue (empty) and not returned yet: now work arrives and the poller is told.
      const id = await queue.enqueue(asWork(db()), { queue: name, payload: {} });
      worker.wake(name);
      held.release();
      await vi.waitFor(() => expect(handled).toEqual([id]), { timeout: 2000, interval: 10 });
    });
  });

  describe('stopping', () => {
    it('stop() stops claiming and waits for running jobs to settle', async () => {
      const name = uniqueQueue();
      const first = await queue.enqueue(asWork(db()), { queue: name, payload: 1 });
      const finish = gate();
      const started: string[] = [];
      const worker = startWorker([
        handler(
          name,
          async (job) => {
            started.push(job.id);
            await finish.wait;
            return { type: 'done' };
          },
          1,
        ),
      ]);
      await vi.waitFor(() => expect(started).toEqual([first]), { timeout: 2000, interval: 10 });
      const second = await queue.enqueue(asWork(db()), { queue: name, payload: 2 });

      let stopped = false;
      const stopping = worker.stop(10_000).then(() => {
        stopped = true;
      });
      worker.wake(name);
      await sleep(150);
      expect(stopped).toBe(false);
      expect(worker.active()).toBe(1);

      finish.open();
      await within(stopping, 5000, 'stop() after the job finished');
      expect(worker.active()).toBe(0);
      expect(await jobRow(db(), first)).toBeUndefined(); // settled before stop() returned
      expect(started).toEqual([first]);
      expect(await jobRow(db(), second)).toMatchObject({ attempts: 0, lease_token: null });
    });

    it('stop() gives up after the grace period, aborting the handlers that still run', async () => {
      const name = uniqueQueue();
      const id = await queue.enqueue(asWork(db()), { queue: name, payload: {} });
      let reason: unknown;
      const started = gate();
      const worker = startWorker([
        handler(name, async (_job, signal) => {
          started.open();
          await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
          reason = signal.reason;
          return { type: 'retry', error: 'aborted', delayMs: 0 };
        }),
      ]);
      await within(started.wait, 2000, 'handler start');
      const begun = Date.now();
      await within(worker.stop(100), 2000, 'stop() with a 100 ms grace');
      expect(Date.now() - begun).toBeGreaterThanOrEqual(90);
      expect(reason).toBeInstanceOf(Error);
      expect((reason as Error).message).toBe('shutting down');
      await vi.waitFor(async () => expect(await jobRow(db(), id)).toMatchObject({ lease_token: null, last_error: 'aborted' }), { timeout: 2000, interval: 10 });
    });

    it('releases, uncounted, jobs it claimed while being stopped', async () => {
      const name = uniqueQueue();
      const probe = probeQueue(queue);
      const calls: string[] = [];
      const worker = startWorker(
        [
          handler(name, async (job) => {
            calls.push(job.id);
            return { type: 'done' };
          }),
        ],
        { queue: probe.queue, pollMs: 60_000 },
      );
      await probe.asleep(worker);
      const ids = [await queue.enqueue(asWork(db()), { queue: name, payload: 1 }), await queue.enqueue(asWork(db()), { queue: name, payload: 2 })];
      const held = probe.holdNextClaim();
      worker.wake(name);
      expect(await within(held.claimed, 2000, 'the woken claim')).toBe(2);
      const stopping = worker.stop(5000);
      held.release();
      await within(stopping, 2000, 'stop()');
      expect(calls).toEqual([]);
      for (const id of ids) expect(await jobRow(db(), id)).toMatchObject({ attempts: 0, lease_token: null, run_at: clock.now(), state: 'pending' });
    });

    it('stop() does not wait out the poll interval when it comes during a claim', async () => {
      const name = uniqueQueue();
      const probe = probeQueue(queue);
      const worker = startWorker([handler(name, async () => ({ type: 'done' }))], { queue: probe.queue, pollMs: 60_000 });
      await probe.asleep(worker);
      const held = probe.holdNextClaim();
      worker.wake(name);
      expect(await within(held.claimed, 2000, 'the woken claim')).toBe(0);
      const stopping = worker.stop(5000);
      held.release();
      await within(stopping, 2000, 'stop() during an empty claim');
    });
  });

  describe('leases', () => {
    // These use the real clock: the worker renews on a real timer.
    const SHORT_LEASE_MS = 400;

    it('renews the lease of a long job so that no other claimer can take it', async () => {
      const name = uniqueQueue();
      const jobs = createQueue({ work: asWork(db()), dialect: services.database.dialect, clock: systemClock, leaseMs: SHORT_LEASE_MS });
      const rival = createQueue({ work: asWork(db()), dialect: services.database.dialect, clock: systemClock, leaseMs: SHORT_LEASE_MS });
      const id = await jobs.enqueue(asWork(db()), { queue: name, payload: {} });
      const started = gate();
      let aborted = false;
      startWorker(
        [
          handler(name, async (_job, signal) => {
            started.open();
            await sleep(3 * SHORT_LEASE_MS);
            aborted = signal.aborted;
            return { type: 'done' };
          }),
        ],
        { queue: jobs, leaseMs: SHORT_LEASE_MS },
      );
      await within(started.wait, 2000, 'handler start');
      const since = Date.now();
      let rivalClaims = 0;
      while ((await jobRow(db(), id)) !== undefined) {
        expect(await rival.claim(name, 10)).toEqual([]);
        rivalClaims += 1;
        await sleep(40);
        if (rivalClaims > 200) throw new Error('job never finished');
      }
      // The rival kept trying for well over one lease, and never got the job.
      expect(Date.now() - since).toBeGreaterThan(2 * SHORT_LEASE_MS);
      expect(rivalClaims).toBeGreaterThan(5);
      expect(aborted).toBe(false);
    });

    it('aborts the handler when the lease is lost, and its late outcome changes nothing', async () => {
      const name = uniqueQueue();
      const jobs = createQueue({ work: asWork(db()), dialect: services.database.dialect, clock: systemClock, leaseMs: SHORT_LEASE_MS });
      // A claimer whose clock runs an hour ahead sees the lease as expired and takes the job over.
      const thief = createQueue({ work: asWork(db()), dialect: services.database.dialect, clock: manualClock(Date.now() + 3_600_000), leaseMs: LEASE_MS });
      const id = await jobs.enqueue(asWork(db()), { queue: name, payload: {} });
      const started = gate();
      const finished = gate();
      let reason: unknown;
      startWorker(
        [
          handler(name, async (_job, signal) => {
            started.open();
            await Promise.race([new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true })), sleep(5000)]);
            reason = signal.reason;
            finished.open();
            return { type: 'done' };
          }),
        ],
        { queue: jobs, leaseMs: SHORT_LEASE_MS },
      );
      await within(started.wait, 2000, 'handler start');
      const [taken] = await thief.claim(name, 1);
      expect(taken).toMatchObject({ id, attempt: 2, interrupted: true });
      await within(finished.wait, 3000, 'abort on lost lease');
      expect(reason).toBeInstanceOf(Error);
      expect((reason as Error).message).toBe('lease lost');
      await sleep(50);
      expect(await jobRow(db(), id)).toMatchObject({ lease_token: taken!.leaseToken, attempts: 2, state: 'pending' });
    });
  });

  describe('crash safety', () => {
    let child: FixtureProcess | undefined;
    afterEach(async () => {
      await child?.kill();
      child = undefined;
    });

    it('a job whose worker process was SIGKILLed mid-job is run again, interrupted, and no job is lost', async () => {
      const CHILD_LEASE_MS = 500;
      const JOBS = 30;
      const BLOCKING = 7;
      const name = uniqueQueue('crash');
      const { workspace_id: workspaceId } = await services.tenancy.admin.createWorkspace({ name: 'Crash test' });
      const jobs = createQueue({ work: asWork(db()), dialect: services.database.dialect, clock: systemClock, leaseMs: CHILD_LEASE_MS });
      const ids: string[] = [];
      for (let n = 0; n < JOBS; n += 1) {
        ids.push(await jobs.enqueue(asWork(db()), { queue: name, workspaceId, payload: { n, block: n === BLOCKING } satisfies EffectPayload }));
      }

      child = spawnFixture({
        FIXTURE_MODE: 'work',
        FIXTURE_QUEUE: name,
        FIXTURE_CONCURRENCY: '2',
        FIXTURE_WORK_MS: '20',
        MAILROOM_DATABASE_URL: database.url,
        ...database.secretEnv,
        MAILROOM_LEASE_MS: String(CHILD_LEASE_MS),
      });
      const childRuns = () => child!.messages.filter((m) => m.event === 'run') as unknown as EffectRun[];
      // Kill it once it hangs on the blocking job and has done some other work besides.
      await child.waitFor(() => childRuns().some((r) => r.n === BLOCKING) && childRuns().length >= BLOCKING + 3, 20_000);
      await child.kill();
      const runsBeforeKill = childRuns();
      expect(runsBeforeKill.find((r) => r.n === BLOCKING)).toMatchObject({ attempt: 1, interrupted: false });

      const parentRuns: EffectRun[] = [];
      startWorker(
        [
          effectHandler({
            queue: name,
            jobs,
            db: db(),
            events: services.events,
            concurrency: 4,
            onRun: (run) => parentRuns.push(run),
          }),
        ],
        { queue: jobs, leaseMs: CHILD_LEASE_MS },
      );
      await vi.waitFor(async () => expect(await jobsOf(db(), name)).toEqual([]), { timeout: 15_000, interval: 25 });

      // Every job's effect exists exactly once: none lost, none doubled by the takeover.
      const events = await db().selectFrom('events').select('payload').where('workspace_id', '=', workspaceId).execute();
      const effects = events.map((e) => (JSON.parse(e.payload) as { data: { n: number; job_id: string } }).data);
      expect(effects.map((d) => d.n).sort((a, b) => a - b)).toEqual(Array.from({ length: JOBS }, (_, n) => n));
      expect(new Set(effects.map((d) => d.job_id))).toEqual(new Set(ids));

      expect(parentRuns.find((r) => r.n === BLOCKING)).toMatchObject({ attempt: 2, interrupted: true });
      // A takeover is exactly a claim after an earlier one ran out.
      for (const run of parentRuns) expect(run.interrupted, `job ${run.n}`).toBe(run.attempt > 1);
      expect(parentRuns.length).toBeLessThan(JOBS); // the child had completed some before it died
    });
  });
});
