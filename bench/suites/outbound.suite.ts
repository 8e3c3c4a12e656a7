import nodemailer from 'nodemailer';
import { startBareSmtp, startBenchDns, type BareSmtp, type BenchDns } from '../lib/baselines.js';
import type { BenchDatabase, Dialect } from '../lib/databases.js';
import { DIALECTS, forEachDialect, freshDatabase } from '../lib/dialects.js';
import type { Measurement } from '../lib/load.js';
import { html, prose, seededRandom, senders } from '../lib/mail-content.js';
import { machineCpuMs, mainThreadSchedMs, processCpuMs } from '../lib/cpu.js';
import { apiRequest, assertAlive, BENCH_SECRET_KEY, bootstrapTenant, createMailbox, loginOwner, startMailroom, type RunningMailroom } from '../lib/mailroom.js';
import { latencyStats } from '../lib/smtp-load.js';
import { withScope } from '../lib/scope.js';
import { openOutboundMonitor, readHostedDkimKey, type OutboundCounts, type OutboundMonitor } from '../lib/store.js';
import { goal, pairRows, type BenchSettings, type ResultRow, type Suite, type SuiteContext, type SuiteResult } from '../lib/suite.js';

/** The service's hosted domain: its mail is DKIM-signed with the service's own key, no configuration needed. */
const HOSTED_DOMAIN = 'mailroom.localhost';
const FROM_MAILBOX = `newsletter@${HOSTED_DOMAIN}`;
/** The recipients' domain: MX mx.sink.test → A 127.0.0.1 on the bench's DNS server; the sink listens there. */
const SINK_DOMAIN = 'sink.test';
const MX_HOST = `mx.${SINK_DOMAIN}`;
/** Distinct recipients (user1…userN@sink.test), one per message. */
const RECIPIENTS = 100;
/** Connections of the nodemailer pool, and its closed-loop senders; Mailroom's delivery worker also runs 8 at once. */
const POOL_CONNECTIONS = 8;
/** POST /send requests in flight while enqueuing. */
const POST_CONCURRENCY = 32;
/** Fewest messages in a run (also the first calibration run), most in the measured run. */
const MIN_MESSAGES = 200;
const MAX_MESSAGES = 100_000;
/** How often the outbound table is counted near a run's end (its finish is known to within this), and at most. */
const POLL_MS = 25;
const MAX_POLL_MS = 250;
/** SIZE of the sink (Mailroom's inbound default; outbound messages are far smaller). */
const MAX_SIZE = 25 * 1024 * 1024;
/** EHLO name of both senders. */
const HELO = 'out.bench.localhost';
/** Text part of about this many bytes (±40%), an HTML alternative on half the messages. */
const TEXT_BYTES = 4000;
const HTML_SHARE = 0.5;
const SEED = 20261201;

const BASELINE = `nodemailer pool×${POOL_CONNECTIONS} → sink`;
const SUBJECT = 'POST /send → worker → sink';
const GOAL = 'outbound delivery (API → worker → sink, DKIM-signed) ≥ 0.5× nodemailer sending the same messages straight to the sink';

/** One message as the API takes it (POST /send) and as the baseline hands it to nodemailer. */
interface OutboundMail {
  fromName: string;
  to: string;
  subject: string;
  text: string;
  html: string | undefined;
}

/** Deterministic transactional-style mail: the same seed gives both targets the same sequence of messages. */
function outboundMail(seed: number): () => OutboundMail {
  const random = seededRandom(seed);
  const names = senders(50, 1).map((s) => s.name);
  let n = 0;
  return () => {
    n++;
    const text = prose(random, Math.round(TEXT_BYTES * (0.6 + random() * 0.8)));
    const withHtml = random() < HTML_SHARE;
    return {
      fromName: names[Math.floor(random() * names.length)]!,
      to: `user${1 + Math.floor(random() * RECIPIENTS)}@${SINK_DOMAIN}`,
      subject: `Your order ${100_000 + n} has shipped`,
      text,
      html: withHtml ? html(text) : undefined,
    };
  };
}

