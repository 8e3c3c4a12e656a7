/**
 * SMTP load for the smtp suite: Postfix's `smtp-source` (count-based, calibrated so the measured run
 * lasts about BENCH_DURATION_S), a low-rate latency probe beside it (smtp-source times nothing), and a
 * nodemailer pool sending real MIME for a fixed time.
 */
import { execFileSync } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { join } from 'node:path';
import nodemailer from 'nodemailer';
import { processCpuMs } from './cpu.js';
import type { Measurement } from './load.js';
import type { GeneratedMail } from './mail-content.js';
import { describeExit, indent, type ProcessGroup } from './processes.js';

/** Where Debian's postfix package puts smtp-source (and where other layouts might). */
const SMTP_SOURCE_CANDIDATES = ['/usr/sbin/smtp-source', '/usr/lib/postfix/sbin/smtp-source', '/usr/lib/postfix/smtp-source', '/usr/libexec/postfix/smtp-source'];
const APT_TIMEOUT_MS = 600_000;

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The smtp-source binary: on PATH or in one of postfix's usual places; null when absent. */
export function locateSmtpSource(): string | null {
  for (const dir of (process.env.PATH ?? '').split(':').filter(Boolean)) {
    const path = join(dir, 'smtp-source');
    if (executable(path)) return path;
  }
  return SMTP_SOURCE_CANDIDATES.find(executable) ?? null;
}

/**
 * Whether installing a Debian package now would leave its daemon stopped: true when
 * /usr/sbin/policy-rc.d answers 101 ("action forbidden") for starting postfix, as in containers.
 */
function serviceStartsForbidden(): boolean {
  const policy = '/usr/sbin/policy-rc.d';
  if (!existsSync(policy)) return false;
  try {
    execFileSync(policy, ['postfix', 'start'], { timeout: 5000, stdio: 'ignore' });
    return false;
  } catch (err) {
    return (err as { status?: number }).status === 101;
  }
}

/**
 * smtp-source, installed with `apt-get install postfix` when missing (Debian/Ubuntu, as root). The
 * install only runs where policy-rc.d forbids starting services, so the postfix daemon is never
 * started; elsewhere the bench says what to run and the smtp-source cases fail.
 */
export async function ensureSmtpSource(processes: ProcessGroup, log: (line: string) => void): Promise<string> {
  const found = locateSmtpSource();
  if (found) return found;
  const manual = 'install it by hand without starting the postfix daemon (Debian: `DEBIAN_FRONTEND=noninteractive apt-get install -y postfix`, then `systemctl disable --now postfix`)';
  if (process.platform !== 'linux' || !existsSync('/usr/bin/apt-get')) throw new Error(`smtp-source (Postfix) is missing and there is no apt-get here; ${manual}`);
  if (process.getuid?.() !== 0) throw new Error(`smtp-source (Postfix) is missing and the bench does not run as root; ${manual}`);
  if (!serviceStartsForbidden()) {
    throw new Error(`smtp-source (Postfix) is missing; the bench installs it only where policy-rc.d keeps the postfix daemon from starting, which is not the case here; ${manual}`);
  }
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = () =>
    processes.run('apt-get install postfix', { command: '/usr/bin/apt-get', args: ['install', '-y', '--no-install-recommends', 'postfix'], cwd: '/', env, timeoutMs: APT_TIMEOUT_MS });
  log('  smtp-source is missing: apt-get install -y postfix (for its smtp-source test client; the daemon is not started)…');
  try {
    await install();
  } catch {
    log('  apt-get install failed; apt-get update, then once more…');
    await processes.run('apt-get update', { command: '/usr/bin/apt-get', args: ['update'], cwd: '/', env, timeoutMs: APT_TIMEOUT_MS });
    await install();
  }
  const installed = locateSmtpSource();
  if (!installed) throw new Error(`postfix is installed but no smtp-source was found in ${SMTP_SOURCE_CANDIDATES.join(', ')}`);
  return installed;
}

