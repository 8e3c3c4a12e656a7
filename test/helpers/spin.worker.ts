/**
 * A pool thread for test/thread-pool.test.ts: a task either waits (as an analysis waits on DNS) or keeps
 * its thread's CPU busy without a break (as a parser stuck on hostile input would), then answers its id.
 */
import { timedTask } from '../../src/lib/thread-pool.js';

export interface SpinTask {
  id: number;
  waitMs?: number;
  spinMs?: number;
}

async function run(task: SpinTask): Promise<string> {
  if (task.waitMs) await new Promise((resolve) => setTimeout(resolve, task.waitMs));
  const until = Date.now() + (task.spinMs ?? 0);
  let turns = 0;
  while (Date.now() < until) turns += 1;
  return `done ${task.id}${turns < 0 ? '' : ''}`;
}

export default timedTask(run);