/** A run of `count` messages from first send to last acceptance. */
interface Batch {
  count: number;
  wallMs: number;
  /** Per message: sendMail time (baseline) or POST /send answer time (subject). */
  latenciesMs: number[];
  /** Subject: when the last POST /send was answered (all queued), ms after the first was sent. */
  enqueuedMs?: number;
}

/** What one target sends, a batch at a time. */
type Target = (count: number) => Promise<Batch>;

interface Measured {
  /** The measured run. */
  batch: Batch;
  /** Messages sent by this target in all (calibration/warm-up and measured run). */
  sent: number;
  rate: number;
}

/**
 * Calibrate (which is the warm-up): runs until BENCH_WARMUP_S has passed, at least two (the first pays
 * for a cold start: JIT, the worker's idle poll, new connections). Then one run sized to last about
 * BENCH_DURATION_S at the last calibration run's rate; `around` brackets only that run (CPU readings).
 */
async function calibrateAndMeasure(settings: Readonly<BenchSettings>, target: Target, around: { before(): void; after(): void }, log: (line: string) => void): Promise<Measured> {
  let sent = 0;
  let warmMs = 0;
  let count = MIN_MESSAGES;
  let rate = 0;
  for (let round = 0; round < 6; round++) {
    const batch = await target(count);
    sent += batch.count;
    warmMs += batch.wallMs;
    rate = batch.count / (batch.wallMs / 1000);
    if (round >= 1 && warmMs >= settings.warmupS * 1000) break;
    count = Math.max(MIN_MESSAGES, Math.round((rate * (settings.warmupS * 1000 - warmMs)) / 1000));
  }
  const messages = Math.min(MAX_MESSAGES, Math.max(MIN_MESSAGES, Math.round(rate * settings.durationS)));
  log(`    calibrated at ${rate.toFixed(0)} msg/s: measuring ${messages} messages`);
  around.before();
  const batch = await target(messages);
  around.after();
  sent += batch.count;
  return { batch, sent, rate: batch.count / (batch.wallMs / 1000) };
}

/** The baseline: a nodemailer pool sending straight to the sink, DKIM-signing with the service's own key. */
function nodemailerTarget(port: number, key: { selector: string; privateKey: string }, next: () => OutboundMail, signal: AbortSignal): { send: Target; close(): void } {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    ignoreTLS: true,
    name: HELO,
    pool: true,
    maxConnections: POOL_CONNECTIONS,
    maxMessages: Infinity,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 60_000,
    dkim: { domainName: HOSTED_DOMAIN, keySelector: key.selector, privateKey: key.privateKey },
  });
  const runId = `${process.pid}.${Date.now()}`;
  let n = 0;
  const send: Target = async (count) => {
    signal.throwIfAborted();
    const latenciesMs: number[] = [];
    const errors: string[] = [];
    let taken = 0;
    const sender = async () => {
      while (taken < count && errors.length === 0 && !signal.aborted) {
        taken++;
        const id = `bl.${runId}.${++n}`;
        const mail = next();
        const started = performance.now();
        try {
          await transport.sendMail({
            from: { name: mail.fromName, address: FROM_MAILBOX },
            to: mail.to,
            subject: mail.subject,
            text: mail.text,
            ...(mail.html !== undefined ? { html: mail.html } : {}),
            messageId: `<${id}@${HOSTED_DOMAIN}>`,
            date: new Date(),
            // A VERP return path as Mailroom's (bounces+<id>@hosted domain).
            envelope: { from: `bounces+${id}@${HOSTED_DOMAIN}`, to: [mail.to] },
          });
        } catch (err) {
          errors.push(err instanceof Error ? err.message : String(err));
          return;
        }
        latenciesMs.push(performance.now() - started);
      }
    };
    const started = performance.now();
    await Promise.all(Array.from({ length: POOL_CONNECTIONS }, sender));
    const wallMs = performance.now() - started;
    signal.throwIfAborted();
    if (errors.length > 0) throw new Error(`${BASELINE}: sendMail failed (${errors.length} errors, first: ${errors[0]}); the numbers would be meaningless`);
    return { count, wallMs, latenciesMs };
  };
  return { send, close: () => transport.close() };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The wait before the next count of the outbound table: a quarter of the time the remaining messages
 * need at the rate so far, between POLL_MS and MAX_POLL_MS. Counting scans the growing table on the
 * database server, which shares the cores with the service; polled every 25 ms throughout, it cost
 * PostgreSQL about 4 % of a core during the run. The end of a run is still seen within POLL_MS.
 */
