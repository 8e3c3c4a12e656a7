import nodemailer from 'nodemailer';
import { startBenchDns } from '../lib/baselines.js';
import type { Dialect } from '../lib/databases.js';
import { DIALECTS, forEachDialect, freshDatabase } from '../lib/dialects.js';
import type { Measurement } from '../lib/load.js';
import { apiRequest, assertAlive, bootstrapTenant, BENCH_DOMAIN, createMailbox, MAILROOM_BIN, mailroomEnv, startMailroom, type Tenant } from '../lib/mailroom.js';
import { processCpuMs } from '../lib/cpu.js';
import { freeLoopbackPort } from '../lib/processes.js';
import { withScope } from '../lib/scope.js';
import { latencyStats } from '../lib/smtp-load.js';
import { pairRows, type BenchSettings, type ResultRow, type Suite, type SuiteContext, type SuiteResult } from '../lib/suite.js';

/** The hostile mail goes to one workspace's mailbox; another workspace sends meanwhile. */
const TARGET = `target@${BENCH_DOMAIN}`;
const DESK = `desk@${BENCH_DOMAIN}`;
const SEND_BODY = JSON.stringify({ from_mailbox: DESK, to: 'peer@elsewhere.test', subject: 'meanwhile', body: 'A plain message sent while hostile mail arrives.' });
const MiB = 1024 * 1024;
const CASE_SETUP_BUDGET_S = 120;

const head = (fields: string[]) => ['From: attacker@sender.test', 'MIME-Version: 1.0', ...fields].join('\r\n');
const html = (body: string) => `${head([`To: ${TARGET}`, 'Subject: html', 'Content-Type: text/html; charset=utf-8'])}\r\n\r\n${body}\r\n`;

/** The messages of issue 22 that took seconds to minutes each before it was fixed. */
const HOSTILE: ReadonlyArray<{ name: string; raw: () => string }> = [
  { name: 'html 1 MiB of <', raw: () => html('<'.repeat(MiB)) },
  { name: 'html 1 MiB of <style', raw: () => html('<style'.repeat(MiB / 6)) },
  { name: 'html 1 MiB of <a ', raw: () => html('<a '.repeat(MiB / 3)) },
  { name: 'html 1 MiB of <<<>', raw: () => html('<<<>'.repeat(MiB / 4)) },
  { name: 'text 1 MiB of <', raw: () => `${head([`To: ${TARGET}`, 'Subject: text', 'Content-Type: text/plain'])}\r\n\r\n${'<'.repeat(MiB)}\r\n` },
  { name: 'subject 1 MiB of <style', raw: () => `${head([`To: ${TARGET}`, `Subject: ${'<style'.repeat(MiB / 6)}`])}\r\n\r\nbody\r\n` },
  { name: 'to 1 MiB of <<<>', raw: () => `${head([`To: ${'<<<>'.repeat(MiB / 4)}`, 'Subject: to'])}\r\n\r\nbody\r\n` },
  { name: 'header folded over 40,000 lines', raw: () => `Received: from attacker.test\r\n${' aaaaaaa\r\n'.repeat(40_000)}${head([`To: ${TARGET}`, 'Subject: folded'])}\r\n\r\nbody\r\n` },
  {
    name: '50,000 MIME parts',
    raw: () => `${head([`To: ${TARGET}`, 'Subject: parts', 'Content-Type: multipart/mixed; boundary="b"'])}\r\n\r\n${Array.from({ length: 50_000 }, (_, i) => `--b\r\nContent-Type: application/x-part\r\n\r\n${i}\r\n`).join('')}--b--\r\n`,
  },
];

/** A second workspace through the admin CLI, as `bootstrapTenant` makes the first. */
async function bootstrapOther(context: SuiteContext, databaseUrl: string): Promise<Tenant> {
  const stdout = await context.processes.run('mailroom admin bootstrap (other)', {
    args: [MAILROOM_BIN, 'admin', 'bootstrap', '--email', 'bench-other@example.com', '--password', 'bench-password-2', '--workspace', 'Other', '--json'],
    cwd: context.workDir,
    env: mailroomEnv({ MAILROOM_DATABASE_URL: databaseUrl }),
    timeoutMs: 60_000,
  });
  const parsed = JSON.parse(stdout.trim().split('\n').pop() ?? '') as { workspace_id: string; api_key: string };
  return { workspaceId: parsed.workspace_id, apiKey: parsed.api_key };
}

/** `POST /send`s one after another for `seconds`: each one's time, and the wall time. */
async function sendFor(url: string, apiKey: string, seconds: number, signal: AbortSignal): Promise<{ latenciesMs: number[]; wallMs: number }> {
  const latenciesMs: number[] = [];
  const started = performance.now();
  while (performance.now() - started < seconds * 1000) {
    const t = performance.now();
    const res = await apiRequest(`${url}/send`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: SEND_BODY }, AbortSignal.any([signal, AbortSignal.timeout(120_000)]));
    if (res.status !== 202) throw new Error(`POST /send answered ${res.status}: ${res.text}`);
    latenciesMs.push(performance.now() - t);
  }
  return { latenciesMs, wallMs: performance.now() - started };
}

