import { execFileSync } from 'node:child_process';
import { startBareSmtp, startBenchDns, type BenchDns } from '../lib/baselines.js';
import type { BenchDatabase, Dialect } from '../lib/databases.js';
import { DIALECTS, forEachDialect, freshDatabase } from '../lib/dialects.js';
import { mailGenerator, type MailMix } from '../lib/mail-content.js';
import { apiRequest, assertAlive, bootstrapTenant, BENCH_DOMAIN, createMailbox, startMailroom, startMailroomSmtp, type RunningMailroom, type Tenant } from '../lib/mailroom.js';
import { ensureSmtpSource, measureNodemailer, measureSmtpSource } from '../lib/smtp-load.js';
import type { Measurement } from '../lib/load.js';
import { processCpuMs, processTreeCpuMs, threadCpuMs, threadCpuPerOp } from '../lib/cpu.js';
import { postfixUnavailable, startPostfix } from '../lib/postfix.js';
import { withScope } from '../lib/scope.js';
import { countStoredMessages } from '../lib/store.js';
import { addReference, goal, pairRows, type BenchSettings, type ResultRow, type Suite, type SuiteContext, type SuiteResult } from '../lib/suite.js';

/** The one hosted mailbox every message goes to. */
const MAILBOX = `box@${BENCH_DOMAIN}`;
/** Envelope sender of the smtp-source cases; sender.test has no DNS records (NXDOMAIN), so SPF and DMARC say none. */
const SENDER = 'a@sender.test';
/** smtp-source payload per message (-l); with its four header lines a message is about 10.4 KB. */
const MESSAGE_BYTES = 10 * 1024;
/** MAILROOM_SMTP_MAX_SIZE of the service and SIZE of the sink (the service's default). */
const MAX_SIZE = 25 * 1024 * 1024;
/** One latency sample every this many ms beside an smtp-source run. */
const PROBE_INTERVAL_MS = 100;
/** Real MIME for the nodemailer case: about 10 KB of text + HTML, every tenth message with a 100 KB attachment. */
const MIME_MIX: MailMix = { textBytes: 4500, htmlShare: 0.5, replyShare: 0.2, attachmentShare: 0.1, attachmentBytes: 100 * 1024 };
const MIME_SEED = 20261121;

const BASELINE = 'bare smtp-server sink';
const SUBJECT = 'mailroom serve --role smtp';
const GOAL = 'ingest with reused sessions on SQLite ≥ 0.25× the bare sink';
/** The `vs postfix` reference: Postfix's whole inbound pipeline into a Maildir (bench/lib/postfix.ts). */
const POSTFIX = 'postfix';
const POSTFIX_TARGET = 'postfix: smtpd → cleanup → queue → virtual(8) Maildir';
const POSTFIX_GOAL = 'SQLite ingest with reused sessions ≥ 2× Postfix';

interface CaseSpec {
  /** Short name in the table, after the database. */
  name: string;
  /** What it does, for the log and the README. */
  what: string;
  kind: 'smtp-source' | 'mime';
  sessions: number;
  reuse: boolean;
  minMessages: number;
  maxMessages: number;
}

const CASES: readonly CaseSpec[] = [
  { name: 'reuse×10', what: 'smtp-source -d -s 10: 10 sessions, each sending message after message on one connection', kind: 'smtp-source', sessions: 10, reuse: true, minMessages: 200, maxMessages: 500_000 },
  // One connection per message: ~N connections end in TIME_WAIT within a minute, so stay well inside the ephemeral port range.
  { name: '1/conn×200', what: 'smtp-source -s 200: 200 parallel sessions, one message per connection', kind: 'smtp-source', sessions: 200, reuse: false, minMessages: 400, maxMessages: 25_000 },
  { name: 'mime×10', what: 'nodemailer pool of 10 connections, real MIME (text+HTML, replies), 10% with a 100 KB attachment', kind: 'mime', sessions: 10, reuse: true, minMessages: 0, maxMessages: 0 },
];

