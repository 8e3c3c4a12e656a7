import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { freeLoopbackPort, type ManagedProcess, type ProcessGroup, waitForHttp, waitForSmtp } from './processes.js';
import type { Scope } from './scope.js';
import { serverFlags, type SuiteContext } from './suite.js';

/** The repository root (bench/lib/ → ../..). */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const OWN_BIN = join(ROOT, 'bin', 'mailroom.js');
/**
 * MAILROOM_BENCH_BIN runs another build's `bin/mailroom.js` (e.g. a git worktree holding a change),
 * so two builds can be compared with the same harness; that build is not rebuilt by the bench.
 */
const OTHER_BIN = process.env.MAILROOM_BENCH_BIN?.trim() ? resolve(process.env.MAILROOM_BENCH_BIN.trim()) : null;
const BIN = OTHER_BIN ?? OWN_BIN;
const COMPILED_CLI = join(ROOT, 'dist', 'cli', 'index.js');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

const BUILD_TIMEOUT_MS = 180_000;
const CLI_TIMEOUT_MS = 60_000;
const READY_TIMEOUT_MS = 30_000;

/** The `mailroom` executable the bench runs (for the report). */
export const MAILROOM_BIN = BIN;
/** The compiled service beside that executable (tools that call service code in-process load it from here). */
export const SERVICE_DIST = join(dirname(BIN), '..', 'dist');

/** The hosted domain the bench creates its mailboxes in. */
export const BENCH_DOMAIN = 'bench.mailroom.localhost';

function newestFile(dir: string): { path: string; mtimeMs: number } {
  let newest = { path: dir, mtimeMs: 0 };
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const candidate = entry.isDirectory() ? newestFile(path) : { path, mtimeMs: statSync(path).mtimeMs };
    if (candidate.mtimeMs > newest.mtimeMs) newest = candidate;
  }
  return newest;
}

/**
 * The service runs from dist/ (as `mailroom serve` does in production). Build it when it is missing
 * or older than src/, so a bench never measures stale code.
 */
export async function ensureBuilt(processes: ProcessGroup, log: (line: string) => void): Promise<void> {
  if (OTHER_BIN) {
    if (!existsSync(OTHER_BIN)) throw new Error(`MAILROOM_BENCH_BIN: no such file ${OTHER_BIN}`);
    log(`service binary: ${OTHER_BIN} (MAILROOM_BENCH_BIN; not rebuilt)`);
    return;
  }
  if (existsSync(COMPILED_CLI)) {
    const newest = newestFile(join(ROOT, 'src'));
    if (newest.mtimeMs <= statSync(COMPILED_CLI).mtimeMs) return;
    log(`dist/ is older than ${relative(ROOT, newest.path)}: building (tsc -p tsconfig.build.json)…`);
  } else {
    log('dist/ is missing: building (tsc -p tsconfig.build.json)…');
  }
  await processes.run('build', { args: [TSC, '-p', 'tsconfig.build.json'], cwd: ROOT, env: process.env, timeoutMs: BUILD_TIMEOUT_MS });
}

/**
 * Settings for every Mailroom child, to try a tuning: `BENCH_SERVICE_ENV='MAILROOM_SMTP_PARSER_THREADS=0 …'`
 * (space-separated NAME=value pairs of MAILROOM_* variables). Recorded in the results.
 */
