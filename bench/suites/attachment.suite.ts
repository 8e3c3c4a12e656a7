import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { startBareSmtp, startBenchDns, type BareSmtp } from '../lib/baselines.js';
import type { Dialect } from '../lib/databases.js';
import { DIALECTS, forEachDialect, freshDatabase } from '../lib/dialects.js';
import { processCpuMs } from '../lib/cpu.js';
import { apiRequest, assertAlive, bootstrapTenant, createMailbox, startMailroom, type RunningMailroom } from '../lib/mailroom.js';
import { withScope } from '../lib/scope.js';
import type { ResultRow, Suite, SuiteContext, SuiteResult } from '../lib/suite.js';

const HOSTED_DOMAIN = 'mailroom.localhost';
const FROM_MAILBOX = `files@${HOSTED_DOMAIN}`;
const SINK_DOMAIN = 'sink.test';
const MX_HOST = `mx.${SINK_DOMAIN}`;
/** The figure: one 10 MB file (random bytes: nothing compresses it, base64 makes it 13.3 MB). */
const ATTACHMENT_BYTES = 10 * 1000 * 1000;
/** The sink's SIZE: above the composed message (the file as base64 with its line breaks, plus headers). */
const MAX_SIZE = 64 * 1024 * 1024;
/** Sends of each kind; the report gives the median CPU and the highest peak. */
const SENDS = 3;
const DELIVERY_TIMEOUT_MS = 60_000;
const CASE_BUDGET_S = 240;

/** Resident memory of a process from /proc/<pid>/status, in MiB: now (VmRSS) and its peak (VmHWM); null off Linux. */
function memoryMiB(pid: number | undefined): { rss: number; peak: number } | null {
  if (pid === undefined || process.platform !== 'linux') return null;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
  } catch {
    return null;
  }
}

/** Start the peak anew at the current RSS (proc(5): `5` > clear_refs); false where the kernel does not allow it. */
function resetPeak(pid: number | undefined): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

interface SendCost {
  cpuMs: number | null;
  answeredMs: number;
  deliveredMs: number;
  rssBeforeMiB: number | null;
  peakMiB: number | null;
}

