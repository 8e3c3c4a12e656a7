import { describe, expect, it } from 'vitest';
import { threadCpuMs, threadCpuPerOp } from '../bench/lib/cpu.js';

describe('bench: CPU per thread', () => {
  it('reads each thread of a process, and the busy thread is the one that grew', { skip: process.platform !== 'linux' }, () => {
    const before = threadCpuMs(process.pid)!;
    expect(before.has(process.pid)).toBe(true);
    // Keep this (main) thread on the CPU for at least 80 ms of its own time.
    const start = process.cpuUsage();
    let spin = 0;
    while (process.cpuUsage(start).user < 80_000) spin++;
    const after = threadCpuMs(process.pid)!;
    expect(spin).toBeGreaterThan(0);
    // /proc counts in clock ticks (10 ms), so allow for one tick at each end.
    expect(after.get(process.pid)! - before.get(process.pid)!).toBeGreaterThanOrEqual(60);
  });

  it('divides each thread’s growth by the operations: the main thread apart, the others most first', () => {
    const before = new Map([
      [1, 10],
      [2, 5],
      [4, 7],
    ]);
    const after = new Map([
      [1, 20],
      [2, 5.5],
      [3, 2],
      [4, 7],
    ]);
    // Thread 3 started in between (counted from zero); thread 4 used nothing and is left out.
    expect(threadCpuPerOp(before, after, 1, 10)).toEqual({ main: 1000, others: [200, 50] });
  });
});
