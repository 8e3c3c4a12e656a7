import nodemailer from 'nodemailer';
import { startBareSmtp, startBenchDns } from '../lib/baselines.js';
import type { Dialect } from '../lib/databases.js';
import { DIALECTS, forEachDialect, freshDatabase } from '../lib/dialects.js';
import type { Measurement } from '../lib/load.js';
import { apiRequest, assertAlive, bootstrapTenant, BENCH_DOMAIN, createMailbox, loginOwner, MAILROOM_BIN, mailroomEnv, startMailroom, type Tenant } from '../lib/mailroom.js';
import { FLOODS, type Flood } from '../lib/floods.js';
import { describeFailures, probeMeasurement, probeWindow, PROBES, type ProbeName, type ProbeTarget, type ProbeWindow } from '../lib/tenant-probes.js';
import { startReceiver } from '../lib/webhook-receiver.js';
import { processCpuMs } from '../lib/cpu.js';
import { freeLoopbackPort } from '../lib/processes.js';
import { withScope } from '../lib/scope.js';
import { latencyStats } from '../lib/smtp-load.js';
import { pairRows, type BenchSettings, type Goal, type ResultRow, type Suite, type SuiteContext, type SuiteResult } from '../lib/suite.js';

/** The hostile mail goes to one workspace's mailbox; another workspace sends meanwhile. */
const TARGET = `target@${BENCH_DOMAIN}`;
const DESK = `desk@${BENCH_DOMAIN}`;
const SEND_BODY = JSON.stringify({ from_mailbox: DESK, to: 'peer@elsewhere.test', subject: 'meanwhile', body: 'A plain message sent while hostile mail arrives.' });
const MiB = 1024 * 1024;
const CASE_SETUP_BUDGET_S = 120;
/** The flood cases' extra time: preparing (a fill, events to replay), the ramp, the webhook grace, stopping. */
const FLOOD_EXTRA_BUDGET_S = 240;
/** Seconds a flood runs before the other workspace is measured, so the measurement sees it at full strength. */
const FLOOD_RAMP_S = 2;
const MIN_WARMUP_S = 3;
/** A flood that builds up (replays queued, streams or sessions opened) is measured once built, or after this long. */
const MAX_BUILD_UP_S = 60;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** The goal of the other workspace during every flood. */
const P50_FACTOR = 2;
const MAX_MS = 1000;
const OTHER_OWNER = { email: 'bench-other@example.com', password: 'bench-password-2' };
/** The hostile-messages case (`mail`) and the floods, selectable with BENCH_HOSTILE_CASES. */
const CASES: readonly string[] = selectCases(process.env.BENCH_HOSTILE_CASES);

function selectCases(given: string | undefined): readonly string[] {
  const all = ['mail', ...FLOODS.map((f) => f.name)];
  const names = (given ?? '').split(',').map((n) => n.trim()).filter(Boolean);
  const unknown = names.filter((n) => !all.includes(n));
  if (unknown.length > 0) throw new Error(`BENCH_HOSTILE_CASES: unknown case ${unknown.join(', ')} (${all.join(', ')})`);
  return names.length === 0 ? all : all.filter((n) => names.includes(n));
}

const head = (fields: string[]) => ['From: attacker@sender.test', 'MIME-Version: 1.0', ...fields].join('\r\n');
const html = (body: string) => `${head([`To: ${TARGET}`, 'Subject: html', 'Content-Type: text/html; charset=utf-8'])}\r\n\r\n${body}\r\n`;

/** Hostile messages that took seconds to minutes each before their parsing was bounded. */
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
    args: [MAILROOM_BIN, 'admin', 'bootstrap', '--email', OTHER_OWNER.email, '--password', OTHER_OWNER.password, '--workspace', 'Other', '--json'],
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

