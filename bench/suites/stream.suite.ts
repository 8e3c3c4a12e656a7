import { join } from 'node:path';
import nodemailer from 'nodemailer';
import { benchRows } from '../lib/store.js';
import { Pool } from 'undici';
import { startBenchDns } from '../lib/baselines.js';
import { processCpuMs } from '../lib/cpu.js';
import type { BenchDatabase, Dialect } from '../lib/databases.js';
import { DIALECTS, forEachDialect, freshDatabase } from '../lib/dialects.js';
import type { Measurement } from '../lib/load.js';
import { mailGenerator, type MailMix } from '../lib/mail-content.js';
import { assertAlive, bootstrapTenant, BENCH_DOMAIN, createMailbox, loginOwner, MAILROOM_BIN, mailroomEnv, ROOT, startMailroom, startMailroomSmtp } from '../lib/mailroom.js';
import { freeLoopbackPort, waitForOutput, type ManagedProcess } from '../lib/processes.js';
import type { Scope } from '../lib/scope.js';
import { withScope } from '../lib/scope.js';
import { latencyStats } from '../lib/smtp-load.js';
import { pairRows, profileFlags, serverFlags, type BenchSettings, type Goal, type ResultRow, type Suite, type SuiteContext, type SuiteResult } from '../lib/suite.js';

const READER = join(ROOT, 'bench', 'tools', 'sse-reader.ts');
const BARE_SSE = join(ROOT, 'bench', 'servers', 'bare-sse.server.ts');
/** A steady, modest rate: the goal is latency at an ordinary load, not under saturation. */
const RATE_PER_S = 40;
const MIN_WARMUP_EVENTS = 100;
/** At least this many measured events per case, so that p99 rests on ten or more samples. */
const MIN_EVENTS = 1000;
const P99_GOAL_MS = 50;
/** A run fails when no event arrives for this long while some are still expected. */
const STALL_MS = 30_000;
const POLL_MS = 20;
const READY_TIMEOUT_MS = 30_000;
const MAILBOX = `stream@${BENCH_DOMAIN}`;
/** Ordinary mail (no attachments: their size would change the ingest, not the time from commit to client). */
const MIX: MailMix = { textBytes: 2000, htmlShare: 0.5, replyShare: 0.2, attachmentShare: 0, attachmentBytes: 0 };
/** The baseline's event data: about the size of a message view with a snippet, as message.received carries. */
const BARE_DATA = JSON.stringify({
  message_id: 'msg_01m7yfer168fdm1fz9wecr508w',
  mailbox: MAILBOX,
  direction: 'inbound',
  folder: 'inbox',
  read: false,
  labels: [],
  thread_id: 'thr_01m7yfer151gze8f2b9w65hgss',
  from: { name: 'Alice Example', address: 'alice@sender.test' },
  to: [{ name: '', address: MAILBOX }],
  cc: [],
  subject: 'Order 1234 has not arrived',
  snippet: 'Hello, my order 1234 has not arrived yet. '.repeat(5),
  size: 3000,
  attachments: [],
  auth: { spf: 'none', dkim: 'none', dmarc: 'none' },
});

type Topology = 'one process' | 'api + smtp + worker processes';
const CASES: ReadonlyArray<{ dialect: Dialect; topology: Topology }> = [
  { dialect: 'sqlite', topology: 'one process' },
  { dialect: 'postgres', topology: 'one process' },
  // Processes share a database only on PostgreSQL (SQLite is the one-process mode).
  { dialect: 'postgres', topology: 'api + smtp + worker processes' },
];
const caseName = (dialect: Dialect, topology: Topology) => `${dialect}, ${topology}`;

const BASELINE = 'bare node:http SSE → reader';
const SUBJECT = 'SMTP → commit → /app/api/events/stream → reader';

interface StreamedEvent {
  id: string;
  type: string;
  latencyMs: number;
}

/** The reader child (bench/tools/sse-reader.ts) and the events it has printed so far. */
interface Reader {
  process: ManagedProcess;
  events(): StreamedEvent[];
}