/** One POST /send, timed to its 202 and to the sink's 250, with the server's CPU and resident memory over it. */
async function measuredSend(context: SuiteContext, service: RunningMailroom, sink: BareSmtp, apiKey: string, body: string): Promise<SendCost> {
  const pid = service.process.pid;
  const before = await sink.count(context.signal);
  const peakReset = resetPeak(pid);
  const memoryBefore = memoryMiB(pid);
  const cpuBefore = processCpuMs(pid);
  const started = performance.now();
  const res = await apiRequest(`${service.url}/send`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body }, context.signal);
  const answeredMs = performance.now() - started;
  if (res.status !== 202) throw new Error(`POST /send answered ${res.status}: ${res.text.slice(0, 300)}`);
  for (;;) {
    if ((await sink.count(context.signal)).messages > before.messages) break;
    if (performance.now() - started > DELIVERY_TIMEOUT_MS) throw new Error(`the message was not delivered within ${DELIVERY_TIMEOUT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const deliveredMs = performance.now() - started;
  const cpuAfter = processCpuMs(pid);
  const memoryAfter = memoryMiB(pid);
  assertAlive(service.process);
  return {
    cpuMs: cpuBefore === null || cpuAfter === null ? null : cpuAfter - cpuBefore,
    answeredMs,
    deliveredMs,
    rssBeforeMiB: memoryBefore?.rss ?? null,
    peakMiB: peakReset ? (memoryAfter?.peak ?? null) : null,
  };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
const round = (n: number | null) => (n === null ? null : Math.round(n * 10) / 10);

function summarize(costs: SendCost[]) {
  const cpu = costs.map((c) => c.cpuMs).filter((c): c is number => c !== null);
  const peaks = costs.map((c) => c.peakMiB).filter((p): p is number => p !== null);
  const before = costs.map((c) => c.rssBeforeMiB).filter((p): p is number => p !== null);
  return {
    cpuMs: cpu.length > 0 ? median(cpu) : null,
    answeredMs: median(costs.map((c) => c.answeredMs)),
    deliveredMs: median(costs.map((c) => c.deliveredMs)),
    peakMiB: peaks.length > 0 ? Math.max(...peaks) : null,
    rssBeforeMiB: before.length > 0 ? median(before) : null,
  };
}

function sendBody(to: string, attachment: Buffer | null): string {
  return JSON.stringify({
    from_mailbox: FROM_MAILBOX,
    to,
    subject: attachment ? 'The quarterly report' : 'A note',
    body: 'Hello,\n\nplease find the report attached.\n',
    ...(attachment ? { attachments: [{ filename: 'report.bin', content_type: 'application/octet-stream', content: attachment.toString('base64') }] } : {}),
  });
}

async function runCase(context: SuiteContext, dialect: Dialect, result: SuiteResult): Promise<void> {
  const log = (line: string) => context.log(`  [${dialect}] ${line}`);
  await withScope(context.log, async (scope) => {
    const database = await freshDatabase(context, scope, dialect, 'attachment');
    const tenant = await bootstrapTenant(context, database.url);
    const dns = await startBenchDns(context, scope, { [SINK_DOMAIN]: { MX: [{ exchange: MX_HOST, priority: 10 }] }, [MX_HOST]: { A: ['127.0.0.1'] } });
    const sink = await startBareSmtp(context, scope, MAX_SIZE, `bare-smtp-attachment-${dialect}`);
    const service = await startMailroom(context, scope, database.url, ['api', 'worker'], {
      env: { MAILROOM_HOSTED_DOMAINS: HOSTED_DOMAIN, MAILROOM_DNS_SERVERS: dns.address, MAILROOM_MX_PORT: String(sink.port), MAILROOM_RATE_LIMIT_PER_MINUTE: '0', MAILROOM_LOG_LEVEL: 'warn' },
      profileName: `mailroom-attachment-${dialect}`,
    });
    await createMailbox(service.url, tenant.apiKey, FROM_MAILBOX, 'Attachment bench sender', context.signal);
    // The first send makes the DKIM key and warms the paths; it is not measured.
    await measuredSend(context, service, sink, tenant.apiKey, sendBody(`warm@${SINK_DOMAIN}`, null));

    const plain: SendCost[] = [];
    const withFile: SendCost[] = [];
    for (let i = 0; i < SENDS; i++) {
      plain.push(await measuredSend(context, service, sink, tenant.apiKey, sendBody(`user${i}@${SINK_DOMAIN}`, null)));
      const cost = await measuredSend(context, service, sink, tenant.apiKey, sendBody(`user${i}@${SINK_DOMAIN}`, randomBytes(ATTACHMENT_BYTES)));
      withFile.push(cost);
      log(`10 MB send ${i + 1}: ${round(cost.cpuMs)} ms CPU, 202 after ${round(cost.answeredMs)} ms, delivered after ${round(cost.deliveredMs)} ms, peak RSS ${round(cost.peakMiB)} MiB (from ${round(cost.rssBeforeMiB)})`);
    }
    const base = summarize(plain);
    const subject = summarize(withFile);
    result.info[dialect] = { database: database.label, sends: SENDS, attachment_bytes: ATTACHMENT_BYTES, text_only: base, with_10mb_attachment: subject, runs: withFile };
    const row = (target: string, role: ResultRow['role'], unit: string, rate: number | null, baseRate: number | null): ResultRow => ({
      suite: 'attachment',
      case: dialect,
      target,
      role,
      unit,
      rate: rate ?? NaN,
      latencyMs: null,
      ratio: rate !== null && baseRate ? rate / baseRate : null,
      measurement: null,
    });
    result.rows.push(
      row('POST /send text only → sink: server CPU', 'baseline', 'ms CPU', base.cpuMs, base.cpuMs),
      row('POST /send + 10 MB attachment → sink: server CPU', 'subject', 'ms CPU', subject.cpuMs, base.cpuMs),
      row('POST /send + 10 MB attachment: server peak RSS', 'subject', 'MiB', subject.peakMiB, subject.rssBeforeMiB),
      row('POST /send + 10 MB attachment: until delivered', 'subject', 'ms', subject.deliveredMs, base.deliveredMs),
    );
  });
}

/** One 10 MB attachment through POST /send to delivery at a local sink: the server's CPU and memory peak. */
export const attachmentSuite: Suite = {
  name: 'attachment',
  description: 'one 10 MB attachment through POST /send to delivery at a local SMTP sink: server CPU and peak RSS, against a text-only send',
  budgetS: () => DIALECTS.length * CASE_BUDGET_S,
  async run(context: SuiteContext): Promise<SuiteResult> {
    const result: SuiteResult = { suite: 'attachment', rows: [], skipped: [], failed: [], info: {} };
    await forEachDialect(context, result, (dialect) => runCase(context, dialect, result));
    return result;
  },
};
