import autocannon from 'autocannon';
import { processCpuMs } from './cpu.js';

/** Seconds autocannon waits for one response before it counts a timeout. */
const REQUEST_TIMEOUT_S = 10;

export interface HttpLoad {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** Change each request before it is sent (e.g. a fresh Idempotency-Key header). */
  setupRequest?: (request: autocannon.Request) => autocannon.Request;
  connections: number;
  /** Seconds of discarded load before the measured run (JIT, caches, connection pools). */
  warmupS: number;
  durationS: number;
  /** The server's pid, to measure the CPU it spends per request (Linux). */
  serverPid?: number | undefined;
  /** The server's last log lines, printed when the run fails (so a non-2xx answer can be traced). */
  serverTail?: () => string;
}

/** Bodies of non-2xx answers kept for the error message. */
const KEPT_FAILURES = 3;

/** One measured run, in the units the report prints. */
export interface Measurement {
  /** Mean of autocannon's per-second request counts. */
  requestsPerSec: number;
  /** Latency percentiles and mean, in milliseconds. */
  latencyMs: { p50: number; p90: number; p99: number; mean: number; max: number };
  totalRequests: number;
  durationS: number;
  connections: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  /** Server CPU time (user + system) per completed request during the measured run, in µs; null off Linux. */
  serverCpuUsPerRequest: number | null;
  /** Server CPU seconds per wall-clock second during the run (about 1 means its event loop was saturated). */
  serverCpuUtilization: number | null;
}

function cannon(options: autocannon.Options, signal: AbortSignal): Promise<autocannon.Result> {
  signal.throwIfAborted();
  return new Promise((resolve, reject) => {
    const onAbort = () => instance.stop();
    const instance = autocannon(options, (err: unknown, result) => {
      signal.removeEventListener('abort', onAbort);
      if (err) reject(err instanceof Error ? err : new Error(`autocannon: ${JSON.stringify(err)}`));
      else if (signal.aborted) reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
      else resolve(result);
    });
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Warm up, then measure closed-loop HTTP load with autocannon (each connection sends its next
 * request when the previous answer arrives). Throws when the measured run saw errors, timeouts or
 * non-2xx answers: a rate of failures is not a rate of work.
 */
export async function measureHttp(target: string, load: HttpLoad, signal: AbortSignal): Promise<Measurement> {
  const failures: string[] = [];
  const keepFailure = (status: number, body: string) => {
    if ((status < 200 || status > 299) && failures.length < KEPT_FAILURES) failures.push(`${status} ${body.slice(0, 300)}`);
  };
  const options: autocannon.Options = {
    url: load.url,
    method: load.method ?? 'GET',
    connections: load.connections,
    timeout: REQUEST_TIMEOUT_S,
    ...(load.headers ? { headers: load.headers } : {}),
    ...(load.body !== undefined ? { body: load.body } : {}),
    requests: [{ ...(load.setupRequest ? { setupRequest: load.setupRequest } : {}), onResponse: keepFailure }],
  };
  if (load.warmupS > 0) await cannon({ ...options, duration: load.warmupS }, signal);
  const cpuBefore = processCpuMs(load.serverPid);
  const wallBefore = performance.now();
  const result = await cannon({ ...options, duration: load.durationS }, signal);
  const cpuAfter = processCpuMs(load.serverPid);
  const wallMs = performance.now() - wallBefore;
  const cpuMs = cpuBefore !== null && cpuAfter !== null ? cpuAfter - cpuBefore : null;
  const measurement: Measurement = {
    requestsPerSec: result.requests.average,
    latencyMs: {
      p50: result.latency.p50,
      p90: result.latency.p90,
      p99: result.latency.p99,
      mean: result.latency.mean,
      max: result.latency.max,
    },
    totalRequests: result.requests.total,
    durationS: result.duration,
    connections: result.connections,
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    serverCpuUsPerRequest: cpuMs !== null && result.requests.total > 0 ? (cpuMs * 1000) / result.requests.total : null,
    serverCpuUtilization: cpuMs !== null ? cpuMs / wallMs : null,
  };
  if (measurement.errors > 0 || measurement.non2xx > 0) {
    throw new Error(
      `${target}: ${measurement.non2xx} non-2xx answers, ${measurement.errors} connection errors (${measurement.timeouts} timeouts) ` +
        `out of ${measurement.totalRequests} requests; the numbers would be meaningless\n` +
        `  statuses: ${JSON.stringify(result.statusCodeStats)}\n  first answers: ${failures.join(' | ') || 'none kept'}\n` +
        `  server log tail:\n${load.serverTail?.() ?? '(not kept)'}`,
    );
  }
  if (measurement.totalRequests === 0) throw new Error(`${target}: no request completed`);
  return measurement;
}