function pollDelayMs(remaining: number, done: number, elapsedMs: number): number {
  if (done <= 0 || remaining <= 0) return POLL_MS;
  const expectedMs = (remaining / done) * elapsedMs;
  return Math.min(MAX_POLL_MS, Math.max(POLL_MS, expectedMs / 4));
}

function describeCounts(c: OutboundCounts): string {
  return `outbound ${JSON.stringify(c.byStatus)}, delivery jobs ${JSON.stringify(c.jobs)}`;
}

/**
 * The subject: `count` POST /send requests (POST_CONCURRENCY in flight), timed from the first POST
 * until the outbound table holds every one of them as `accepted`. Any refused POST, any failed,
 * unknown or deferred delivery fails the run.
 */
function mailroomTarget(service: RunningMailroom, apiKey: string, monitor: OutboundMonitor, next: () => OutboundMail, signal: AbortSignal): Target {
  return async (count) => {
    signal.throwIfAborted();
    const before = await monitor.counts();
    const acceptedBefore = before.byStatus.accepted ?? 0;
    if (acceptedBefore !== before.total) throw new Error(`${SUBJECT}: messages left over from the previous run (${describeCounts(before)})`);
    const latenciesMs: number[] = [];
    let taken = 0;
    // A holder, not a `let`: the posters set it from their own async frames.
    const failure: { post: Error | null } = { post: null };
    const poster = async () => {
      while (taken < count && failure.post === null && !signal.aborted) {
        taken++;
        const mail = next();
        const body = JSON.stringify({ from_mailbox: FROM_MAILBOX, from_name: mail.fromName, to: mail.to, subject: mail.subject, body: mail.text, ...(mail.html !== undefined ? { html: mail.html } : {}) });
        const started = performance.now();
        try {
          const res = await apiRequest(`${service.url}/send`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body }, signal);
          if (res.status !== 202) throw new Error(`POST /send answered ${res.status}: ${res.text.slice(0, 300)}`);
        } catch (err) {
          failure.post ??= err instanceof Error ? err : new Error(String(err));
          return;
        }
        latenciesMs.push(performance.now() - started);
      }
    };
    const started = performance.now();
    let posted = false;
    let enqueuedMs = 0;
    const posting = Promise.all(Array.from({ length: POST_CONCURRENCY }, poster)).then(() => {
      posted = true;
      enqueuedMs = performance.now() - started;
    });
    // Generous: a stalled pipeline fails the run instead of hanging the suite.
    const deadline = Date.now() + Math.max(120_000, count * 100);
    let last = before;
    try {
      for (;;) {
        if (failure.post) throw failure.post;
        signal.throwIfAborted();
        assertAlive(service.process);
        last = await monitor.counts();
        const accepted = (last.byStatus.accepted ?? 0) - acceptedBefore;
        const problems = (last.byStatus.failed ?? 0) + (last.byStatus.unknown ?? 0) + last.withError;
        if (problems > 0) throw new Error(`${SUBJECT}: delivery failed or was deferred (${describeCounts(last)}; e.g. ${last.firstError ?? '-'})`);
        if (posted && accepted >= count) break;
        if (Date.now() > deadline) throw new Error(`${SUBJECT}: ${count} messages not all accepted in time (${describeCounts(last)})`);
        await sleep(pollDelayMs(count - accepted, accepted, performance.now() - started));
      }
    } finally {
      // Never leave requests running behind a failure.
      await posting.catch(() => undefined);
    }
    const wallMs = performance.now() - started;
    if (last.total - before.total !== count) throw new Error(`${SUBJECT}: ${count} messages were answered 202 but ${last.total - before.total} outbound rows were written`);
    return { count, wallMs, latenciesMs, enqueuedMs };
  };
}

