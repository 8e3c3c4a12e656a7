import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './mailroom.js';
import { freeLoopbackPort, waitForHttp, waitForOutput, type ManagedProcess } from './processes.js';
import type { Scope } from './scope.js';
import { profileFlags, type SuiteContext } from './suite.js';

const BARE_HTTP = join(ROOT, 'bench', 'servers', 'bare-http.server.ts');
const BARE_SMTP = join(ROOT, 'bench', 'servers', 'bare-smtp.server.ts');
const DNS_SERVER = join(ROOT, 'bench', 'servers', 'dns.server.ts');
const READY_TIMEOUT_MS = 30_000;

/**
 * Start the bare Fastify baseline answering `route` with `body` (GET, or POST with a JSON body and
 * status `status`); stopped when `scope` closes.
 */
export async function startBareHttp(
  context: SuiteContext,
  scope: Scope,
  body: string,
  route = '/mailboxes',
  options: { method?: 'GET' | 'POST'; status?: number } = {},
): Promise<{ url: string; process: ManagedProcess }> {
  const bodyFile = join(context.workDir, `bare-body-${Date.now()}.json`);
  writeFileSync(bodyFile, body);
  const port = await freeLoopbackPort();
  const proc = context.processes.start('bare fastify server', {
    args: [...profileFlags(context.settings, 'bare-http'), '--import', 'tsx', BARE_HTTP],
    // cwd is the repository so `--import tsx` resolves from its node_modules.
    cwd: ROOT,
    env: { ...process.env, BENCH_BARE_PORT: String(port), BENCH_BARE_BODY_FILE: bodyFile, BENCH_BARE_ROUTE: route, BENCH_BARE_METHOD: options.method ?? 'GET', BENCH_BARE_STATUS: String(options.status ?? 200) },
  });
  scope.defer(proc.name, () => proc.stop());
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/health`, proc, READY_TIMEOUT_MS, context.signal);
  return { url, process: proc };
}

export interface BareSmtp {
  port: number;
  process: ManagedProcess;
  /** Stop it and return how many messages it answered 250 (it prints the count on SIGTERM). */
  stopAndCount(): Promise<number>;
  /** Messages answered 250 so far and their bytes; it keeps running (SIGUSR2, answered with a `count <n> bytes <b>` line). */
  count(signal: AbortSignal): Promise<{ messages: number; bytes: number }>;
}

/** Start the bare smtp-server sink (bench/servers/bare-smtp.server.ts); stopped when `scope` closes. */
export async function startBareSmtp(context: SuiteContext, scope: Scope, maxSize: number, profileName = 'bare-smtp'): Promise<BareSmtp> {
  const port = await freeLoopbackPort();
  const proc = context.processes.start('bare smtp-server sink', {
    args: [...profileFlags(context.settings, profileName), '--import', 'tsx', BARE_SMTP],
    cwd: ROOT,
    env: { ...process.env, BENCH_BARE_PORT: String(port), BENCH_BARE_MAX_SIZE: String(maxSize) },
  });
  scope.defer(proc.name, () => proc.stop());
  await waitForOutput(proc, /^listening \d+$/m, READY_TIMEOUT_MS, context.signal);
  return {
    port,
    process: proc,
    async stopAndCount() {
      await proc.stop();
      const match = /^accepted (\d+)$/m.exec(proc.stdout());
      if (!match) throw new Error(`${proc.name} did not report its count (${proc.tail()})`);
      return Number(match[1]);
    },
    async count(signal) {
      const answers = () => [...proc.stdout().matchAll(/^count (\d+) bytes (\d+)$/gm)];
      const before = answers().length;
      assertRunning(proc);
      process.kill(proc.pid!, 'SIGUSR2');
      const deadline = Date.now() + 10_000;
      for (;;) {
        const now = answers();
        const last = now[now.length - 1];
        if (now.length > before && last) return { messages: Number(last[1]), bytes: Number(last[2]) };
        signal.throwIfAborted();
        assertRunning(proc);
        if (Date.now() > deadline) throw new Error(`${proc.name} did not answer SIGUSR2 with its count (${proc.tail()})`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
  };
}

function assertRunning(proc: ManagedProcess): void {
  if (proc.exitStatus() || proc.pid === undefined) throw new Error(`${proc.name} is not running (${proc.tail()})`);
}

export interface BenchDns {
  /** `127.0.0.1:PORT`, for MAILROOM_DNS_SERVERS. */
  address: string;
  process: ManagedProcess;
  /** Stop it and return the queries it answered, by type. */
  stopAndCount(): Promise<{ total: number; byType: Record<string, number> }>;
}

/** A zone of the bench's DNS server (as in test/helpers/dns-server.ts). */
export interface BenchZone {
  A?: string[];
  AAAA?: string[];
  MX?: Array<{ exchange: string; priority: number }>;
  TXT?: string[];
}

/**
 * Start the loopback DNS server: the given zones (name → records), NXDOMAIN for every other name;
 * stopped when `scope` closes.
 */
export async function startBenchDns(context: SuiteContext, scope: Scope, zones: Record<string, BenchZone> = {}): Promise<BenchDns> {
  const proc = context.processes.start('dns2 server', {
    args: ['--import', 'tsx', DNS_SERVER],
    cwd: ROOT,
    env: { ...process.env, BENCH_DNS_ZONES: JSON.stringify(zones) },
  });
  scope.defer(proc.name, () => proc.stop());
  const match = await waitForOutput(proc, /^listening (127\.0\.0\.1:\d+)$/m, READY_TIMEOUT_MS, context.signal);
  return {
    address: match[1]!,
    process: proc,
    async stopAndCount() {
      await proc.stop();
      const line = /^queries (\{.*\})$/m.exec(proc.stdout());
      if (!line) throw new Error(`${proc.name} did not report its queries (${proc.tail()})`);
      return JSON.parse(line[1]!) as { total: number; byType: Record<string, number> };
    },
  };
}
