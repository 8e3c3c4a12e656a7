import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/lib/logger.js';
import { createThreadPool } from '../src/lib/thread-pool.js';
import type { SpinTask } from './helpers/spin.worker.js';

/**
 * The time limit of lib/thread-pool.ts on real worker threads: a task stuck in CPU work is given up at its
 * limit, its thread replaced, and the tasks that shared the thread with it are run again, not lost or held.
 */
describe('thread pool time limit', () => {
  const LIMIT_MS = 1500;
  /** Generous: the stuck task alone would hold its thread for a minute. */
  const GENEROUS_MS = 10_000;
  const ran: number[] = [];
  const pool = createThreadPool<SpinTask, string>({
    near: import.meta.url,
    worker: 'helpers/spin.worker',
    threads: 1,
    tasksPerThread: 8,
    what: 'test',
    logger: createLogger('silent'),
    inProcess: (task) => {
      ran.push(task.id);
      return Promise.resolve(`in process ${task.id}`);
    },
    timeLimit: { ms: LIMIT_MS, onTimeout: (task) => `timed out ${task.id}` },
  });
  afterAll(() => pool.close());

  it('gives up a stuck task at its limit and runs the tasks it held up again, each on a thread of its own', async () => {
    expect(await pool.run({ id: 0 })).toBe('done 0');
    expect(pool.stats()).toEqual({ queued: 0, restarts: 0 });
    const started = performance.now();
    // Tasks 1 and 2 wait on the thread when task 3 takes its CPU for a minute.
    const beside = [pool.run({ id: 1, waitMs: 300 }), pool.run({ id: 2, waitMs: 300 })];
    const stuck = pool.run({ id: 3, spinMs: 60_000 });
    // And task 5 comes while task 3 holds the thread.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const after = pool.run({ id: 5 });
    expect(await stuck).toBe('timed out 3');
    expect(await Promise.all([...beside, after])).toEqual(['done 1', 'done 2', 'done 5']);
    expect(performance.now() - started).toBeLessThan(GENEROUS_MS);
    // Nothing fell back to the calling thread, and the new thread takes work.
    expect(ran).toEqual([]);
    expect(await pool.run({ id: 4 })).toBe('done 4');
    // The stuck thread's replacement is counted (mailroom_analysis_thread_restarts_total).
    expect(pool.stats().restarts).toBe(1);
  });

  it('starts a task’s time when a thread takes it, not while it waits for a place', async () => {
    // Nine tasks of 1 s for eight places: the ninth waits about a second, and runs its second within the limit.
    const tasks = Array.from({ length: 9 }, (_, i) => pool.run({ id: 10 + i, waitMs: LIMIT_MS - 500 }));
    expect(await Promise.all(tasks)).toEqual(Array.from({ length: 9 }, (_, i) => `done ${10 + i}`));
  });
});
