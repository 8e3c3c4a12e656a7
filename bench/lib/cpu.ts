import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

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
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after "(comm)": state is field 3, utime field 14, stime field 15 (proc(5)).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    if (!Number.isFinite(utime) || !Number.isFinite(stime)) return null;
    return ((utime + stime) * 1000) / ticks;
  } catch {
    return null;
  }
}