interface CpuMeter {
  before(): void;
  after(): void;
  /** CPU ms of a named child during the run (null off Linux). */
  ms(name: string): number | null;
  /** CPU ms of the bench process itself (the nodemailer sender, or the POST client and the poller). */
  benchMs(): number;
  /** Cores busy on the whole machine during the run, and how many of them were not the bench's processes (null off Linux). */
  cores(): { machine: number; others: number } | null;
  /**
   * Shares of the run's wall time a child's main thread (its event loop) spent on a CPU, runnable but
   * waiting for a CPU, and neither (idle, or blocked in a system call such as fsync).
   */
  eventLoop(name: string): { on_cpu: number; waiting_for_cpu: number; idle_or_blocked: number } | null;
}

/**
 * CPU time of the bench's children, of the bench process and of the whole machine, read at the edges
 * of a run. "others" is what the rest of the machine used meanwhile (the PostgreSQL server included):
 * when it is large the numbers of that run are of a shared machine.
 */
function cpuMeter(pids: Record<string, number | undefined>): CpuMeter {
  const start: Record<string, number | null> = {};
  const end: Record<string, number | null> = {};
  const schedStart: Record<string, { runMs: number; waitMs: number } | null> = {};
  const schedEnd: Record<string, { runMs: number; waitMs: number } | null> = {};
  let benchStart = process.cpuUsage();
  let benchUs = 0;
  let machineStart = machineCpuMs();
  let machineEnd = machineStart;
  let wallStart = performance.now();
  let wallMs = 0;
  const ms = (name: string) => {
    const a = start[name];
    const b = end[name];
    return a === undefined || b === undefined || a === null || b === null ? null : b - a;
  };
  return {
    before() {
      for (const [name, pid] of Object.entries(pids)) {
        start[name] = processCpuMs(pid);
        schedStart[name] = mainThreadSchedMs(pid);
      }
      benchStart = process.cpuUsage();
      machineStart = machineCpuMs();
      wallStart = performance.now();
    },
    after() {
      const bench = process.cpuUsage(benchStart);
      benchUs = bench.user + bench.system;
      machineEnd = machineCpuMs();
      wallMs = performance.now() - wallStart;
      for (const [name, pid] of Object.entries(pids)) {
        end[name] = processCpuMs(pid);
        schedEnd[name] = mainThreadSchedMs(pid);
      }
    },
    ms,
    eventLoop(name) {
      const a = schedStart[name];
      const b = schedEnd[name];
      if (!a || !b || wallMs <= 0) return null;
      const share = (ms: number) => Math.round((ms / wallMs) * 1000) / 1000;
      const run = b.runMs - a.runMs;
      const wait = b.waitMs - a.waitMs;
      return { on_cpu: share(run), waiting_for_cpu: share(wait), idle_or_blocked: share(Math.max(0, wallMs - run - wait)) };
    },
    benchMs: () => benchUs / 1000,
    cores() {
      if (!machineStart || !machineEnd || wallMs <= 0) return null;
      const machine = machineEnd.busy - machineStart.busy;
      const ours = Object.keys(pids).reduce((sum, name) => sum + (ms(name) ?? 0), benchUs / 1000);
      return { machine: Math.round((machine / wallMs) * 100) / 100, others: Math.round((Math.max(0, machine - ours) / wallMs) * 100) / 100 };
    },
  };
}

const describeCores = (meter: CpuMeter) => {
  const c = meter.cores();
  return c ? `${c.machine.toFixed(2)} cores busy on the machine, ${c.others.toFixed(2)} of them other processes` : 'machine load unknown';
};

const round = (n: number) => Math.round(n * 100) / 100;
const perMessageUs = (ms: number | null, messages: number) => (ms === null ? null : Math.round((ms * 1000) / messages));