/** A session of the other workspace's owner, and its one webhook endpoint (received mail only) at `receiverUrl`. */
async function otherWebhook(url: string, receiverUrl: string, signal: AbortSignal): Promise<void> {
  const login = await apiRequest(`${url}/app/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(OTHER_OWNER) }, signal);
  const session = (JSON.parse(login.text) as { session_token?: string }).session_token;
  if (login.status !== 200 || !session) throw new Error(`login of the other owner answered ${login.status}: ${login.text.slice(0, 200)}`);
  const res = await apiRequest(`${url}/app/api/webhooks`, { method: 'POST', headers: { 'x-service-session': session, 'content-type': 'application/json' }, body: JSON.stringify({ url: `${receiverUrl}/hook`, event_types: ['message.received'] }) }, signal);
  if (res.status !== 201) throw new Error(`POST /app/api/webhooks answered ${res.status}: ${res.text.slice(0, 200)}`);
}

/** "Within 2× of its idle p50 and never over 1 s", with no failure, for one probe during one flood. */
function floodGoal(caseName: string, idle: ProbeWindow, during: ProbeWindow): Goal {
  const base = probeMeasurement(idle).latencyMs;
  const flood = probeMeasurement(during).latencyMs;
  const failed = Object.keys(during.failures).length > 0;
  const ratio = Number.isFinite(flood.p50) && flood.p50 > 0 ? base.p50 / flood.p50 : null;
  const met = !failed && ratio !== null && flood.p50 <= P50_FACTOR * base.p50 && flood.max <= MAX_MS;
  return {
    goal: 'the other workspace stays within 2× of its idle p50 and never over 1 s',
    case: caseName,
    minRatio: 1 / P50_FACTOR,
    ratio,
    met,
    threshold: `p50 ≤ ${P50_FACTOR}× idle (${base.p50.toFixed(1)} ms), max ≤ ${MAX_MS} ms, no failure`,
    measured: `p50 ${flood.p50.toFixed(1)} ms, p99 ${flood.p99.toFixed(1)} ms, max ${flood.max.toFixed(1)} ms, failures: ${describeFailures(during.failures)}`,
  };
}

/**
 * One flood on its own service (what a flood leaves queued never reaches the next case): both workspaces, the other's
 * webhook receiver and a relay sink for its sends; the other workspace's probes idle, then during the flood.
 */
async function runFloodCase(context: SuiteContext, dialect: Dialect, flood: Flood, result: SuiteResult): Promise<void> {
  await withScope(context.log, async (scope) => {
    const database = await freshDatabase(context, scope, dialect, `hostile-${flood.name}`);
    const attacker = await bootstrapTenant(context, database.url);
    const other = await bootstrapOther(context, database.url);
    const dns = await startBenchDns(context, scope);
    const sink = await startBareSmtp(context, scope, 64 * MiB);
    const receiver = await startReceiver(context, scope, 1);
    const smtpPort = await freeLoopbackPort();
    const service = await startMailroom(context, scope, database.url, ['api', 'smtp', 'worker'], {
      env: {
        MAILROOM_DNS_SERVERS: dns.address,
        MAILROOM_SMTP_HOST: '127.0.0.1',
        MAILROOM_SMTP_PORT: String(smtpPort),
        MAILROOM_SMTP_RELAY: `smtp://127.0.0.1:${sink.port}`,
        MAILROOM_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
        ...flood.env,
      },
      profileName: `mailroom-hostile-${flood.name}-${dialect}`,
    });
    await createMailbox(service.url, attacker.apiKey, TARGET, 'the flooding workspace', context.signal);
    await createMailbox(service.url, other.apiKey, DESK, 'the other workspace', context.signal);
    await otherWebhook(service.url, receiver.urls[0]!, context.signal);
    const target = { context, scope, database, url: service.url, smtpPort, apiKey: attacker.apiKey, session: await loginOwner(service.url, context.signal), workspaceId: attacker.workspaceId, mailbox: TARGET, signal: context.signal };
    const probes: ProbeTarget = { url: service.url, smtpPort, smtpFrom: '127.0.1.1', apiKey: other.apiKey, mailbox: DESK, receiver, signal: context.signal };
    if (flood.prepare) await flood.prepare(target);
    const { warmupS, durationS } = context.settings;
    context.log(`  [${dialect}] ${flood.name}: the other workspace idle, ${Math.max(warmupS, MIN_WARMUP_S)} s warm-up + ${durationS} s…`);
    // At least a few seconds: the first requests start the service's threads and connections.
    await probeWindow(probes, Math.max(warmupS, MIN_WARMUP_S), `warm-${flood.name}`);
    const idle = await probeWindow(probes, durationS, `idle-${flood.name}`);
    context.log(`  [${dialect}] ${flood.name}: ${flood.describe}; the other workspace measured after ${FLOOD_RAMP_S} s for ${durationS} s…`);
    const running = flood.start(target);
    const info: Record<string, unknown> = { flood: flood.describe };
    let during: Record<ProbeName, ProbeWindow>;
    let outcomes: Record<string, number>;
    try {
      const rampStarted = performance.now();
      await Promise.all([sleep(FLOOD_RAMP_S * 1000), Promise.race([running.ready, sleep(MAX_BUILD_UP_S * 1000)])]);
      info.build_up_s = Math.round((performance.now() - rampStarted) / 100) / 10;
      during = await probeWindow(probes, durationS, `flood-${flood.name}`);
    } finally {
      outcomes = await running.stop();
    }
    assertAlive(service.process);
    report(context, dialect, flood, { idle, during, outcomes, info }, result);
  });
}

