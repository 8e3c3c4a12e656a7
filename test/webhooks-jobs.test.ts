import { sql } from 'kysely';
import { asWork } from '../src/db/tables.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.js';
import { afterCommit } from '../src/db/commit-hooks.js';
import { createDb } from '../src/db/database.js';
import { createWorker, type JobHandler } from '../src/jobs/worker.js';
import { manualClock } from '../src/lib/clock.js';
import { createLogger } from '../src/lib/logger.js';
import { createServices, type Services } from '../src/main.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from './helpers/database.js';
import { uniqueQueue } from './helpers/jobs.js';
import { eventually, sleep } from './helpers/webhooks.js';

/**
 * The queue features webhook delivery rests on: job groups (one group per endpoint) that limit how
 * many of a group a worker runs at once and can be cancelled together, batched enqueues, and
 * after-commit hooks that wake a worker only once the jobs it should claim are visible.
 */
describe(`job groups and after-commit wake-ups (${TEST_DIALECT})`, () => {
  let database: TestDatabase;
  let services: Services;
  const clock = manualClock(Date.UTC(2026, 10, 21, 12, 0, 0));

  beforeAll(async () => {
    database = await createTestDatabase();
    services = await createServices(loadConfig({ MAILROOM_DATABASE_URL: database.url, ...database.secretEnv, MAILROOM_LOG_LEVEL: 'silent' }), { clock });
  });
  afterAll(async () => {
    await services.database.destroy();
    await database.drop();
  });

  const db = () => services.database.db;
  /** Every job of a queue, dead ones included, as the queue shows them. */
  const jobsOf = (name: string) => services.queue.inspect(asWork(db()), { queue: name });

  it('afterCommit runs a hook once its transaction commits, never after a rollback, at once outside one', async () => {
    const calls: string[] = [];
    await db()
      .transaction()
      .execute(async (trx) => {
        await afterCommit(trx, () => calls.push('committed'));
        await sql`select 1`.execute(trx);
        await sleep(20);
        expect(calls).toEqual([]);
      });
    expect(calls).toEqual(['committed']);

    await expect(
      db()
        .transaction()
        .execute(async (trx) => {
          await afterCommit(trx, () => calls.push('rolled back'));
          throw new Error('no');
        }),
    ).rejects.toThrow('no');
    // The next transaction on that connection does not inherit the dropped hook.
    await db()
      .transaction()
      .execute(async (trx) => {
        await afterCommit(trx, () => calls.push('second'));
      });
    expect(calls).toEqual(['committed', 'second']);

    await afterCommit(db(), () => calls.push('no transaction'));
    await sleep(5);
    expect(calls).toEqual(['committed', 'second', 'no transaction']);
  });

  it('a hook sees its transaction’s rows from another connection (what a woken worker’s claim needs)', async () => {
    const name = uniqueQueue('hook');
    const other = createDb(database.url, { poolSize: 1 });
    try {
      let seen = -1;
      const done = new Promise<void>((resolve) => {
        void db()
          .transaction()
          .execute(async (trx) => {
            await services.queue.enqueue(asWork(trx), { queue: name, payload: {} });
            await afterCommit(trx, () => {
              void services.queue
                .inspect(asWork(other.db), { queue: name })
                .then((rows) => {
                  seen = rows.length;
                  resolve();
                });
            });
          });
      });
      await done;
      expect(seen).toBe(1);
    } finally {
      await other.destroy();
    }
  });

  it('enqueueMany writes every job in one go; claim can leave groups out; cancelGroup removes a group’s jobs', async () => {
    const name = uniqueQueue('groups');
    const ids = await db()
      .transaction()
      .execute((trx) =>
        services.queue.enqueueMany(asWork(trx), [
          { queue: name, payload: { n: 1 }, groupKey: 'a', maxAttempts: 8 },
          { queue: name, payload: { n: 2 }, groupKey: 'a' },
          { queue: name, payload: { n: 3 }, groupKey: 'b' },
          { queue: name, payload: { n: 4 } },
        ]),
      );
    expect(ids).toHaveLength(4);
    expect((await jobsOf(name)).map((j) => [j.groupKey, j.maxAttempts, j.state])).toEqual([['a', 8, 'pending'], ['a', 25, 'pending'], ['b', 25, 'pending'], [null, 25, 'pending']]);
    expect(await db().transaction().execute((trx) => services.queue.enqueueMany(asWork(trx), []))).toEqual([]);

    // Nothing running: at most `perGroup` of each group in one claim; jobs without a group are not limited.
    const capped = await services.queue.claim<{ n: number }>(name, 10, { perGroup: 1 });
    expect(capped.map((j) => j.payload.n)).toEqual([1, 3, 4]);
    // Those now run (their leases are what counts, in any process): 'a' has room for one more, 'b' has none left.
    const more = await services.queue.claim<{ n: number }>(name, 10, { perGroup: 2 });
    expect(more.map((j) => j.payload.n)).toEqual([2]);
    expect(await services.queue.claim(name, 10, { perGroup: 2 })).toEqual([]);
    for (const job of [...capped, ...more]) await services.queue.release(job);

    // A leased job is cancelled too: its holder can settle nothing afterwards.
    const [leased] = await services.queue.claim(name, 1, { perGroup: 1 });
    expect(leased!.groupKey).toBe('a');
    expect(await services.queue.cancelGroup(asWork(db()), name, 'a')).toBe(2);
    expect(await services.queue.complete(leased!)).toBe(false);
    expect((await jobsOf(name)).map((j) => j.groupKey)).toEqual(['b', null]);
    expect(await services.queue.cancelGroup(asWork(db()), name, 'a')).toBe(0);
  });

  it('runs at most groupConcurrency jobs of one group at once; other groups run meanwhile', async () => {
    const name = uniqueQueue('fair');
    const running = new Map<string, number>();
    const peak = new Map<string, number>();
    const finished: string[] = [];
    let releaseSlow!: () => void;
    const slowGate = new Promise<void>((resolve) => {
      releaseSlow = resolve;
    });
    const handler: JobHandler<{ group: string; n: number }> = {
      queue: name,
      concurrency: 10,
      groupConcurrency: 2,
      backoff: { baseMs: 10, factor: 1, capMs: 10, jitter: 0 },
      async handle(job) {
        const group = job.payload.group;
        running.set(group, (running.get(group) ?? 0) + 1);
        peak.set(group, Math.max(peak.get(group) ?? 0, running.get(group)!));
        if (group === 'slow') await slowGate;
        running.set(group, running.get(group)! - 1);
        finished.push(`${group}${job.payload.n}`);
        return { type: 'done' };
      },
    };
    await db()
      .transaction()
      .execute((trx) =>
        services.queue.enqueueMany(asWork(trx), [
          ...Array.from({ length: 6 }, (_, n) => ({ queue: name, payload: { group: 'slow', n }, groupKey: 'slow' })),
          ...Array.from({ length: 4 }, (_, n) => ({ queue: name, payload: { group: 'fast', n }, groupKey: 'fast' })),
        ]),
      );
    const worker = createWorker([handler], { queue: services.queue, logger: createLogger('silent'), leaseMs: 30_000, pollMs: 10 });
    worker.start();
    try {
      await eventually('every fast job', () => (finished.filter((f) => f.startsWith('fast')).length === 4 ? true : undefined), 5000);
      // ... and settled: a handler returns a moment before its job's completion commits.
      await eventually('every fast job settled', async () => ((await jobsOf(name)).some((j) => j.groupKey === 'fast') ? undefined : true), 5000);
      expect(running.get('slow')).toBe(2);
      const jobs = await jobsOf(name);
      // Two slow jobs hold leases; the four others were never claimed.
      expect(jobs.filter((j) => j.leaseToken !== null)).toHaveLength(2);
      expect(jobs.filter((j) => j.leaseToken === null).map((j) => j.attempts)).toEqual([0, 0, 0, 0]);
      releaseSlow();
      await eventually('every job', () => (finished.length === 10 ? true : undefined), 5000);
      expect(peak.get('slow')).toBe(2);
      expect(peak.get('fast')).toBeLessThanOrEqual(2);
      // A handler returns before its job is settled (the completion commits a moment later).
      expect(await eventually('every job settled', async () => ((await jobsOf(name)).length === 0 ? true : undefined), 5000)).toBe(true);
    } finally {
      releaseSlow();
      await worker.stop(1000);
    }
  });

  it('a webhook fan-out wakes this process’s worker after the commit, without waiting for a poll', async () => {
    const name = uniqueQueue('wake');
    const handled: number[] = [];
    const handler: JobHandler<{ n: number }> = {
      queue: name,
      concurrency: 1,
      backoff: { baseMs: 10, factor: 1, capMs: 10, jitter: 0 },
      async handle(job) {
        handled.push(job.payload.n);
        return { type: 'done' };
      },
    };
    // A poll interval far beyond the test's waits: only the wake-up can get the job run in time.
    const worker = createWorker([handler], { queue: services.queue, logger: createLogger('silent'), leaseMs: 30_000, pollMs: 60_000 });
    const unsubscribe = services.wakeups.subscribe((queue) => worker.wake(queue));
    worker.start();
    try {
      await sleep(50); // the first poll found nothing; the poller sleeps
      await db()
        .transaction()
        .execute(async (trx) => {
          await services.queue.enqueue(asWork(trx), { queue: name, payload: { n: 1 } });
          await afterCommit(trx, () => services.wakeups.notify(name));
        });
      await eventually('the woken worker to run the job', () => (handled.length === 1 ? true : undefined), 2000, 5);
    } finally {
      unsubscribe();
      await worker.stop(1000);
    }
  });
});