async function startReader(context: SuiteContext, scope: Scope, url: string, session: string | null): Promise<Reader> {
  const proc = context.processes.start('sse reader', {
    args: ['--import', 'tsx', READER],
    cwd: ROOT,
    env: { ...process.env, BENCH_SSE_URL: url, ...(session ? { BENCH_SSE_SESSION: session } : {}) },
  });
  scope.defer(proc.name, () => proc.stop());
  await waitForOutput(proc, /^connected$/m, READY_TIMEOUT_MS, context.signal);
  const events: StreamedEvent[] = [];
  let parsed = 0;
  return {
    process: proc,
    events() {
      const out = proc.stdout();
      const end = out.lastIndexOf('\n') + 1;
      for (const line of out.slice(parsed, end).split('\n')) {
        const [tag, id, type, latency] = line.split(' ');
        if (tag === 'e' && id && type && latency) events.push({ id, type, latencyMs: Number(latency) });
      }
      parsed = Math.max(parsed, end);
      return events;
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `count` sends at `RATE_PER_S`, open loop: each at its time whether or not the one before was answered. */
async function paced(count: number, signal: AbortSignal, send: () => Promise<void>): Promise<number> {
  const started = performance.now();
  const pending: Array<Promise<void>> = [];
  for (let i = 0; i < count; i++) {
    const wait = started + (i * 1000) / RATE_PER_S - performance.now();
    if (wait > 0) await sleep(wait);
    signal.throwIfAborted();
    pending.push(send());
  }
  await Promise.all(pending);
  return performance.now() - started;
}

/** Wait until the reader has `count` events of `type` (any type when null); fail on a dead child or a stall. */
async function waitForEvents(reader: Reader, count: number, type: string | null, watch: readonly ManagedProcess[], signal: AbortSignal): Promise<void> {
  let seen = -1;
  let progressAt = Date.now();
  for (;;) {
    signal.throwIfAborted();
    for (const proc of [reader.process, ...watch]) assertAlive(proc);
    const n = reader.events().filter((e) => type === null || e.type === type).length;
    if (n >= count) return;
    if (n !== seen) {
      seen = n;
      progressAt = Date.now();
    } else if (Date.now() - progressAt > STALL_MS) {
      throw new Error(`the stream stalled at ${n} of ${count} events`);
    }
    await sleep(POLL_MS);
  }
}

/** CPU ms used so far by all of `processes` together; null off Linux. */
function cpuOf(processes: readonly ManagedProcess[]): number | null {
  let sum = 0;
  for (const p of processes) {
    const ms = processCpuMs(p.pid);
    if (ms === null) return null;
    sum += ms;
  }
  return sum;
}

/** A warm-up and a measured phase of `send`s; the measured phase's events, its wall time and the watched processes' CPU. */
async function warmupAndMeasure(
  context: SuiteContext,
  reader: Reader,
  counts: { warmup: number; measured: number },
  send: () => Promise<void>,
  watch: readonly ManagedProcess[],
): Promise<{ events: StreamedEvent[]; wallMs: number; cpuMs: number | null }> {
  const type = 'message.received';
  const base = reader.events().filter((e) => e.type === type).length;
  await paced(counts.warmup, context.signal, send);
  await waitForEvents(reader, base + counts.warmup, type, watch, context.signal);
  const from = reader.events().length;
  const cpuBefore = cpuOf(watch);
  const wallMs = await paced(counts.measured, context.signal, send);
  await waitForEvents(reader, base + counts.warmup + counts.measured, type, watch, context.signal);
  const cpuAfter = cpuOf(watch);
  return { events: reader.events().slice(from), wallMs, cpuMs: cpuBefore === null || cpuAfter === null ? null : cpuAfter - cpuBefore };
}

function measurement(run: { events: StreamedEvent[]; wallMs: number; cpuMs: number | null }): Measurement {
  const count = run.events.length;
  return {
    requestsPerSec: count / (run.wallMs / 1000),
    latencyMs: latencyStats(run.events.map((e) => e.latencyMs)),
    totalRequests: count,
    durationS: run.wallMs / 1000,
    connections: 1,
    errors: 0,
    timeouts: 0,
    non2xx: 0,
    serverCpuUsPerRequest: run.cpuMs === null || count === 0 ? null : (run.cpuMs * 1000) / count,
    serverCpuUtilization: run.cpuMs === null ? null : run.cpuMs / run.wallMs,
  };
}

/** The baseline: the bare SSE server emitting on the bench's POST /emit in the same rhythm, read by the same reader. */
async function measureBare(context: SuiteContext, scope: Scope, counts: { warmup: number; measured: number }): Promise<Measurement> {
  const port = await freeLoopbackPort();
  const server = context.processes.start('bare sse server', {
    args: [...profileFlags(context.settings, 'bare-sse'), '--import', 'tsx', BARE_SSE],
    cwd: ROOT,
    env: { ...process.env, BENCH_BARE_PORT: String(port) },
  });
  scope.defer(server.name, () => server.stop());
  await waitForOutput(server, /^listening \d+$/m, READY_TIMEOUT_MS, context.signal);
  const reader = await startReader(context, scope, `http://127.0.0.1:${port}/stream`, null);
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: 4 });
  const send = async () => {
    const res = await pool.request({ path: '/emit', method: 'POST', body: BARE_DATA, headers: { 'content-type': 'application/json' } });
    await res.body.dump();
    if (res.statusCode !== 204) throw new Error(`${BASELINE}: POST /emit answered ${res.statusCode}`);
  };
  try {
    return measurement(await warmupAndMeasure(context, reader, counts, send, [server]));
  } finally {
    await pool.close();
    await reader.process.stop();
    await server.stop();
  }
}

/** Every event of the workspace in the events table: id → type. */
async function committedEvents(database: BenchDatabase, workspaceId: string): Promise<Map<string, string>> {
  const query = 'select id, type from events where workspace_id = ';
  const rows = await benchRows<{ id: string; type: string }>(database, { sqlite: `${query}?`, postgres: `${query}$1` }, [workspaceId]);
  return new Map(rows.map((r) => [r.id, r.type]));
}

/** What was committed against what the client received: must be the same events, each once. */
interface DeliveryCheck {
  messagesAccepted: number;
  committed: number;
  /** Of those, message.received: one per message answered 250 (one recipient each). */
  committedReceived: number;
  received: number;
  missing: number;
  duplicates: number;
  unexpected: number;
}

/**
 * After the run: the events committed since the stream opened (the table now minus `before`) against every event
 * the reader printed. Late events get a few seconds to arrive first; then the sets must be equal, with no repeat.
 */
async function checkDelivery(database: BenchDatabase, workspaceId: string, before: Map<string, string>, reader: Reader, messagesAccepted: number): Promise<DeliveryCheck> {
  const table = await committedEvents(database, workspaceId);
  const committed = [...table.keys()].filter((id) => !before.has(id));
  const deadline = Date.now() + 5000;
  const allArrived = () => {
    const arrived = new Set(reader.events().map((e) => e.id));
    return committed.every((id) => arrived.has(id));
  };
  while (Date.now() < deadline && !allArrived()) await sleep(POLL_MS);
  // A repeat would follow its first copy closely; give it the time to show.
  await sleep(500);
  const received = reader.events();
  const ids = new Set(received.map((e) => e.id));
  const wanted = new Set(committed);
  return {
    messagesAccepted,
    committed: committed.length,
    committedReceived: committed.filter((id) => table.get(id) === 'message.received').length,
    received: received.length,
    missing: committed.filter((id) => !ids.has(id)).length,
    duplicates: received.length - ids.size,
    unexpected: [...ids].filter((id) => !wanted.has(id)).length,
  };
}

/** The service of one case: its API URL, its SMTP port, and its processes (watched and CPU-timed together). */
interface Service {
  apiUrl: string;
  smtpPort: number;
  processes: ManagedProcess[];
}

async function startService(context: SuiteContext, scope: Scope, database: BenchDatabase, topology: Topology, dnsAddress: string): Promise<Service> {
  const dns = { MAILROOM_DNS_SERVERS: dnsAddress };
  const profile = `mailroom-stream-${database.dialect}`;
  if (topology === 'one process') {
    const smtpPort = await freeLoopbackPort();
    const env = { ...dns, MAILROOM_SMTP_HOST: '127.0.0.1', MAILROOM_SMTP_PORT: String(smtpPort) };
    // All roles, as `mailroom serve` runs by default.
    const all = await startMailroom(context, scope, database.url, ['api', 'smtp', 'worker'], { env, profileName: `${profile}-all` });
    return { apiUrl: all.url, smtpPort, processes: [all.process] };
  }
  const api = await startMailroom(context, scope, database.url, ['api'], { profileName: `${profile}-api` });
  const smtp = await startMailroomSmtp(context, scope, database.url, { env: dns, profileName: `${profile}-smtp` });
  const worker = context.processes.start('mailroom serve --role worker', {
    args: [...serverFlags(context.settings, `${profile}-worker`), MAILROOM_BIN, 'serve', '--role', 'worker'],
    cwd: context.workDir,
    // info: its `worker role started` line says it is up.
    env: mailroomEnv({ MAILROOM_DATABASE_URL: database.url, MAILROOM_LOG_LEVEL: 'info', ...dns }),
  });
  scope.defer(worker.name, () => worker.stop());
  await waitForOutput(worker, /worker role started/, READY_TIMEOUT_MS, context.signal);
  return { apiUrl: api.url, smtpPort: smtp.port, processes: [api.process, smtp.process, worker] };
}

/** The subject: mail over SMTP at the steady rate, its message.received events read from the api process's stream. */
async function measureService(context: SuiteContext, scope: Scope, name: string, counts: { warmup: number; measured: number }, info: Record<string, unknown>): Promise<Measurement> {
  const [dialect, topology] = name.split(', ') as [Dialect, Topology];
  const database = await freshDatabase(context, scope, dialect, 'stream');
  const tenant = await bootstrapTenant(context, database.url);
  const dns = await startBenchDns(context, scope);
  const service = await startService(context, scope, database, topology, dns.address);
  await createMailbox(service.apiUrl, tenant.apiKey, MAILBOX, 'the stream suite reads its events', context.signal);
  const token = await loginOwner(service.apiUrl, context.signal);
  const before = await committedEvents(database, tenant.workspaceId);
  const reader = await startReader(context, scope, `${service.apiUrl}/app/api/events/stream`, token);
  const transport = nodemailer.createTransport({ host: '127.0.0.1', port: service.smtpPort, secure: false, ignoreTLS: true, name: 'sender.bench.localhost', pool: true, maxConnections: 4, maxMessages: Infinity });
  const next = mailGenerator(MAILBOX, MIX, 24, `stream-${dialect}-${Date.now()}`);
  let accepted = 0;
  const send = async () => {
    const mail = next();
    const sent = await transport.sendMail({ ...mail.options, envelope: mail.envelope });
    if (!sent.response.startsWith('250')) throw new Error(`${SUBJECT}: the service answered ${sent.response}`);
    accepted++;
  };
  try {
    const run = await warmupAndMeasure(context, reader, counts, send, service.processes);
    const check = await checkDelivery(database, tenant.workspaceId, before, reader, accepted);
    info[name] = { ...check, measured_events: run.events.length, latency_ms: latencyStats(run.events.map((e) => e.latencyMs)) };
    context.log(`  [${name}] events committed ${check.committed}, received ${check.received} (missing ${check.missing}, twice ${check.duplicates}, not committed ${check.unexpected}); messages answered 250: ${accepted}`);
    const wrong = check.missing + check.duplicates + check.unexpected > 0 || check.committed !== check.received || check.committedReceived !== accepted;
    if (wrong) throw new Error(`${SUBJECT}: events committed ${check.committed} (message.received ${check.committedReceived} for ${accepted} messages), received ${check.received}: ${check.missing} missing, ${check.duplicates} twice, ${check.unexpected} never committed`);
    return measurement(run);
  } finally {
    transport.close();
    await reader.process.stop();
  }
}

async function runCase(context: SuiteContext, name: string, info: Record<string, unknown>): Promise<ResultRow[]> {
  const { warmupS, durationS } = context.settings;
  const counts = { warmup: Math.max(MIN_WARMUP_EVENTS, Math.round(warmupS * RATE_PER_S)), measured: Math.max(MIN_EVENTS, Math.round(durationS * RATE_PER_S)) };
  context.log(`  [${name}] ${counts.warmup} warm-up + ${counts.measured} measured events at ${RATE_PER_S}/s, bare SSE server then the service…`);
  const bare = await withScope(context.log, (scope) => measureBare(context, scope, counts));
  const subject = await withScope(context.log, (scope) => measureService(context, scope, name, counts, info));
  context.log(`  [${name}] p50 / p99: bare ${bare.latencyMs.p50} / ${bare.latencyMs.p99} ms, service ${subject.latencyMs.p50} / ${subject.latencyMs.p99} ms (max ${subject.latencyMs.max} ms)`);
  return pairRows('stream', name, 'events/s', { target: BASELINE, measurement: bare }, { target: SUBJECT, measurement: subject });
}

function p99Goal(result: SuiteResult, name: string): Goal {
  const text = 'event commit → SSE client';
  const row = result.rows.find((r) => r.case === name && r.role === 'subject');
  const threshold = `p99 ≤ ${P99_GOAL_MS} ms`;
  if (!row?.latencyMs) return { goal: text, case: name, minRatio: 1, ratio: null, met: null, threshold };
  return { goal: text, case: name, minRatio: 1, ratio: row.ratio, met: row.latencyMs.p99 <= P99_GOAL_MS, threshold, measured: `p99 ${Math.round(row.latencyMs.p99)} ms` };
}

/** Event commit → SSE client latency at a steady rate, on one process and across processes. */
export const streamSuite: Suite = {
  name: 'stream',
  description: 'event commit → SSE client p50/p99 (mail over SMTP at 40/s) vs a bare node:http SSE server, one process on SQLite and PostgreSQL, api/smtp/worker processes on PostgreSQL',
  // Per case: two set-ups, then the baseline's and the service's warm-up and measured events at the steady rate.
  budgetS: (s: Readonly<BenchSettings>) =>
    CASES.length * (180 + (2 * (Math.max(MIN_WARMUP_EVENTS, s.warmupS * RATE_PER_S) + Math.max(MIN_EVENTS, s.durationS * RATE_PER_S))) / RATE_PER_S),
  async run(context: SuiteContext): Promise<SuiteResult> {
    const result: SuiteResult = {
      suite: 'stream',
      rows: [],
      skipped: [],
      failed: [],
      info: {
        rate_per_s: RATE_PER_S,
        latency: "arrival at the reader (bench/tools/sse-reader.ts, its own process) − the event's created_at, which is set inside the writing transaction: an upper bound of commit → client",
        baseline: 'bench/servers/bare-sse.server.ts: node:http writing an event of about the same size to the stream on each POST /emit, created_at taken just before the write',
      },
    };
    await forEachDialect(context, result, async (dialect) => {
      for (const c of CASES.filter((x) => x.dialect === dialect)) {
        context.signal.throwIfAborted();
        const name = caseName(c.dialect, c.topology);
        try {
          result.rows.push(...(await runCase(context, name, result.info)));
        } catch (err) {
          // One case failing (events lost or repeated, a child dying) leaves the database's other case to run.
          if (context.signal.aborted) throw err;
          const why = err instanceof Error ? err.message : String(err);
          context.log(`  [${name}] FAILED: ${why}`);
          result.failed.push({ case: name, error: why });
        }
      }
    });
    result.goals = CASES.filter((c) => DIALECTS.includes(c.dialect)).map((c) => p99Goal(result, caseName(c.dialect, c.topology)));
    return result;
  },
};
