/**
 * Mailroom's side of the `imap` suite: its IMAP listener (with the api role, or alone), a mailbox's app password,
 * the import of the bench's Maildir, and the timed runs both servers go through, as report rows.
 */
import { readFileSync } from 'node:fs';
import { processCpuMs } from './cpu.js';
import type { BenchDatabase } from './databases.js';
import { waitForImap } from './dovecot.js';
import type { Measurement } from './load.js';
import { apiRequest, MAILROOM_BIN, mailroomEnv } from './mailroom.js';
import { freeLoopbackPort, waitForHttp, type ManagedProcess } from './processes.js';
import type { Scope } from './scope.js';
import { latencyStats } from './smtp-load.js';
import { serverFlags, type SuiteContext } from './suite.js';

const API_READY_TIMEOUT_MS = 120_000;
const IMPORT_TIMEOUT_MS = 3600_000;

/** A server the cases talk to: where, as whom, and the CPU it has used so far (ms; null off Linux). */
export interface ImapTarget {
  name: string;
  port: number;
  user: string;
  password: string;
  cpuMs: () => number | null;
}

/**
 * The MAILROOM_* settings of an IMAP listener on 127.0.0.1:`port` (the imap role listens on MAILROOM_SMTP_HOST)
 * with LOGIN allowed without TLS on loopback, as the sandbox has it, and room for `sessions` sessions from one address
 * and one workspace.
 */
export function imapEnv(port: number, sessions: number): Record<string, string> {
  return {
    MAILROOM_SMTP_HOST: '127.0.0.1',
    MAILROOM_IMAP_PORT: String(port),
    MAILROOM_ALLOW_PLAINTEXT_AUTH: 'loopback',
    MAILROOM_IMAP_MAX_CLIENTS: String(sessions),
    MAILROOM_IMAP_MAX_CLIENTS_PER_IP: String(sessions),
    MAILROOM_IMAP_MAX_CLIENTS_PER_WORKSPACE: String(sessions),
  };
}

/** `mailroom serve --role imap` alone (no HTTP listener); ready once `user` can log in. Stopped with `scope`. */
export async function startMailroomImap(
  context: SuiteContext,
  scope: Scope,
  databaseUrl: string,
  login: { user: string; password: string },
  profileName: string,
): Promise<{ port: number; process: ManagedProcess }> {
  const port = await freeLoopbackPort();
  const proc = context.processes.start('mailroom serve --role imap', {
    args: [...serverFlags(context.settings, profileName), MAILROOM_BIN, 'serve', '--role', 'imap'],
    cwd: context.workDir,
    env: mailroomEnv({ MAILROOM_DATABASE_URL: databaseUrl, ...imapEnv(port, 1000) }),
  });
  scope.defer(proc.name, () => proc.stop());
  await waitForImap(port, proc, login.user, login.password, API_READY_TIMEOUT_MS, context.signal);
  return { port, process: proc };
}

/**
 * `mailroom serve` with the api role (and the given others) on free loopback ports, as `startMailroom` starts it but
 * with more time to be ready: with the imap role it loads more, and the IMAP cases run on busy machines too.
 */
