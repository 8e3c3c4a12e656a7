import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { asWork } from '../src/db/tables.js';
import { loadConfig } from '../src/config/config.js';
import { createDb, ping, type DbHandle } from '../src/db/database.js';
import { createQueue, DEFAULT_MAX_ATTEMPTS, type ClaimedJob, type Queue } from '../src/jobs/queue.js';
import { manualClock, systemClock } from '../src/lib/clock.js';
import { createServices, type Services } from '../src/main.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from './helpers/database.js';
import { jobRow, jobsOf, spawnFixture, uniqueQueue, type FixtureProcess } from './helpers/jobs.js';

const LEASE_MS = 30_000;
const START = Date.UTC(2026, 10, 21, 12, 0, 0);

describe(`job queue (${TEST_DIALECT})`, () => {
  let database: TestDatabase;
  let services: Services;
  let clock: ReturnType<typeof manualClock>;
  let queue: Queue;
  /** A second claimer on the same database and clock: another worker process, as far as the rows can tell. */
  let other: Queue;

  beforeAll(async () => {
    database = await createTestDatabase();
    clock = manualClock(START);
    const config = loadConfig({ MAILROOM_DATABASE_URL: database.url, ...database.secretEnv, MAILROOM_LOG_LEVEL: 'silent', MAILROOM_LEASE_MS: String(LEASE_MS) });
    services = await createServices(config, { clock });
    queue = services.queue;
    other = createQueue({ work: asWork(services.database.db), dialect: services.database.dialect, clock, leaseMs: LEASE_MS });
  });
  afterAll(async () => {
    await services.database.destroy();
    await database.drop();
  });

  const db = () => services.database.db;

  async function claimOne(q: Queue, name: string): Promise<ClaimedJob> {
    const jobs = await q.claim(name, 10);
    expect(jobs).toHaveLength(1);
    return jobs[0]!;
  }

  describe('enqueue', () => {
    it('writes nothing when the enqueuing transaction rolls back', async () => {
      const name = uniqueQueue();
      let id = '';
      await expect(
        db().transaction().execute(async (trx) => {
          id = await queue.enqueue(asWork(trx), { queue: name, payload: { n: 1 } });
          expect(await jobRow(trx, id)).toBeDefined(); // visible inside its own transaction
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      expect(id).toMatch(/^job_/);
      expect(await jobRow(db(), id)).toBeUndefined();
      expect(await queue.claim(name, 10)).toEqual([]);
    });

    it('makes a committed job claimable, with its payload and defaults', async () => {
      const name = uniqueQueue();
      const payload = { to: ['a@example.com'], nested: { ok: true, n: 3 }, text: 'héllo "quoted"' };
      const id = await db().transaction().execute((trx) => queue.enqueue(asWork(trx), { queue: name, payload }));
      expect(await jobRow(db(), id)).toEqual({
        id,
        queue: name,
        workspace_id: null,
        payload: JSON.stringify(payload),
        state: 'pending',
        attempts: 0,
        max_attempts: DEFAULT_MAX_ATTEMPTS,
        run_at: clock.now(),
        lease_token: null,
        interrupted: 0,
        last_error: null,
        group_key: null,
        dedup_key: null,
        created_at: clock.now(),
        updated_at: clock.now(),
      });
      const job = await claimOne(queue, name);
      expect(job).toEqual({
        id,
        queue: name,
        workspaceId: null,
        payload,
        attempt: 1,
        maxAttempts: DEFAULT_MAX_ATTEMPTS,
        interrupted: false,
        leaseToken: expect.any(String) as string,
        createdAt: clock.now(),
        groupKey: null,
      });
      expect(job.leaseToken).not.toBe('');
      const row = await jobRow(db(), id);
      expect(row).toMatchObject({ attempts: 1, lease_token: job.leaseToken, run_at: clock.now() + LEASE_MS, interrupted: 0 });
    });

    it('enqueues on the root connection too, keeping the given max attempts and workspace', async () => {
      const name = uniqueQueue();
      const { workspace_id: workspaceId } = await services.tenancy.admin.createWorkspace({ name: 'Queue tests' });
      const id = await queue.enqueue(asWork(db()), { queue: name, payload: 'plain', maxAttempts: 3, workspaceId });
      const job = await claimOne(queue, name);
      expect(job).toMatchObject({ id, payload: 'plain', maxAttempts: 3, workspaceId });
    });
  });

  describe('claim', () => {
    it('does not claim a job before its run_at, and does once the clock reaches it', async () => {
      const name = uniqueQueue();
      const id = await queue.enqueue(asWork(db()), { queue: name, payload: {}, runAt: clock.now() + 60_000 });
      expect(await queue.claim(name, 10)).toEqual([]);
      clock.advance(59_999);
      expect(await queue.claim(name, 10)).toEqual([]);
      clock.advance(1);
      expect((await claimOne(queue, name)).id).toBe(id);
    });

    it('claims at most `limit` jobs, earliest run_at first, and only from its own queue', async () => {
      const name = uniqueQueue();
      const neighbour = uniqueQueue();
      const now = clock.now();
      // Enqueued latest-first so that id order and run_at order disagree.
      const ids: string[] = [];
      for (let i = 5; i >= 1; i -= 1) ids.unshift(await queue.enqueue(asWork(db()), { queue: name, payload: i, runAt: now - i * 1000 }));
      await queue.enqueue(asWork(db()), { queue: neighbour, payload: 'not mine', runAt: now - 99_000 });

      const first = await queue.claim<number>(name, 2);
      expect(first.map((j) => j.payload).sort()).toEqual([4, 5]);
      const second = await queue.claim<number>(name, 2);
      expect(second.map((j) => j.payload).sort()).toEqual([2, 3]);
      const third = await queue.claim<number>(name, 2);
      expect(third.map((j) => j.payload)).toEqual([1]);
      expect(await queue.claim(name, 2)).toEqual([]);

      const claimedIds = [...first, ...second, ...third].map((j) => j.id);
      expect(new Set(claimedIds).size).toBe(5);
      expect(claimedIds.sort()).toEqual([...ids].sort());
      expect((await jobsOf(db(), neighbour))[0]).toMatchObject({ attempts: 0, lease_token: null });
    });
  });

  describe('settling', () => {
    it('complete deletes the job; completing again is a harmless false', async () => {
      const name = uniqueQueue();
      const id = await queue.enqueue(asWork(db()), { queue: name, payload: {} });
      const job = await claimOne(queue, name);
      expect(await queue.complete(job)).toBe(true);
      expect(await jobRow(db(), id)).toBeUndefined();
      expect(await queue.complete(job)).toBe(false);
    });

    it('complete inside a rolled-back transaction leaves the job leased', async () => {
      const name = uniqueQueue();
      const id = await queue.enqueue(asWork(db()), { queue: name, payload: {} });
      const job = await claimOne(queue, name);
      await expect(
        db().transaction().execute(async (trx) => {
          expect(await queue.complete(job, asWork(trx))).toBe(true);
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      expect(await jobRow(db(), id)).toMatchObject({ lease_token: job.leaseToken, attempts: 1 });
      expect(await queue.complete(job)).toBe(true);
    });

    it('retry reschedules after the delay, clears the lease and keeps the error', async () => {
      const name = uniqueQueue();
      const id = await queue.enqueue(asWork(db()), { queue: name, payload: {} });
      const job = await claimOne(queue, name);
      expect(await queue.retry(job, 'greylisted', 5000)).toBe(true);
      expect(await jobRow(db(), id)).toMatchObject({
        state: 'pending',
        run_at: clock.now() + 5000,
        lease_token: null,
        last_error: 'greylisted',
        attempts: 1,
        interrupted: 0,
      });
      // The old token is void once the job is back in the queue.
      expect(await queue.complete(job)).toBe(false);
      clock.advance(4999);
      expect(await queue.claim(name, 10)).toEqual([]);
      clock.advance(1);
      const again = await claimOne(queue, name);
      expect(again).toMatchObject({ id, attempt: 2, interrupted: false });
      expect(again.leaseToken).not.toBe(job.leaseToken);
    });

    it('retry clamps a negative delay to now and truncates a long error', async () => {
      const name = uniqueQueue();
      const id = await queue.enqueue(asWork(db()), { queue: name, payload: {} });
      const job = await claimOne(queue, name);
      expect(await queue.retry(job, 'x'.repeat(5000), -10_000)).toBe(true);
      const row = await jobRow(db(), id);
      expect(row?.run_at).toBe(clock.now());
      expect(row?.last_error).toBe(`${'x'.repeat(2000)}…`);
      expect((await claimOne(queue, name)).id).toBe(id);
    });

    it('bury leaves the job dead with its error, never to be claimed again', async () => {
      const name = uniqueQueue();
      const id = await queue.enqueue(asWork(db()), { queue: name, payload: {} });
      const job = await claimOne(queue, name);
      expect(await queue.bury(job, '550 5.1.1 no such user')).toBe(true);
      expect(await jobRow(db(), id)).toMatchObject({ state: 'dead', last_error: '550 5.1.1 no such user', lease_token: null, attempts: 1 });
      clock.advance(365 * 86_400_000);
      expect(await queue.claim(name, 10)).toEqual([]);
      expect(await other.claim(name, 10)).toEqual([]);
      expect(await queue.complete(job)).toBe(false);
      expect(await jobRow(db(), id)).toMatchObject({ state: 'dead' });
    });

    it('release hands the job back at once without counting the claim', async () => {
      const name = uniqueQueue();
      const id = await queue.enqueue(asWork(db()), { queue: name, payload: {}, runAt: clock.now() - 1000 });
      const job = await claimOne(queue, name);
      expect(await queue.release(job)).toBe(true);
      expect(await jobRow(db(), id)).toMatchObject({ attempts: 0, lease_token: null, run_at: clock.now(), state: 'pending' });
      expect(await queue.release(job)).toBe(false);
      const again = await claimOne(other, name);
      expect(again).toMatchObject({ id, attempt: 1, interrupted: false });
    });
  });

  describe('leases', () => {
    it('hides a claimed job until its lease expires, then hands it over as interrupted', async () => {
      const name = uniqueQueue();
      const id = await queue.enqueue(asWork(db()), { queue: name, payload: { n: 1 } });
      const first = await claimOne(queue, name);
      clock.advance(LEASE_MS - 1);
      expect(await other.claim(name, 10)).toEqual([]);
      expect(await queue.claim(name, 10)).toEqual([]);
      clock.advance(1);
      const second = await claimOne(other, name);
      expect(second).toMatchObject({ id, attempt: 2, interrupted: true, payload: { n: 1 } });
      expect(second.leaseToken).not.toBe(first.leaseToken);
      expect(await jobRow(db(), id)).toMatchObject({ attempts: 2, interrupted: 1, lease_token: second.leaseToken, run_at: clock.now() + LEASE_MS });
    });

    it('ignores complete, retry, bury, release and renew from the holder of a stale lease', async () => {
      const name = uniqueQueue();
      const id = await queue.enqueue(asWork(db()), { queue: name, payload: {} });
      const stale = await claimOne(queue, name);
      clock.advance(LEASE_MS);
      const current = await claimOne(other, name);
      const before = await jobRow(db(), id);
      clock.advance(10);

      expect(await queue.complete(stale)).toBe(false);
      expect(await queue.retry(stale, 'late', 0)).toBe(false);
      expect(await queue.bury(stale, 'late')).toBe(false);
      expect(await queue.release(stale)).toBe(false);
      expect(await queue.renew(stale)).toBe(false);
      await db().transaction().execute(async (trx) => {
        expect(await queue.complete(stale, asWork(trx))).toBe(false);
        expect(await queue.retry(stale, 'late', 0, asWork(trx))).toBe(false);
        expect(await queue.bury(stale, 'late', asWork(trx))).toBe(false);
      });
      expect(await jobRow(db(), id)).toEqual(before);

      expect(await other.complete(current)).toBe(true);
      expect(await jobRow(db(), id)).toBeUndefined();
    });

    it('renew extends the lease, and returns false once another claimer has taken the job over', async () => {
      const name = uniqueQueue();
      const id = await queue.enqueue(asWork(db()), { queue: name, payload: {} });
      const job = await claimOne(queue, name);
      clock.advance(LEASE_MS - 1);
      expect(await queue.renew(job)).toBe(true);
      expect(await jobRow(db(), id)).toMatchObject({ run_at: clock.now() + LEASE_MS, lease_token: job.leaseToken, attempts: 1 });
      // Past the original expiry, but the renewed lease still holds.
      clock.advance(LEASE_MS - 1);
      expect(await other.claim(name, 10)).toEqual([]);
      expect(await queue.renew(job)).toBe(true);
      clock.advance(LEASE_MS);
      const takenOver = await claimOne(other, name);
      expect(takenOver).toMatchObject({ id, attempt: 2, interrupted: true });
      expect(await queue.renew(job)).toBe(false);
      expect(await jobRow(db(), id)).toMatchObject({ lease_token: takenOver.leaseToken, run_at: clock.now() + LEASE_MS });
      expect(await other.renew(takenOver)).toBe(true);
    });

    it('a job handed back after an interrupted claim is still reported as interrupted', async () => {
      // The handler of the next claim must still learn that a run died mid-job: releasing a claim
      // that never started the work does not undo that.
      const name = uniqueQueue();
      const id = await queue.enqueue(asWork(db()), { queue: name, payload: {} });
      await claimOne(queue, name);
      clock.advance(LEASE_MS);
      const interrupted = await claimOne(other, name);
      expect(interrupted).toMatchObject({ attempt: 2, interrupted: true });
      expect(await other.release(interrupted)).toBe(true);
      const again = await claimOne(queue, name);
      expect(again).toMatchObject({ id, attempt: 2, interrupted: true });
    });

    it('a retry resets the interrupted flag for the next claim', async () => {
      const name = uniqueQueue();
      await queue.enqueue(asWork(db()), { queue: name, payload: {} });
      await claimOne(queue, name);
      clock.advance(LEASE_MS);
      const interrupted = await claimOne(other, name);
      expect(interrupted.interrupted).toBe(true);
      expect(await other.retry(interrupted, 'transient', 0)).toBe(true);
      expect(await claimOne(queue, name)).toMatchObject({ attempt: 3, interrupted: false });
    });

    it.skipIf(TEST_DIALECT !== 'postgres')('passes over a job another transaction holds, without waiting for it', async () => {
      const name = uniqueQueue();
      const held = await queue.enqueue(asWork(db()), { queue: name, payload: { n: 1 } });
      const free = await queue.enqueue(asWork(db()), { queue: name, payload: { n: 2 } });
      // The holder waits on the claim: were the held row waited for, neither would finish (the test's time-out).
      const during = await db()
        .transaction()
        .execute(async (trx) => {
          await trx.selectFrom('jobs').select('id').where('id', '=', held).forUpdate().execute();
          return queue.claim(name, 10);
        });
      expect(during.map((j) => j.id)).toEqual([free]);
      expect((await claimOne(queue, name)).id).toBe(held);
    });
  });

  describe('concurrent claimers', () => {
    const JOB_COUNT = 300;
    const CLAIMERS = 4;
    /** Fewer than the in-process claimers: each child pays a TypeScript start-up of about a second. */
    const PROCESSES = 3;
    const BATCH = 7;
    const handles: DbHandle[] = [];
    const children: FixtureProcess[] = [];

    afterEach(async () => {
      await Promise.all(children.splice(0).map((c) => c.kill()));
      await Promise.all(handles.splice(0).map((h) => h.destroy()));
    });

    /** Enqueue due jobs in one transaction (system time: these claimers use the real clock). */
    async function enqueueMany(name: string): Promise<string[]> {
      const enqueuer = createQueue({ work: asWork(db()), dialect: services.database.dialect, clock: systemClock, leaseMs: LEASE_MS });
      return db()
        .transaction()
        .execute(async (trx) => {
          const ids: string[] = [];
          for (let n = 0; n < JOB_COUNT; n += 1) ids.push(await enqueuer.enqueue(asWork(trx), { queue: name, payload: { n }, runAt: 0 }));
          return ids;
        });
    }

    function expectEachClaimedOnce(claimedPerClaimer: string[][], ids: string[]): void {
      const all = claimedPerClaimer.flat();
      const seen = new Set<string>();
      const duplicates = all.filter((id) => (seen.has(id) ? true : (seen.add(id), false)));
      expect(duplicates).toEqual([]);
      expect([...seen].sort()).toEqual([...ids].sort());
    }

    it('several connection pools claiming at once get every job exactly once', async () => {
      // Each claimer has its own pool, as separate processes would. On PostgreSQL the claims really
      // overlap and FOR UPDATE SKIP LOCKED keeps them apart. better-sqlite3 runs each statement
      // synchronously, so within one process the claims interleave between statements but never
      // overlap; the child-process test below makes SQLite's cross-connection locking do the work.
      const name = uniqueQueue('concurrent');
      const ids = await enqueueMany(name);
      const claimers = Array.from({ length: CLAIMERS }, () => {
        const handle = createDb(database.url, { poolSize: 2 });
        handles.push(handle);
        return createQueue({ work: asWork(handle.db), dialect: handle.dialect, clock: systemClock, leaseMs: 60_000 });
      });
      // Connect every pool first so that no claimer is still connecting while the others drain the queue.
      await Promise.all(handles.map((h) => ping(h.db)));
      const results = await Promise.all(
        claimers.map(async (claimer) => {
          const mine: string[] = [];
          for (;;) {
            const jobs = await claimer.claim(name, BATCH);
            expect(jobs.length).toBeLessThanOrEqual(BATCH);
            if (jobs.length === 0) return mine;
            for (const job of jobs) {
              expect(job.attempt).toBe(1);
              mine.push(job.id);
            }
          }
        }),
      );
      expectEachClaimedOnce(results, ids);
      // Every claimer did some of the work: the claims really ran side by side.
      for (const mine of results) expect(mine.length).toBeGreaterThan(0);
      // The leases hold: nothing is claimable until they expire.
      expect(await claimers[0]!.claim(name, JOB_COUNT)).toEqual([]);
    });

    it('separate processes claiming at once get every job exactly once', async () => {
      const name = uniqueQueue('processes');
      const ids = await enqueueMany(name);
      for (let i = 0; i < PROCESSES; i += 1) {
        children.push(
          spawnFixture({
            FIXTURE_MODE: 'claim',
            FIXTURE_QUEUE: name,
            FIXTURE_BATCH: String(BATCH),
            MAILROOM_DATABASE_URL: database.url,
            ...database.secretEnv,
            MAILROOM_LEASE_MS: '60000',
          }),
        );
      }
      await Promise.all(children.map((c) => c.waitFor((m) => m.event === 'ready', 20_000)));
      for (const c of children) c.child.stdin.write('go\n');
      const reports = await Promise.all(children.map((c) => c.waitFor((m) => m.event === 'claimed', 20_000)));
      const perProcess = reports.map((r) => r.ids as string[]);
      for (const r of reports) for (const size of r.batchSizes as number[]) expect(size).toBeLessThanOrEqual(BATCH);
      expectEachClaimedOnce(perProcess, ids);
      for (const c of children) expect(await c.exited(5000)).toBe(0);
      const rows = await jobsOf(db(), name);
      expect(rows.every((r) => r.attempts === 1 && r.lease_token !== null)).toBe(true);
    });
  });
});