export function serviceEnvOverrides(): Record<string, string> {
  const overrides: Record<string, string> = {};
  for (const pair of (process.env.BENCH_SERVICE_ENV ?? '').split(/\s+/).filter(Boolean)) {
    const eq = pair.indexOf('=');
    if (eq <= 0 || !pair.startsWith('MAILROOM_')) throw new Error(`BENCH_SERVICE_ENV: '${pair}' is not MAILROOM_NAME=value`);
    overrides[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return overrides;
}

/** Inbound sessions a bench child admits, in all and per address: above any suite's concurrency. */
const BENCH_SMTP_SESSIONS_ALLOWED = 1000;

/**
 * The environment of a Mailroom child: the bench's own environment without any MAILROOM_* variable
 * (a developer's settings must not change what is measured), plus exactly the given ones and
 * BENCH_SERVICE_ENV's.
 */
/**
 * MAILROOM_SECRET_KEY of every benchmarked process (64 hex digits): PostgreSQL needs one given, the same in
 * every process; on SQLite it spares each fresh database's key file.
 */
export const BENCH_SECRET_KEY = '62656e63682d6f6e6c792d6d61696c726f6f6d2d7365637265742d6b65792121';

export function mailroomEnv(vars: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('MAILROOM_')) env[key] = value;
  return {
    ...env,
    MAILROOM_HOSTED_DOMAINS: BENCH_DOMAIN,
    MAILROOM_LOG_LEVEL: 'warn',
    MAILROOM_RATE_LIMIT_PER_MINUTE: '0',
    MAILROOM_SECRET_KEY: BENCH_SECRET_KEY,
    // The bench's SMTP sinks listen on loopback, which the outbound address rules refuse (src/lib/address-rules.ts).
    MAILROOM_DELIVERY_ALLOW_CIDRS: '127.0.0.0/8',
    // The http and inbox suites keep 50 connections of one workspace busy, near its in-flight share (64): a request
    // counts until its answer's last byte is handed to the socket, and on loopback a connection's next request can be
    // read before that, so a few of them met 429 too_many_in_flight. The cap is not what these suites measure.
    MAILROOM_HTTP_MAX_INFLIGHT_PER_WORKSPACE: '256',
    MAILROOM_HTTP_MAX_INFLIGHT: '512',
    // All load comes from one loopback address, and the smtp suite opens 200 sessions plus a probe at once.
    MAILROOM_SMTP_MAX_CLIENTS: String(BENCH_SMTP_SESSIONS_ALLOWED),
    MAILROOM_SMTP_MAX_CLIENTS_PER_IP: String(BENCH_SMTP_SESSIONS_ALLOWED),
    // `smtp-source -d` sends message after message on one session for the whole run: no session bound may end it.
    MAILROOM_SMTP_MAX_SESSION_MS: String(24 * 3600_000),
    MAILROOM_SMTP_MAX_COMMANDS: '1000000000',
    ...vars,
    ...serviceEnvOverrides(),
  };
}

/** The owner `bootstrapTenant` creates (for the session surface, /app/api/…). */
export const BENCH_OWNER = { email: 'bench-owner@example.com', password: 'bench-password-1' } as const;

export interface Tenant {
  workspaceId: string;
  apiKey: string;
}

/** `mailroom admin bootstrap --json` against the database (which also migrates it). */
export async function bootstrapTenant(context: SuiteContext, databaseUrl: string): Promise<Tenant> {
  const stdout = await context.processes.run('mailroom admin bootstrap', {
    args: [BIN, 'admin', 'bootstrap', '--email', BENCH_OWNER.email, '--password', BENCH_OWNER.password, '--workspace', 'Bench', '--json'],
    // The work directory holds no .env, so only the variables given here configure the CLI.
    cwd: context.workDir,
    env: mailroomEnv({ MAILROOM_DATABASE_URL: databaseUrl }),
    timeoutMs: CLI_TIMEOUT_MS,
  });
  const line = stdout.trim().split('\n').pop() ?? '';
  const parsed = JSON.parse(line) as { workspace_id?: unknown; api_key?: unknown };
  if (typeof parsed.workspace_id !== 'string' || typeof parsed.api_key !== 'string') {
    throw new Error(`unexpected bootstrap output: ${stdout}`);
  }
  return { workspaceId: parsed.workspace_id, apiKey: parsed.api_key };
}

export interface RunningMailroom {
  /** http://127.0.0.1:PORT */
  url: string;
  process: ManagedProcess;
}

/**
 * `mailroom serve --role …` (roles including api) as a child process on a free loopback port;
 * stopped when `scope` closes. `env` adds MAILROOM_* variables; `profileName` names its CPU profile
 * directory when BENCH_CPU_PROFILE=1.
 */
export async function startMailroom(
  context: SuiteContext,
  scope: Scope,
  databaseUrl: string,
  roles: readonly string[] = ['api'],
  options: { env?: Record<string, string>; profileName?: string } = {},
): Promise<RunningMailroom> {
  const port = await freeLoopbackPort();
  const proc = context.processes.start(`mailroom serve --role ${roles.join(',')}`, {
    args: [...serverFlags(context.settings, options.profileName ?? `mailroom-${roles.join('-')}`), BIN, 'serve', ...roles.flatMap((r) => ['--role', r])],
    cwd: context.workDir,
    env: mailroomEnv({ MAILROOM_DATABASE_URL: databaseUrl, MAILROOM_HTTP_HOST: '127.0.0.1', MAILROOM_HTTP_PORT: String(port), ...options.env }),
  });
  scope.defer(proc.name, () => proc.stop());
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/health`, proc, READY_TIMEOUT_MS, context.signal);
  return { url, process: proc };
}

export interface RunningSmtp {
  /** The inbound SMTP port on 127.0.0.1. */
  port: number;
  process: ManagedProcess;
}

/**
 * `mailroom serve --role smtp` alone (no HTTP listener) on a free loopback port, ready once it
 * greets with 220; stopped when `scope` closes. `env` adds MAILROOM_* variables (e.g. the DNS servers).
 */
export async function startMailroomSmtp(
  context: SuiteContext,
  scope: Scope,
  databaseUrl: string,
  options: { env?: Record<string, string>; profileName?: string } = {},
): Promise<RunningSmtp> {
  const port = await freeLoopbackPort();
  const proc = context.processes.start('mailroom serve --role smtp', {
    args: [...serverFlags(context.settings, options.profileName ?? 'mailroom-smtp'), BIN, 'serve', '--role', 'smtp'],
    cwd: context.workDir,
    env: mailroomEnv({ MAILROOM_DATABASE_URL: databaseUrl, MAILROOM_SMTP_HOST: '127.0.0.1', MAILROOM_SMTP_PORT: String(port), ...options.env }),
  });
  scope.defer(proc.name, () => proc.stop());
  await waitForSmtp(port, proc, READY_TIMEOUT_MS, context.signal);
  return { port, process: proc };
}

/** What the bench's own requests need of fetch's options. */
export interface ApiRequestInit {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  headers?: Record<string, string>;
  body?: string;
}

/**
 * An API call with a time limit; the answer's status and text. Through undici's `request` (kept-alive connections of its global agent).
 * Not `fetch`: where the bench drives load with it (the `outbound` suite's POST /send), fetch's WHATWG
 * streams cost the load generator about 1 ms of CPU a request on the cores the service runs on.
 */
export async function apiRequest(url: string, init: ApiRequestInit, signal: AbortSignal): Promise<{ status: number; text: string }> {
  const res = await request(url, {
    method: init.method ?? 'GET',
    ...(init.headers ? { headers: init.headers } : {}),
    ...(init.body !== undefined ? { body: init.body } : {}),
    signal: AbortSignal.any([signal, AbortSignal.timeout(10_000)]),
  });
  return { status: res.statusCode, text: await res.body.text() };
}

/** POST /mailboxes, as a client would; throws unless it answers 201. */
export async function createMailbox(url: string, apiKey: string, address: string, description: string, signal: AbortSignal): Promise<void> {
  const res = await apiRequest(
    `${url}/mailboxes`,
    { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ address, description }) },
    signal,
  );
  if (res.status !== 201) throw new Error(`POST /mailboxes ${address} answered ${res.status}: ${res.text}`);
}

/** POST /app/api/login as the bench owner: a session token for the session surface (X-Service-Session). */
export async function loginOwner(url: string, signal: AbortSignal): Promise<string> {
  const res = await apiRequest(`${url}/app/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(BENCH_OWNER) }, signal);
  const token = res.status === 200 ? (JSON.parse(res.text) as { session_token?: unknown }).session_token : undefined;
  if (typeof token !== 'string') throw new Error(`POST /app/api/login answered ${res.status}: ${res.text.slice(0, 300)}`);
  return token;
}

/** Fail loudly when a child serving a measurement died during it (the numbers would be of errors). */
export function assertAlive(proc: ManagedProcess): void {
  const status = proc.exitStatus();
  if (status) throw new Error(`${proc.name} exited during the run (code ${status.code ?? '?'}, signal ${status.signal ?? '-'})\n${proc.tail()}`);
}