interface FloodRun {
  idle: Record<ProbeName, ProbeWindow>;
  during: Record<ProbeName, ProbeWindow>;
  outcomes: Record<string, number>;
  info: Record<string, unknown>;
}

function report(context: SuiteContext, dialect: Dialect, flood: Flood, { idle, during, outcomes, info }: FloodRun, result: SuiteResult): void {
  const flooded = Object.entries(outcomes).map(([k, n]) => `${k}×${n}`).join(', ') || 'none';
  context.log(`  [${dialect}] ${flood.name}: the flood's answers: ${flooded} (built up in ${String(info.build_up_s)} s)`);
  const ms = (v: number) => (Number.isFinite(v) ? v.toFixed(1) : '-');
  info.flood_outcomes = outcomes;
  for (const probe of PROBES) {
    const caseName = `${dialect} ${flood.name} · ${probe}`;
    const base = probeMeasurement(idle[probe]);
    const subject = probeMeasurement(during[probe]);
    const goal = floodGoal(caseName, idle[probe], during[probe]);
    result.goals!.push(goal);
    context.log(
      `  [${dialect}] ${flood.name}: ${probe.padEnd(27)} idle p50/p99 ${ms(base.latencyMs.p50)}/${ms(base.latencyMs.p99)} ms, flood p50/p99 ${ms(subject.latencyMs.p50)}/${ms(subject.latencyMs.p99)} ms (max ${ms(subject.latencyMs.max)}, failures ${describeFailures(during[probe].failures)}): ${goal.met ? 'met' : 'NOT MET'}`,
    );
    info[probe] = { idle: { ...base.latencyMs, failures: idle[probe].failures }, flood: { ...subject.latencyMs, failures: during[probe].failures } };
    result.rows.push(...pairRows('hostile', caseName, 'req/s', { target: 'idle', measurement: base }, { target: `during the ${flood.name} flood`, measurement: subject }));
  }
  result.info[`${dialect} ${flood.name}`] = info;
}

/** Another workspace's latencies while hostile mail arrives and during each flood of one workspace. */
export const hostileSuite: Suite = {
  name: 'hostile',
  description: "another workspace's p50/p99 (inbound SMTP, POST /send, /health, webhook) while one workspace sends hostile mail or floods search, replays, big bodies, streams or SMTP slots, vs idle, on SQLite and PostgreSQL",
  budgetS: (s: Readonly<BenchSettings>) =>
    DIALECTS.length * ((CASES.includes('mail') ? CASE_SETUP_BUDGET_S + s.warmupS + 2 * s.durationS + 300 : 0) + (CASES.length - (CASES.includes('mail') ? 1 : 0)) * (CASE_SETUP_BUDGET_S + FLOOD_EXTRA_BUDGET_S + s.warmupS + 2 * s.durationS)),
  async run(context: SuiteContext): Promise<SuiteResult> {
    const result: SuiteResult = { suite: 'hostile', rows: [], skipped: [], failed: [], info: { kinds: HOSTILE.map((h) => h.name), cases: CASES }, goals: [] };
    await forEachDialect(context, result, async (dialect) => {
      if (CASES.includes('mail')) result.rows.push(...(await runCase(context, dialect, result.info)));
      for (const flood of FLOODS.filter((f) => CASES.includes(f.name))) {
        try {
          await runFloodCase(context, dialect, flood, result);
        } catch (err) {
          if (context.signal.aborted) throw err;
          const error = err instanceof Error ? err.message : String(err);
          context.log(`  [${dialect}] ${flood.name} FAILED: ${error}`);
          result.failed.push({ case: `${dialect} ${flood.name}`, error });
        }
      }
    });
    return result;
  },
};