/** Percentiles of latency samples in milliseconds (NaN when there are none). */
export function latencyStats(samples: readonly number[]): Measurement['latencyMs'] {
  if (samples.length === 0) return { p50: NaN, p90: NaN, p99: NaN, mean: NaN, max: NaN };
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
  return { p50: at(0.5), p90: at(0.9), p99: at(0.99), mean: sorted.reduce((s, v) => s + v, 0) / sorted.length, max: sorted[sorted.length - 1]! };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The message smtp-source sends, in the same shape: From, To, Date, Message-Id, then `bodyBytes` of 80-column lines. */
export function smtpSourceLikeMessage(from: string, to: string, messageId: string, bodyBytes: number): Buffer {
  const lines: string[] = [];
  for (let size = 0, n = 1; size < bodyBytes; n++) {
    const line = `${n}${'X'.repeat(Math.max(0, Math.min(78, bodyBytes - size - 2) - String(n).length))}`;
    lines.push(line);
    size += line.length + 2;
  }
  return Buffer.from(`From: <${from}>\r\nTo: <${to}>\r\nDate: ${new Date().toUTCString()}\r\nMessage-Id: <${messageId}>\r\n\r\n${lines.join('\r\n')}\r\n`);
}

export interface ProbeResult {
  /** Messages the probe had answered 250. */
  sent: number;
  latenciesMs: number[];
  errors: string[];
}

/**
 * A latency probe beside a count-based load: one message at a time, one every `intervalMs`, each
 * timed from MAIL FROM to the final 250 (plus connect and QUIT when `reuse` is false, as for the load
 * it accompanies). Its messages are counted with the load's when checking what was stored.
 */
export function startLatencyProbe(options: { port: number; reuse: boolean; from: string; to: string; bodyBytes: number; intervalMs: number; runId: string }): {
  stop(): Promise<ProbeResult>;
} {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: options.port,
    secure: false,
    ignoreTLS: true,
    name: 'probe.bench.localhost',
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 60_000,
    ...(options.reuse ? { pool: true, maxConnections: 1, maxMessages: Infinity } : {}),
  });
  const result: ProbeResult = { sent: 0, latenciesMs: [], errors: [] };
  let running = true;
  const loop = (async () => {
    for (let n = 1; running; n++) {
      const raw = smtpSourceLikeMessage(options.from, options.to, `probe.${options.runId}.${n}@sender.test`, options.bodyBytes);
      const started = performance.now();
      try {
        await transport.sendMail({ envelope: { from: options.from, to: [options.to] }, raw });
        result.sent++;
        // With a reused connection, the first message also paid for connecting and EHLO.
        if (!(options.reuse && n === 1)) result.latenciesMs.push(performance.now() - started);
      } catch (err) {
        result.errors.push(err instanceof Error ? err.message : String(err));
        if (result.errors.length >= 5) break;
      }
      const wait = options.intervalMs - (performance.now() - started);
      if (running && wait > 0) await sleep(wait);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      transport.close();
      return result;
    },
  };
}

/** Run a command to completion; its wall time in ms. Rejects on a non-zero exit, on abort and after `timeoutMs`. */
async function runTimed(processes: ProcessGroup, name: string, command: string, args: string[], timeoutMs: number, signal: AbortSignal): Promise<number> {
  signal.throwIfAborted();
  const started = performance.now();
  const proc = processes.start(name, { command, args, cwd: '/', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C' } });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    void proc.stop(1000);
  }, timeoutMs);
  const onAbort = () => void proc.stop(1000);
  signal.addEventListener('abort', onAbort, { once: true });
  const status = await proc.exited;
  const wallMs = performance.now() - started;
  clearTimeout(timer);
  signal.removeEventListener('abort', onAbort);
  signal.throwIfAborted();
  if (timedOut) throw new Error(`${name} did not finish within ${timeoutMs / 1000} s\n${indent(proc.tail())}`);
  if (status.code !== 0) throw new Error(`${name} failed (${describeExit(status)})\n${indent(proc.tail())}`);
  return wallMs;
}

export interface SmtpSourceLoad {
  binary: string;
  port: number;
  /** Parallel sessions (-s). */
  sessions: number;
  /** -d: send every message of a session over one connection; otherwise one message per connection. */
  reuse: boolean;
  /** Payload bytes per message (-l). */
  bodyBytes: number;
  from: string;
  to: string;
  warmupS: number;
  durationS: number;
  /** Fewest messages in a run (also the first calibration run). */
  minMessages: number;
  /** Most messages in the measured run (e.g. to stay within the ephemeral ports for one-shot connections). */
  maxMessages: number;
  /** Latency probe interval, ms. */
  probeIntervalMs: number;
  serverPid: number | undefined;
  /** The server's CPU time so far, ms (default: the `serverPid` process alone). */
  serverCpuMs?: () => number | null;
  /**
   * For a server that answers 250 before it delivers (Postfix): waits until `count` more messages have arrived and
   * resolves with the last arrival (epoch ms). A run then lasts from its start to that arrival, not to smtp-source's exit.
   */
  arrivals?: (count: number, signal: AbortSignal) => Promise<number>;
}