function measurement(run: { latenciesMs: number[]; wallMs: number }, cpuMs: number | null): Measurement {
  const count = run.latenciesMs.length;
  return {
    requestsPerSec: count / (run.wallMs / 1000),
    latencyMs: latencyStats(run.latenciesMs),
    totalRequests: count,
    durationS: run.wallMs / 1000,
    connections: 1,
    errors: 0,
    timeouts: 0,
    non2xx: 0,
    serverCpuUsPerRequest: cpuMs === null ? null : (cpuMs * 1000) / count,
    serverCpuUtilization: cpuMs === null ? null : cpuMs / run.wallMs,
  };
}

/** Hostile messages over SMTP, one after another, until `stop` is set: each one's reply and time. */
async function sendHostile(port: number, stop: { now: boolean }): Promise<Array<{ name: string; reply: string; ms: number }>> {
  const transport = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true, name: 'attacker.test' });
  const sent: Array<{ name: string; reply: string; ms: number }> = [];
  for (let i = 0; !stop.now; i++) {
    const kind = HOSTILE[i % HOSTILE.length]!;
    const raw = kind.raw();
    const t = performance.now();
    try {
      const info = await transport.sendMail({ envelope: { from: 'attacker@sender.test', to: [TARGET] }, raw });
      sent.push({ name: kind.name, reply: info.response.slice(0, 3), ms: Math.round(performance.now() - t) });
    } catch (err) {
      sent.push({ name: kind.name, reply: (err as { responseCode?: number }).responseCode?.toString() ?? 'error', ms: Math.round(performance.now() - t) });
    }
  }
  transport.close();
  return sent;
}

async function runCase(context: SuiteContext, dialect: Dialect, info: Record<string, unknown>): Promise<ResultRow[]> {
  return withScope(context.log, async (scope) => {
    const database = await freshDatabase(context, scope, dialect, 'hostile');
    const victim = await bootstrapTenant(context, database.url);
    const other = await bootstrapOther(context, database.url);
    const dns = await startBenchDns(context, scope);
    const smtpPort = await freeLoopbackPort();
    // One process with both roles, as `mailroom serve` runs by default: the sends and the hostile mail share it.
    const service = await startMailroom(context, scope, database.url, ['api', 'smtp'], {
      env: { MAILROOM_DNS_SERVERS: dns.address, MAILROOM_SMTP_HOST: '127.0.0.1', MAILROOM_SMTP_PORT: String(smtpPort) },
      profileName: `mailroom-hostile-${dialect}`,
    });
    await createMailbox(service.url, victim.apiKey, TARGET, 'hostile mail lands here', context.signal);
    await createMailbox(service.url, other.apiKey, DESK, 'sends meanwhile', context.signal);
    const { warmupS, durationS } = context.settings;

    context.log(`  [${dialect}] POST /send by another workspace, quiet: ${warmupS} s warm-up + ${durationS} s…`);
    await sendFor(service.url, other.apiKey, warmupS, context.signal);
    let cpu = processCpuMs(service.process.pid);
    const quiet = await sendFor(service.url, other.apiKey, durationS, context.signal);
    const quietCpu = cpu === null ? null : (processCpuMs(service.process.pid) ?? cpu) - cpu;

    context.log(`  [${dialect}] POST /send by another workspace while hostile messages arrive over SMTP (${HOSTILE.length} kinds, one after another)…`);
    const stop = { now: false };
    const hostile = sendHostile(smtpPort, stop);
    cpu = processCpuMs(service.process.pid);
    const attacked = await sendFor(service.url, other.apiKey, durationS, context.signal).finally(() => {
      stop.now = true;
    });
    const attackedCpu = cpu === null ? null : (processCpuMs(service.process.pid) ?? cpu) - cpu;
    const sent = await hostile;
    assertAlive(service.process);

    const base = measurement(quiet, quietCpu);
    const subject = measurement(attacked, attackedCpu);
    context.log(`  [${dialect}] POST /send p50 / p99: quiet ${base.latencyMs.p50.toFixed(1)} / ${base.latencyMs.p99.toFixed(1)} ms, during hostile mail ${subject.latencyMs.p50.toFixed(1)} / ${subject.latencyMs.p99.toFixed(1)} ms (max ${subject.latencyMs.max.toFixed(1)} ms)`);
    for (const s of sent) context.log(`  [${dialect}]   ${s.name}: ${s.reply} after ${s.ms} ms`);
    info[`${dialect}_hostile_messages`] = sent;
    info[`${dialect}_send_latency_ms`] = { quiet: base.latencyMs, during_hostile_mail: subject.latencyMs };
    return pairRows('hostile', dialect, 'send/s', { target: 'POST /send, no other mail', measurement: base }, { target: 'POST /send during hostile mail', measurement: subject });
  });
}

/** Issue 22: another workspace's POST /send latency while hostile messages arrive, against the same sends on a quiet service. */
export const hostileSuite: Suite = {
  name: 'hostile',
  description: "another workspace's POST /send p50/p99 while hostile messages (1 MiB of '<', 40,000-line header, 50,000 parts…) arrive over SMTP, vs a quiet service, on SQLite and PostgreSQL",
  budgetS: (s: Readonly<BenchSettings>) => DIALECTS.length * (CASE_SETUP_BUDGET_S + s.warmupS + 2 * s.durationS + 300),
  async run(context: SuiteContext): Promise<SuiteResult> {
    const result: SuiteResult = { suite: 'hostile', rows: [], skipped: [], failed: [], info: { kinds: HOSTILE.map((h) => h.name) } };
    await forEachDialect(context, result, async (dialect) => {
      result.rows.push(...(await runCase(context, dialect, result.info)));
    });
    return result;
  },
};