/** The cases to run: all, or those named in BENCH_SMTP_CASES (comma-separated, e.g. `reuse×10` or `reuse`, by prefix). */
function selectedCases(): readonly CaseSpec[] {
  const names = (process.env.BENCH_SMTP_CASES ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (names.length === 0) return CASES;
  const chosen = CASES.filter((c) => names.some((n) => c.name.startsWith(n)));
  if (chosen.length === 0) throw new Error(`BENCH_SMTP_CASES: no case matches ${names.join(', ')} (${CASES.map((c) => c.name).join(', ')})`);
  return chosen;
}

interface Measured {
  measurement: Measurement;
  /** Messages answered 250 by this target in this case (warm-up, measured run and probe included). */
  delivered: number;
  details: Record<string, unknown>;
}

interface DialectSetup {
  dialect: Dialect;
  database: BenchDatabase;
  dns: BenchDns;
  smtpSource: string;
  /** Why the Postfix reference cannot run here, or null. */
  postfixUnavailable: string | null;
}

/** A target that accepts before it delivers, and whose CPU is spread over child processes (Postfix). */
interface DeliveringTarget {
  serverCpuMs: () => number | null;
  arrivals: (count: number, signal: AbortSignal) => Promise<number>;
}

async function measureTarget(context: SuiteContext, setup: DialectSetup, spec: CaseSpec, target: string, port: number, pid: number | undefined, delivering?: DeliveringTarget): Promise<Measured> {
  const { settings } = context;
  if (spec.kind === 'smtp-source') {
    const run = await measureSmtpSource(
      target,
      {
        binary: setup.smtpSource,
        port,
        sessions: spec.sessions,
        reuse: spec.reuse,
        bodyBytes: MESSAGE_BYTES,
        from: SENDER,
        to: MAILBOX,
        warmupS: settings.warmupS,
        durationS: settings.durationS,
        minMessages: spec.minMessages,
        maxMessages: spec.maxMessages,
        probeIntervalMs: PROBE_INTERVAL_MS,
        serverPid: pid,
        ...delivering,
      },
      context.processes,
      context.signal,
      context.log,
    );
    return {
      measurement: run.measurement,
      delivered: run.delivered,
      details: {
        measured_messages: run.measuredMessages,
        wall_s: round(run.measurement.durationS),
        ...(delivering ? { smtp_source_exit_s: round(run.loadExitS) } : {}),
        latency_probe_samples: run.probeSamples,
        little_mean_ms: round(run.littleMeanMs),
      },
    };
  }
  const next = mailGenerator(MAILBOX, MIME_MIX, MIME_SEED, `${process.pid}.${Date.now()}`);
  const run = await measureNodemailer(target, { port, connections: spec.sessions, next, warmupS: settings.warmupS, durationS: settings.durationS, serverPid: pid }, context.signal);
  return { measurement: run.measurement, delivered: run.delivered, details: { messages_in_window: run.measurement.totalRequests, delivered_total: run.delivered, with_attachment: run.withAttachment } };
}

const round = (n: number) => Math.round(n * 100) / 100;

/**
 * The Postfix reference of an smtp-source case, under the same load as the service: a fresh private Postfix,
 * stopped and removed before the service is measured. Any failure makes it unavailable (with why), not the case.
 */
async function measurePostfix(context: SuiteContext, setup: DialectSetup, spec: CaseSpec, caseName: string): Promise<{ target: string; measurement: Measurement; details: Record<string, unknown> } | { unavailable: string }> {
  if (spec.kind !== 'smtp-source') throw new Error('the Postfix reference runs under smtp-source load only');
  if (setup.postfixUnavailable !== null) return { unavailable: setup.postfixUnavailable };
  try {
    return await withScope(context.log, async (scope) => {
      const postfix = await startPostfix(context, scope, { mailbox: MAILBOX, maxSize: MAX_SIZE });
      context.log(`  [${caseName}] ${POSTFIX_TARGET}: ${spec.what}…`);
      const pid = postfix.process.pid;
      const run = await measureTarget(context, setup, spec, POSTFIX_TARGET, postfix.port, pid, { serverCpuMs: () => processTreeCpuMs(pid), arrivals: postfix.arrivals });
      assertAlive(postfix.process);
      context.log(`  [${caseName}] checked: ${run.delivered} messages in Postfix's Maildir (all answered 250)`);
      return { target: POSTFIX_TARGET, measurement: run.measurement, details: { ...run.details, maildir_files: run.delivered, logged_deliveries: postfix.loggedDeliveries() } };
    });
  } catch (err) {
    if (context.signal.aborted) throw err;
    const message = err instanceof Error ? err.message : String(err);
    context.log(`  [${caseName}] ${POSTFIX_TARGET}: FAILED, the case goes on without it: ${message}`);
    return { unavailable: message.split('\n')[0] ?? message };
  }
}

async function runCase(context: SuiteContext, setup: DialectSetup, spec: CaseSpec, info: Record<string, unknown>): Promise<ResultRow[]> {
  const caseName = `${setup.dialect} ${spec.name}`;
  return withScope(context.log, async (scope) => {
    const sink = await startBareSmtp(context, scope, MAX_SIZE, `bare-smtp-${spec.name.replace(/\W+/g, '')}`);
    const service = await startMailroomSmtp(context, scope, setup.database.url, {
      env: { MAILROOM_DNS_SERVERS: setup.dns.address, MAILROOM_SMTP_HOSTNAME: 'mx.bench.localhost', MAILROOM_SMTP_MAX_SIZE: String(MAX_SIZE), MAILROOM_LOG_LEVEL: 'warn' },
      profileName: `mailroom-smtp-${setup.dialect}-${spec.name.replace(/\W+/g, '')}`,
    });

    context.log(`  [${caseName}] ${BASELINE}: ${spec.what}…`);
    const base = await measureTarget(context, setup, spec, BASELINE, sink.port, sink.process.pid);
    assertAlive(sink.process);
    const postfix = spec.kind === 'smtp-source' ? await measurePostfix(context, setup, spec, caseName) : null;

    const storedBefore = await countStoredMessages(setup.database, MAILBOX);
    context.log(`  [${caseName}] ${SUBJECT}: ${spec.what}…`);
    // The DNS server shares the machine: its CPU per message is recorded (not charged to the service's column).
    const dnsCpuBefore = processCpuMs(setup.dns.process.pid);
    const threadsBefore = threadCpuMs(service.process.pid);
    const subject = await measureTarget(context, setup, spec, SUBJECT, service.port, service.process.pid);
    const threadsAfter = threadCpuMs(service.process.pid);
    const dnsCpuAfter = processCpuMs(setup.dns.process.pid);
    // Which of the service's threads the time went to: SMTP (main), store, analysis, V8's own.
    if (threadsBefore && threadsAfter && service.process.pid !== undefined) {
      const perThread = threadCpuPerOp(threadsBefore, threadsAfter, service.process.pid, subject.delivered);
      subject.details.service_thread_cpu_us_per_message = perThread;
      context.log(`  [${caseName}] ${SUBJECT}: CPU per message by thread: main ${perThread.main} µs, others ${perThread.others.map((us) => `${us} µs`).join(', ') || 'none'}`);
    }
    assertAlive(service.process);
    if (dnsCpuBefore !== null && dnsCpuAfter !== null) subject.details.dns_server_cpu_us_per_message = Math.round(((dnsCpuAfter - dnsCpuBefore) * 1000) / subject.delivered);

    // Nothing may be dropped silently: every 250 must be a stored row, and the sink must have seen every message.
    const stored = (await countStoredMessages(setup.database, MAILBOX)) - storedBefore;
    if (stored !== subject.delivered) throw new Error(`${SUBJECT}: ${subject.delivered} messages were answered 250 but ${stored} were stored`);
    const sunk = await sink.stopAndCount();
    if (sunk !== base.delivered) throw new Error(`${BASELINE}: the client had ${base.delivered} messages answered 250 but the sink counted ${sunk}`);
    context.log(`  [${caseName}] checked: ${stored} messages stored (all answered 250), sink counted ${sunk}`);

    info[caseName] = { baseline: base.details, subject: { ...subject.details, stored }, ...(postfix ? { postfix: 'details' in postfix ? postfix.details : postfix } : {}) };
    const rows = pairRows('smtp', caseName, 'msg/s', { target: BASELINE, measurement: base.measurement }, { target: SUBJECT, measurement: subject.measurement });
    if (postfix) addReference(rows, POSTFIX, postfix);
    return rows;
  });
}

function postfixVersion(): string | null {
  try {
    return execFileSync('dpkg-query', ['-W', '-f', '${Version}', 'postfix'], { timeout: 5000, stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim() || null;
  } catch {
    return null;
  }
}

async function runDialect(context: SuiteContext, dialect: Dialect, smtpSource: string, postfixMissing: string | null, result: SuiteResult): Promise<void> {
  await withScope(context.log, async (scope) => {
    const database = await freshDatabase(context, scope, dialect, 'smtp');
    result.info[`${dialect}_database`] = database.label;
    const tenant: Tenant = await bootstrapTenant(context, database.url);
    // The api role creates the mailbox and answers the final count; it idles while mail comes in.
    const api: RunningMailroom = await startMailroom(context, scope, database.url, ['api'], { profileName: `mailroom-api-${dialect}-smtp-suite` });
    await createMailbox(api.url, tenant.apiKey, MAILBOX, 'SMTP bench mailbox', context.signal);
    const dns = await startBenchDns(context, scope);
    const setup: DialectSetup = { dialect, database, dns, smtpSource, postfixUnavailable: postfixMissing };

    for (const spec of selectedCases()) {
      context.signal.throwIfAborted();
      const caseName = `${dialect} ${spec.name}`;
      try {
        const rows = await runCase(context, setup, spec, result.info);
        result.rows.push(...rows);
      } catch (err) {
        if (context.signal.aborted) throw err;
        const message = err instanceof Error ? err.message : String(err);
        context.log(`  [${caseName}] FAILED: ${message}`);
        result.failed.push({ case: caseName, error: message });
      }
    }

    // The API's total (folder counters) must agree with the rows.
    const ingested = await countStoredMessages(database, MAILBOX);
    const page = await apiRequest(`${api.url}/inbox?mailbox=${encodeURIComponent(MAILBOX)}&limit=1`, { headers: { authorization: `Bearer ${tenant.apiKey}` } }, context.signal);
    const total = page.status === 200 ? (JSON.parse(page.text) as { total?: number }).total : undefined;
    if (total !== ingested) throw new Error(`GET /inbox says the mailbox holds ${String(total)} messages (HTTP ${page.status}) but ${ingested} rows are stored`);
    const queries = await dns.stopAndCount();
    result.info[`${dialect}_stored_total`] = ingested;
    result.info[`${dialect}_dns`] = { ...queries, per_message: ingested > 0 ? round(queries.total / ingested) : null };
    context.log(`  [${dialect}] ${ingested} messages in the mailbox, GET /inbox agrees; ${queries.total} DNS queries (${JSON.stringify(queries.byType)})`);
  });
}

/** SMTP ingest of ~10 KB messages into one mailbox vs a bare smtp-server sink, on each database. */
export const smtpSuite: Suite = {
  name: 'smtp',
  description: 'SMTP ingest msg/s (smtp-source reused / one-per-connection, nodemailer MIME) vs a bare smtp-server sink and vs Postfix into a Maildir, on SQLite and PostgreSQL',
  // Per database: set-up, then per case up to three servers and targets (bare sink, Postfix, the service: calibration/
  // warm-up, a measured run that may overshoot the calibrated length, the count check), all generously.
  budgetS: (s: Readonly<BenchSettings>) => 660 + DIALECTS.length * (90 + CASES.length * (30 + 3 * (s.warmupS * 2 + s.durationS * 3 + 90))),
  async run(context: SuiteContext): Promise<SuiteResult> {
    const result: SuiteResult = {
      suite: 'smtp',
      rows: [],
      skipped: [],
      failed: [],
      info: { mailbox: MAILBOX, sender: SENDER, message_bytes: MESSAGE_BYTES, mime_mix: MIME_MIX, probe_interval_ms: PROBE_INTERVAL_MS, cases: Object.fromEntries(CASES.map((c) => [c.name, c.what])) },
    };
    // Installing postfix (once, when smtp-source is missing) counts against the 660 s above.
    const smtpSource = await ensureSmtpSource(context.processes, context.log);
    result.info.smtp_source = { path: smtpSource, postfix_version: postfixVersion() };
    const postfixMissing = postfixUnavailable();
    if (postfixMissing !== null) context.log(`  vs postfix: n/a (${postfixMissing})`);
    await forEachDialect(context, result, (dialect) => runDialect(context, dialect, smtpSource, postfixMissing, result));
    result.goals = [goal(result, GOAL, 'sqlite reuse×10', 0.25), goal(result, POSTFIX_GOAL, 'sqlite reuse×10', 2, POSTFIX)];
    return result;
  },
};