export interface SmtpRun {
  measurement: Measurement;
  /** Every message this target was sent and answered 250: calibration, measured run and probe. */
  delivered: number;
  /** The measured run's smtp-source message count (its rate is this ÷ wall time). */
  measuredMessages: number;
  probeSamples: number;
  /** Mean time per message per session by Little's law (sessions × wall ÷ messages), ms. */
  littleMeanMs: number;
  /** When smtp-source exited in the measured run, s from its start (before the wall time's end only with `arrivals`). */
  loadExitS: number;
}

/**
 * Calibrate (which is also the warm-up): runs of smtp-source until BENCH_WARMUP_S has passed, at
 * least one. Then one run sized to last about BENCH_DURATION_S at the calibrated rate, timed from
 * start to exit (with `arrivals`: to the last arrival): messages/s = messages ÷ wall time. A latency
 * probe runs beside the measured run.
 * smtp-source exits non-zero on any unexpected reply, so a refused or failed message fails the run.
 */
export async function measureSmtpSource(target: string, load: SmtpSourceLoad, processes: ProcessGroup, signal: AbortSignal, log: (line: string) => void): Promise<SmtpRun> {
  const args = (count: number) => [
    ...(load.reuse ? ['-d'] : []),
    '-s', String(load.sessions),
    '-m', String(count),
    '-l', String(load.bodyBytes),
    '-M', 'client.bench.localhost',
    '-f', load.from,
    '-t', load.to,
    `127.0.0.1:${load.port}`,
  ];
  // Wall time from the start of a run to its end: smtp-source's exit, or the last arrival of `count` messages.
  let exitMs = 0;
  const timedRun = async (name: string, count: number, timeoutMs: number, beforeArrivals: () => Promise<number>): Promise<number> => {
    const startedAt = Date.now();
    const wallMs = await runTimed(processes, name, load.binary, args(count), timeoutMs, signal);
    exitMs = wallMs;
    if (!load.arrivals) return wallMs;
    const extra = await beforeArrivals();
    return Math.max(wallMs, (await load.arrivals(count + extra, signal)) - startedAt);
  };
  const serverCpu = load.serverCpuMs ?? (() => processCpuMs(load.serverPid));
  let delivered = 0;
  let warmMs = 0;
  let count = load.minMessages;
  let rate = 0;
  for (let round = 0; round < 6; round++) {
    const wall = await timedRun(`smtp-source (calibration, ${target})`, count, Math.max(120_000, load.warmupS * 3000), async () => 0);
    delivered += count;
    warmMs += wall;
    rate = count / (wall / 1000);
    if (warmMs >= load.warmupS * 1000) break;
    count = Math.max(load.minMessages, Math.round((rate * (load.warmupS * 1000 - warmMs)) / 1000));
  }
  const messages = Math.min(load.maxMessages, Math.max(load.minMessages, Math.round(rate * load.durationS)));
  log(`    calibrated at ${rate.toFixed(0)} msg/s: measuring ${messages} messages`);

  const probe = startLatencyProbe({ port: load.port, reuse: load.reuse, from: load.from, to: load.to, bodyBytes: load.bodyBytes, intervalMs: load.probeIntervalMs, runId: `${process.pid}-${Date.now()}` });
  const cpuBefore = serverCpu();
  let wallMs = 0;
  let failure: Error | null = null;
  // With `arrivals`, the probe stops when smtp-source exits and its messages are awaited with the load's.
  let stopped: Promise<ProbeResult> | null = null;
  const stopProbe = () => (stopped ??= probe.stop());
  try {
    wallMs = await timedRun(`smtp-source (${target})`, messages, Math.max(60_000, load.durationS * 5000), async () => (await stopProbe()).sent);
  } catch (err) {
    failure = err instanceof Error ? err : new Error(String(err));
  }
  const cpuAfter = serverCpu();
  // Always close the probe's connection, also when the run failed.
  const probeResult = await stopProbe();
  if (failure !== null) throw failure;
  delivered += messages + probeResult.sent;
  if (probeResult.errors.length > 0) throw new Error(`${target}: the latency probe failed: ${probeResult.errors[0]}`);
  const cpuMs = cpuBefore !== null && cpuAfter !== null ? cpuAfter - cpuBefore : null;
  const handled = messages + probeResult.sent;
  const measurement: Measurement = {
    requestsPerSec: messages / (wallMs / 1000),
    latencyMs: latencyStats(probeResult.latenciesMs),
    totalRequests: messages,
    durationS: wallMs / 1000,
    connections: load.sessions,
    errors: 0,
    timeouts: 0,
    non2xx: 0,
    serverCpuUsPerRequest: cpuMs !== null ? (cpuMs * 1000) / handled : null,
    serverCpuUtilization: cpuMs !== null ? cpuMs / wallMs : null,
  };
  return { measurement, delivered, measuredMessages: messages, probeSamples: probeResult.latenciesMs.length, littleMeanMs: (load.sessions * wallMs) / messages, loadExitS: exitMs / 1000 };
}