export async function startMailroomApi(
  context: SuiteContext,
  scope: Scope,
  databaseUrl: string,
  roles: readonly string[],
  env: Record<string, string>,
  profileName: string,
): Promise<{ url: string; process: ManagedProcess }> {
  const port = await freeLoopbackPort();
  const proc = context.processes.start(`mailroom serve --role ${roles.join(',')}`, {
    args: [...serverFlags(context.settings, profileName), MAILROOM_BIN, 'serve', ...roles.flatMap((r) => ['--role', r])],
    cwd: context.workDir,
    env: mailroomEnv({ MAILROOM_DATABASE_URL: databaseUrl, MAILROOM_HTTP_HOST: '127.0.0.1', MAILROOM_HTTP_PORT: String(port), ...env }),
  });
  scope.defer(proc.name, () => proc.stop());
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/health`, proc, API_READY_TIMEOUT_MS, context.signal);
  return { url, process: proc };
}

/** POST /app/api/app-passwords as the owner's session: the password a mail client logs in to `mailbox` with. */
export async function createAppPassword(url: string, session: string, mailbox: string, signal: AbortSignal): Promise<string> {
  const res = await apiRequest(
    `${url}/app/api/app-passwords`,
    { method: 'POST', headers: { 'x-service-session': session, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'bench', mailbox }) },
    signal,
  );
  const password = res.status === 201 ? (JSON.parse(res.text) as { password?: unknown }).password : undefined;
  if (typeof password !== 'string') throw new Error(`POST /app/api/app-passwords answered ${res.status}: ${res.text.slice(0, 300)}`);
  return password;
}

/** `mailroom admin import-mailbox ADDRESS MAILDIR --json`: every message must be imported. Its time and rate. */
export async function importMaildir(context: SuiteContext, database: BenchDatabase, address: string, maildir: string, expected: number): Promise<{ ms: number; per_second: number }> {
  const started = performance.now();
  const stdout = await context.processes.run('mailroom admin import-mailbox', {
    args: [MAILROOM_BIN, 'admin', 'import-mailbox', address, maildir, '--json'],
    cwd: context.workDir,
    env: mailroomEnv({ MAILROOM_DATABASE_URL: database.url }),
    timeoutMs: IMPORT_TIMEOUT_MS,
  });
  const ms = performance.now() - started;
  const summary = JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as { imported?: number };
  if (summary.imported !== expected) throw new Error(`import-mailbox imported ${String(summary.imported)} of ${expected} messages:\n${stdout.slice(-500)}`);
  return { ms: Math.round(ms), per_second: Math.round((expected * 1000) / ms) };
}

/** Resident set of a process in KiB (VmRSS); null off Linux. */
export function residentKiB(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

/** A Mailroom process as a target. */
export function mailroomTarget(name: string, port: number, proc: ManagedProcess, user: string, password: string): ImapTarget {
  return { name, port, user, password, cpuMs: () => processCpuMs(proc.pid) };
}

/** Timed runs of one operation: wall time of each, and the server's CPU over all of them. */
export interface Runs {
  ms: number[];
  cpuMs: number | null;
}

/** One timed run of `op` on `target`, its CPU added to `runs`. */
export async function timed(target: ImapTarget, runs: Runs, op: () => Promise<void>): Promise<void> {
  const cpuBefore = target.cpuMs();
  const started = performance.now();
  await op();
  runs.ms.push(performance.now() - started);
  const cpuAfter = target.cpuMs();
  runs.cpuMs = cpuBefore === null || cpuAfter === null || runs.cpuMs === null ? null : runs.cpuMs + cpuAfter - cpuBefore;
}

/**
 * Runs as a Measurement: `requestsPerSec` is `perRun` operations (messages, searches) ÷ the median run's seconds,
 * the latencies are the runs' times, and the server's CPU is per operation.
 */
export function runsMeasurement(runs: Runs, perRun: number): Measurement {
  const latency = latencyStats(runs.ms);
  const total = runs.ms.reduce((a, b) => a + b, 0);
  const median = [...runs.ms].sort((a, b) => a - b)[Math.floor((runs.ms.length - 1) / 2)]!;
  return {
    requestsPerSec: (perRun * 1000) / median,
    latencyMs: latency,
    totalRequests: runs.ms.length * perRun,
    durationS: total / 1000,
    connections: 1,
    errors: 0,
    timeouts: 0,
    non2xx: 0,
    serverCpuUsPerRequest: runs.cpuMs === null ? null : (runs.cpuMs * 1000) / (runs.ms.length * perRun),
    serverCpuUtilization: runs.cpuMs === null || total === 0 ? null : runs.cpuMs / total,
  };
}
