/** The answer of GET /health/ready: `ok` when every check is, each check `ok` or why it is not. */
export interface ReadyReport {
  ok: boolean;
  checks: Record<string, string>;
}

/** A readiness check: null when it holds, else a short reason (never an error's own text, which may say too much). */
export type ReadyCheck = () => Promise<string | null> | string | null;

/**
 * Whether this process should be sent work (GET /health/ready): its named checks (database, migrations, listeners)
 * and whether it is shutting down, which turns it unready at once, before any listener closes.
 */
export interface Readiness {
  add(name: string, check: ReadyCheck): void;
  /** The process is stopping: every later report is unready. */
  stopping(): void;
  readonly isStopping: boolean;
  report(): Promise<ReadyReport>;
}

/** Longest a check may take before it counts as failed (a hung database must not hang the probe). */
export const READY_CHECK_TIMEOUT_MS = 2000;

function bounded(check: ReadyCheck, timeoutMs: number): Promise<string | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`no answer within ${timeoutMs} ms`), timeoutMs);
  });
  const run = Promise.resolve()
    .then(check)
    .catch(() => 'failed');
  return Promise.race([run, late]).finally(() => clearTimeout(timer));
}

export function createReadiness(options: { timeoutMs?: number } = {}): Readiness {
  const timeoutMs = options.timeoutMs ?? READY_CHECK_TIMEOUT_MS;
  const checks: Array<[string, ReadyCheck]> = [];
  let stopping = false;
  return {
    add(name, check) {
      checks.push([name, check]);
    },
    stopping() {
      stopping = true;
    },
    get isStopping() {
      return stopping;
    },
    async report() {
      const results = await Promise.all(checks.map(([, check]) => bounded(check, timeoutMs)));
      const report: ReadyReport = { ok: !stopping, checks: {} };
      checks.forEach(([name], i) => {
        report.checks[name] = results[i] ?? 'ok';
        if (results[i] !== null) report.ok = false;
      });
      // Last, so that a report made while the checks ran still says so.
      report.ok &&= !stopping;
      report.checks.running = stopping ? 'shutting down' : 'ok';
      return report;
    },
  };
}