export interface MimeLoad {
  port: number;
  /** nodemailer pool connections; as many messages are in flight. */
  connections: number;
  next: () => GeneratedMail;
  warmupS: number;
  durationS: number;
  serverPid: number | undefined;
}

export interface MimeRun {
  measurement: Measurement;
  /** Every message answered 250 (warm-up, measured window and the ones finishing after it). */
  delivered: number;
  withAttachment: number;
}

/**
 * Closed-loop nodemailer load: `connections` senders share a pool of as many SMTP connections and
 * each sends its next message when the previous is answered. Warm-up, then a measured window:
 * messages/s = messages answered 250 inside the window ÷ its length; latency = sendMail time
 * (MIME build and transaction) of messages started and finished inside it. Any failure fails the run.
 */
export async function measureNodemailer(target: string, load: MimeLoad, signal: AbortSignal): Promise<MimeRun> {
  signal.throwIfAborted();
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: load.port,
    secure: false,
    ignoreTLS: true,
    name: 'client.bench.localhost',
    pool: true,
    maxConnections: load.connections,
    maxMessages: Infinity,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 60_000,
  });
  const start = performance.now();
  const windowStart = start + load.warmupS * 1000;
  const windowEnd = windowStart + load.durationS * 1000;
  // Server CPU time at the window's edges, read from timers while the senders run.
  const cpu: { before: number | null; after: number | null } = { before: null, after: null };
  const cpuTimer = setTimeout(() => {
    cpu.before = processCpuMs(load.serverPid);
  }, windowStart - start);
  const cpuEndTimer = setTimeout(() => {
    cpu.after = processCpuMs(load.serverPid);
  }, windowEnd - start);
  const latencies: number[] = [];
  let inWindow = 0;
  let delivered = 0;
  let withAttachment = 0;
  const errors: string[] = [];
  const sender = async () => {
    while (performance.now() < windowEnd && errors.length === 0 && !signal.aborted) {
      const mail = load.next();
      const started = performance.now();
      try {
        await transport.sendMail({ ...mail.options, envelope: mail.envelope });
      } catch (err) {
        errors.push(err instanceof Error ? err.message : String(err));
        return;
      }
      const finished = performance.now();
      delivered++;
      if (mail.hasAttachment) withAttachment++;
      if (finished >= windowStart && finished <= windowEnd) inWindow++;
      if (started >= windowStart && finished <= windowEnd) latencies.push(finished - started);
    }
  };
  try {
    await Promise.all(Array.from({ length: load.connections }, sender));
  } finally {
    clearTimeout(cpuTimer);
    clearTimeout(cpuEndTimer);
    transport.close();
  }
  signal.throwIfAborted();
  if (errors.length > 0) throw new Error(`${target}: sendMail failed (${errors.length} errors, first: ${errors[0]}); the numbers would be meaningless`);
  if (inWindow === 0) throw new Error(`${target}: no message completed in the measured window`);
  const cpuMs = cpu.before !== null && cpu.after !== null ? cpu.after - cpu.before : null;
  const measurement: Measurement = {
    requestsPerSec: inWindow / load.durationS,
    latencyMs: latencyStats(latencies),
    totalRequests: inWindow,
    durationS: load.durationS,
    connections: load.connections,
    errors: 0,
    timeouts: 0,
    non2xx: 0,
    serverCpuUsPerRequest: cpuMs !== null ? (cpuMs * 1000) / inWindow : null,
    serverCpuUtilization: cpuMs !== null ? cpuMs / (load.durationS * 1000) : null,
  };
  return { measurement, delivered, withAttachment };
}
