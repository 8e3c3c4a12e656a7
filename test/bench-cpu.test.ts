import { spawn, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { processCpuMs, processTreeCpuMs, threadCpuMs, threadCpuPerOp } from '../bench/lib/cpu.js';

/** A child Node process that keeps a CPU busy for `ms` of its own time, then exits (or stays, idle, with `stay`). */
const spinArgs = (ms: number, stay = false) => ['-e', `const s = process.cpuUsage(); while (process.cpuUsage(s).user < ${ms * 1000});${stay ? ' setInterval(() => {}, 1000);' : ''}`];

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

  it('counts the CPU of a process\'s children: those that exited and those still running (Postfix\'s daemons)', { skip: process.platform !== 'linux' }, async () => {
    const ownBefore = processCpuMs(process.pid)!;
    const treeBefore = processTreeCpuMs(process.pid)!;
    // A child that exited and was reaped: its time is in this process's cutime/cstime.
    expect(spawnSync(process.execPath, spinArgs(150)).status).toBe(0);
    // A child still running: its time is read from its own /proc entry.
    const running = spawn(process.execPath, spinArgs(150, true), { stdio: 'ignore' });
    const exited = new Promise((resolve) => running.once('exit', resolve));
    try {
      const deadline = Date.now() + 20_000;
      while ((processCpuMs(running.pid) ?? 0) < 150 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      const tree = processTreeCpuMs(process.pid)! - treeBefore;
      const own = processCpuMs(process.pid)! - ownBefore;
      // Both children's spins (less a clock tick each), beyond this process's own time.
      expect(tree - own).toBeGreaterThanOrEqual(250);
    } finally {
      running.kill('SIGKILL');
      await exited;
    }
  });
});