function measurement(batch: Batch, connections: number, cpuMs: number | null): Measurement {
  return {
    requestsPerSec: batch.count / (batch.wallMs / 1000),
    latencyMs: latencyStats(batch.latenciesMs),
    totalRequests: batch.count,
    durationS: batch.wallMs / 1000,
    connections,
    errors: 0,
    timeouts: 0,
    non2xx: 0,
    serverCpuUsPerRequest: cpuMs === null ? null : (cpuMs * 1000) / batch.count,
    serverCpuUtilization: cpuMs === null ? null : cpuMs / batch.wallMs,
  };
}

/** Sink count check: the sink answered exactly `expected` more messages than at `before`. */
async function sinkDelta(sink: BareSmtp, before: { messages: number; bytes: number }, expected: number, who: string, signal: AbortSignal): Promise<{ messages: number; bytes: number }> {
  const now = await sink.count(signal);
  const delta = { messages: now.messages - before.messages, bytes: now.bytes - before.bytes };
  if (delta.messages !== expected) throw new Error(`${who}: ${expected} messages were sent and accepted, but the sink counted ${delta.messages}`);
  return now;
}

async function runDialect(context: SuiteContext, dialect: Dialect, result: SuiteResult): Promise<void> {
  const caseName = dialect;
  const log = (line: string) => context.log(`  [${caseName}] ${line}`);
  await withScope(context.log, async (scope) => {
    const database: BenchDatabase = await freshDatabase(context, scope, dialect, 'outbound');
    const tenant = await bootstrapTenant(context, database.url);
    const dns: BenchDns = await startBenchDns(context, scope, { [SINK_DOMAIN]: { MX: [{ exchange: MX_HOST, priority: 10 }] }, [MX_HOST]: { A: ['127.0.0.1'] } });
    const sink = await startBareSmtp(context, scope, MAX_SIZE, `bare-smtp-outbound-${dialect}`);
    const service = await startMailroom(context, scope, database.url, ['api', 'worker'], {
      env: {
        MAILROOM_HOSTED_DOMAINS: HOSTED_DOMAIN,
        MAILROOM_DNS_SERVERS: dns.address,
        MAILROOM_MX_PORT: String(sink.port),
        MAILROOM_SMTP_HOSTNAME: HELO,
        MAILROOM_RATE_LIMIT_PER_MINUTE: '0',
        MAILROOM_LOG_LEVEL: 'warn',
      },
      profileName: `mailroom-outbound-${dialect}`,
    });
    await createMailbox(service.url, tenant.apiKey, FROM_MAILBOX, 'Outbound bench sender', context.signal);
    const monitor = await openOutboundMonitor(database);
    scope.defer('outbound monitor', () => monitor.close());
    const info: Record<string, unknown> = { database: database.label };
    result.info[caseName] = info;

    // One message end to end first: proves the route (DNS, MX port, sink) and makes the service create its DKIM key.
    const sink0 = await sink.count(context.signal);
    await mailroomTarget(service, tenant.apiKey, monitor, outboundMail(SEED + 1), context.signal)(1);
    const sink1 = await sinkDelta(sink, sink0, 1, `${SUBJECT} (first message)`, context.signal);
    const key = await readHostedDkimKey(database, BENCH_SECRET_KEY);
    if (!key) throw new Error('the service delivered a message but stored no hosted DKIM key');
    log(`first message delivered (${sink1.bytes - sink0.bytes} bytes at the sink, DKIM selector ${key.selector})`);

    // Baseline: the same sequence of messages (same seed), straight to the sink, signed with the same key.
    log(`${BASELINE}: calibration/warm-up, then about ${context.settings.durationS} s…`);
    const baseline = nodemailerTarget(sink.port, key, outboundMail(SEED), context.signal);
    const baseCpu = cpuMeter({ mailroom: service.process.pid, sink: sink.process.pid, dns: dns.process.pid });
    let base: Measured;
    try {
      base = await calibrateAndMeasure(context.settings, baseline.send, baseCpu, context.log);
    } finally {
      baseline.close();
    }
    assertAlive(sink.process);
    const sink2 = await sinkDelta(sink, sink1, base.sent, BASELINE, context.signal);
    log(`  ${base.rate.toFixed(0)} msg/s; nodemailer (bench process) ${perMessageUs(baseCpu.benchMs(), base.batch.count)} µs CPU/message; ${describeCores(baseCpu)}`);

    log(`${SUBJECT}: calibration/warm-up, then about ${context.settings.durationS} s…`);
    const subject = mailroomTarget(service, tenant.apiKey, monitor, outboundMail(SEED), context.signal);
    const subjectCpu = cpuMeter({ mailroom: service.process.pid, sink: sink.process.pid, dns: dns.process.pid });
    const measuredSubject = await calibrateAndMeasure(context.settings, subject, subjectCpu, context.log);
    assertAlive(service.process);
    const sink3 = await sinkDelta(sink, sink2, measuredSubject.sent, SUBJECT, context.signal);
    log(
      `  ${measuredSubject.rate.toFixed(0)} msg/s; mailroom ${perMessageUs(subjectCpu.ms('mailroom'), measuredSubject.batch.count)} µs CPU/message, ` +
        `bench client ${perMessageUs(subjectCpu.benchMs(), measuredSubject.batch.count)} µs, DNS server ${perMessageUs(subjectCpu.ms('dns'), measuredSubject.batch.count)} µs; ` +
        describeCores(subjectCpu),
    );
    log(`  all ${measuredSubject.batch.count} POST /send answered after ${((measuredSubject.batch.enqueuedMs ?? 0) / 1000).toFixed(1)} s, all accepted after ${(measuredSubject.batch.wallMs / 1000).toFixed(1)} s`);
    const loop = subjectCpu.eventLoop('mailroom');
    if (loop) {
      const pct = (share: number) => `${(share * 100).toFixed(0)}%`;
      log(`  mailroom's event loop: ${pct(loop.on_cpu)} on a CPU, ${pct(loop.waiting_for_cpu)} runnable but waiting for a CPU, ${pct(loop.idle_or_blocked)} idle or blocked (e.g. fsync)`);
    }

    // Every message accepted exactly once, and every delivery job settled (a done job is deleted).
    const expectedTotal = 1 + measuredSubject.sent;
    let final = await monitor.counts();
    for (let i = 0; i < 200 && Object.keys(final.jobs).length > 0; i++) {
      await sleep(25);
      final = await monitor.counts();
    }
    if (final.total !== expectedTotal || (final.byStatus.accepted ?? 0) !== expectedTotal || Object.keys(final.jobs).length > 0) {
      throw new Error(`expected ${expectedTotal} outbound messages, all accepted, and an empty delivery queue: ${describeCounts(final)}`);
    }
    // The API's view of the same: GET /app/api/sent (the session surface; the API-key surface has no /sent).
    const token = await loginOwner(service.url, context.signal);
    const page = await apiRequest(`${service.url}/app/api/sent?limit=50`, { headers: { 'x-service-session': token } }, context.signal);
    const sent = page.status === 200 ? (JSON.parse(page.text) as { total?: number; messages?: Array<{ status?: string }> }) : {};
    if (sent.total !== expectedTotal || !sent.messages?.every((m) => m.status === 'accepted')) {
      throw new Error(`GET /app/api/sent (HTTP ${page.status}) says ${String(sent.total)} sent messages, statuses ${JSON.stringify([...new Set(sent.messages?.map((m) => m.status))])}; expected ${expectedTotal}, all accepted`);
    }
    const queries = await dns.stopAndCount();
    const sunk = await sink.stopAndCount();
    if (sunk !== sink3.messages) throw new Error(`the sink counted ${sunk} messages at the end, ${sink3.messages} before`);
    log(`checked: ${expectedTotal} outbound messages all accepted (GET /app/api/sent agrees), delivery queue empty; sink counted ${base.sent} baseline + ${expectedTotal} service messages; ${queries.total} DNS queries ${JSON.stringify(queries.byType)}`);

    const subjectMessages = measuredSubject.batch.count;
    const baseMessages = base.batch.count;
    info.baseline = {
      measured_messages: baseMessages,
      wall_s: round(base.batch.wallMs / 1000),
      sent_total: base.sent,
      mean_message_bytes_at_sink: Math.round((sink2.bytes - sink1.bytes) / (sink2.messages - sink1.messages)),
      cpu_column: 'the bench process (nodemailer: compose, DKIM, SMTP client)',
      sender_cpu_us_per_message: perMessageUs(baseCpu.benchMs(), baseMessages),
      sink_cpu_us_per_message: perMessageUs(baseCpu.ms('sink'), baseMessages),
      cores_busy: baseCpu.cores(),
    };
    info.subject = {
      measured_messages: subjectMessages,
      wall_s: round(measuredSubject.batch.wallMs / 1000),
      all_posted_after_s: round((measuredSubject.batch.enqueuedMs ?? 0) / 1000),
      sent_total: measuredSubject.sent + 1,
      mean_message_bytes_at_sink: Math.round((sink3.bytes - sink2.bytes) / (sink3.messages - sink2.messages)),
      cpu_column: 'the mailroom serve --role api,worker process',
      mailroom_cpu_us_per_message: perMessageUs(subjectCpu.ms('mailroom'), subjectMessages),
      sink_cpu_us_per_message: perMessageUs(subjectCpu.ms('sink'), subjectMessages),
      dns_server_cpu_us_per_message: perMessageUs(subjectCpu.ms('dns'), subjectMessages),
      bench_client_cpu_us_per_message: perMessageUs(subjectCpu.benchMs(), subjectMessages),
      cores_busy: subjectCpu.cores(),
      mailroom_event_loop: subjectCpu.eventLoop('mailroom'),
      post_send_latency_ms: latencyStats(measuredSubject.batch.latenciesMs),
    };
    info.dns = { ...queries, per_message: round(queries.total / expectedTotal) };

    const rows: ResultRow[] = pairRows(
      'outbound',
      caseName,
      'msg/s',
      { target: BASELINE, measurement: measurement(base.batch, POOL_CONNECTIONS, baseCpu.benchMs()) },
      { target: SUBJECT, measurement: measurement(measuredSubject.batch, POST_CONCURRENCY, subjectCpu.ms('mailroom')) },
    );
    result.rows.push(...rows);
  });
}

