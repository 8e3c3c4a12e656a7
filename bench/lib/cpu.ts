import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

let ticksPerSecond: number | null | undefined;

function clockTicks(): number | null {
  if (ticksPerSecond !== undefined) return ticksPerSecond;
  try {
    const value = Number(execFileSync('getconf', ['CLK_TCK'], { timeout: 2000, stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim());
    ticksPerSecond = Number.isInteger(value) && value > 0 ? value : null;
  } catch {
    ticksPerSecond = null;
  }
  return ticksPerSecond;
}

/** User + system CPU in milliseconds from a process's or a thread's `stat` line; null if unreadable. */
function statCpuMs(stat: string, ticks: number): number | null {
  // Fields after "(comm)": state is field 3, utime field 14, stime field 15 (proc(5)).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) return null;
  return ((utime + stime) * 1000) / ticks;
}

/**
 * CPU time (user + system, all threads) a process has used so far, in milliseconds; null where
 * /proc is not available (non-Linux). CPU per request is far less sensitive to other load on the
 * machine than requests per second, so the report prints both.
 */
export function processCpuMs(pid: number | undefined): number | null {
  if (pid === undefined || process.platform !== 'linux') return null;
  const ticks = clockTicks();
  if (ticks === null) return null;
  try {
    return statCpuMs(readFileSync(`/proc/${pid}/stat`, 'utf8'), ticks);
  } catch {
    return null;
  }
}

/**
 * CPU time of the whole machine so far (all cores, from /proc/stat), in milliseconds: busy (everything
 * but idle and iowait) and total. null off Linux. Busy ÷ wall time between two readings is how many
 * cores were in use, e.g. to see whether a run had the machine to itself or saturated it.
 */
export function machineCpuMs(): { busy: number; total: number } | null {
  if (process.platform !== 'linux') return null;
  const ticks = clockTicks();
  if (ticks === null) return null;
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
    // cpu  user nice system idle iowait irq softirq steal guest guest_nice (guest time is already in user)
    const fields = line.trim().split(/\s+/).slice(1, 9).map(Number);
    if (fields.length < 8 || fields.some((n) => !Number.isFinite(n))) return null;
    const [user, nice, system, idle, iowait, irq, softirq, steal] = fields as [number, number, number, number, number, number, number, number];
    const busy = user + nice + system + irq + softirq + steal;
    return { busy: (busy * 1000) / ticks, total: ((busy + idle + iowait) * 1000) / ticks };
  } catch {
    return null;
  }
}

/**
 * Scheduler statistics of a process's main thread (its event loop), in milliseconds so far: time on a
 * CPU and time runnable but waiting for one (/proc/<pid>/schedstat). null where unavailable. Waiting
 * for a CPU is neither CPU time nor idleness: it is what a machine busy with other work costs.
 */
export function mainThreadSchedMs(pid: number | undefined): { runMs: number; waitMs: number } | null {
  if (pid === undefined || process.platform !== 'linux') return null;
  try {
    const [run, wait] = readFileSync(`/proc/${pid}/schedstat`, 'utf8').trim().split(/\s+/).map(Number);
    if (run === undefined || wait === undefined || !Number.isFinite(run) || !Number.isFinite(wait)) return null;
    return { runMs: run / 1e6, waitMs: wait / 1e6 };
  } catch {
    return null;
  }
}

/**
 * CPU time (user + system) each thread of a process has used so far, in milliseconds, by thread id
 * (the main thread's id is the pid); null off Linux. Tells which thread a service's time goes to: the
 * event loop, its worker threads (analysis, store, DKIM), or V8's compiler and collector threads.
 */
export function threadCpuMs(pid: number | undefined): Map<number, number> | null {
  if (pid === undefined || process.platform !== 'linux') return null;
  const ticks = clockTicks();
  if (ticks === null) return null;
  try {
    const byThread = new Map<number, number>();
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const cpu = statCpuMs(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8'), ticks);
        if (cpu !== null) byThread.set(Number(tid), cpu);
      } catch {
        // The thread ended between listing and reading.
      }
    }
    return byThread;
  } catch {
    return null;
  }
}

/**
 * Per-operation CPU of each thread between two `threadCpuMs` readings, in µs: the main thread, then every other
 * thread that used any, most first (threads that started in between count from zero).
 */
export function threadCpuPerOp(before: Map<number, number>, after: Map<number, number>, pid: number, operations: number): { main: number; others: number[] } {
  const used = (tid: number) => ((after.get(tid) ?? 0) - (before.get(tid) ?? 0)) * 1000 / Math.max(1, operations);
  const others = [...after.keys()]
    .filter((tid) => tid !== pid)
    .map(used)
    .filter((us) => us >= 1)
    .sort((a, b) => b - a)
    .map(Math.round);
  return { main: Math.round(used(pid)), others };
}

/** User + system CPU of a process plus that of its children it has waited for (cutime + cstime), in ms; null if unreadable. */
function statTreeCpuMs(stat: string, ticks: number): { ppid: number; ms: number } | null {
  // After "(comm)": ppid is field 4, utime/stime fields 14/15, cutime/cstime fields 16/17 (proc(5)).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
  const [ppid, utime, stime, cutime, cstime] = [fields[1], fields[11], fields[12], fields[13], fields[14]];
  if ([ppid, utime, stime, cutime, cstime].some((n) => n === undefined || !Number.isFinite(n))) return null;
  return { ppid: ppid!, ms: ((utime! + stime! + cutime! + cstime!) * 1000) / ticks };
}

/**
 * CPU time (user + system) of a process and all its children so far, in ms: its own, that of the children it has
 * reaped (which the kernel adds to it) and that of the children still running. For a server made of short-lived
 * worker processes under one parent, such as Postfix's master(8) and its daemons. One level deep; null off Linux.
 */
export function processTreeCpuMs(pid: number | undefined): number | null {
  if (pid === undefined || process.platform !== 'linux') return null;
  const ticks = clockTicks();
  if (ticks === null) return null;
  let total: number;
  try {
    const own = statTreeCpuMs(readFileSync(`/proc/${pid}/stat`, 'utf8'), ticks);
    if (own === null) return null;
    total = own.ms;
  } catch {
    return null;
  }
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === pid) continue;
    try {
      const child = statTreeCpuMs(readFileSync(`/proc/${entry}/stat`, 'utf8'), ticks);
      if (child?.ppid === pid) total += child.ms;
    } catch {
      // The process ended between listing and reading (its time is then in the parent's cutime/cstime).
    }
  }
  return total;
}