/** Outbound delivery through the API and the worker vs nodemailer straight to the same sink, on each database. */
export const outboundSuite: Suite = {
  name: 'outbound',
  description: 'outbound msg/s (POST /send → worker → sink, DKIM) vs a nodemailer pool sending the same messages to the same sink, on SQLite and PostgreSQL',
  // Per database: set-up and the first message, then two targets of calibration (up to 6 runs, the first possibly
  // slow) and a measured run that may overshoot its calibrated length, and the checks, all generously.
  budgetS: (s: Readonly<BenchSettings>) => DIALECTS.length * (120 + 2 * (60 + s.warmupS * 3 + s.durationS * 4)),
  async run(context: SuiteContext): Promise<SuiteResult> {
    const result: SuiteResult = {
      suite: 'outbound',
      rows: [],
      skipped: [],
      failed: [],
      info: {
        baseline: `nodemailer pool of ${POOL_CONNECTIONS} connections in the bench process, closed loop, DKIM-signing (relaxed/relaxed, rsa-sha256) with the service's own hosted key`,
        subject: 'mailroom serve --role api,worker: POST /send (API key), the delivery worker signs (hosted domain, service key), MX lookup, one SMTP connection per message',
        from: FROM_MAILBOX,
        recipients: `user1…user${RECIPIENTS}@${SINK_DOMAIN} (MX ${MX_HOST} → 127.0.0.1, the sink's port as MAILROOM_MX_PORT)`,
        text_bytes: TEXT_BYTES,
        html_share: HTML_SHARE,
        pool_connections: POOL_CONNECTIONS,
        post_concurrency: POST_CONCURRENCY,
        poll_ms: POLL_MS,
      },
    };
    await forEachDialect(context, result, (dialect) => runDialect(context, dialect, result));
    result.goals = DIALECTS.map((d) => goal(result, GOAL, d, 0.5));
    return result;
  },
};
