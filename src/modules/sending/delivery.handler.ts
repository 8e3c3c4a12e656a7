import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import type { Metrics } from '../../lib/metrics.js';
import { backoffDelay, type BackoffPolicy } from '../../jobs/backoff.js';
import type { JobHandler, JobOutcome } from '../../jobs/worker.js';
import type { DomainService } from '../domains/domain.service.js';
import type { EmitInput } from '../events/event.types.js';
import { toMessageListView } from '../messages/message.views.js';
import type { DeliveryJob, RunStart, SendingMailStore } from '../mail/sending-mail.store.js';
import { RouteError, type DeliveryResult, type RecipientRefusal, type RouteResolver, type SmtpDeliverer, type SmtpRoute } from './delivery.types.js';
import { replyStatus } from '../suppressions/suppression.service.js';
import type { SuppressionTable } from '../mail/suppression.table.js';
import { domainOf } from './recipients.js';
import { withDate } from './schedule.js';
import type { Attempt, DeliveryStatus, RecipientState } from '../mail/outbound.table.js';
import { DELIVERY_QUEUE } from './sending.service.js';
import type { MessageSigner } from './signing-pool.js';
import type { ReturnPaths } from '../../lib/verp.js';
import type { UnsubscribeTokens } from '../../lib/unsubscribe-token.js';

export interface DeliveryDeps {
  /** The pool, for the reads a run makes outside its lease-guarded steps. */
  work: Work;
  /**
   * A run's statements: its start, DATA mark and settlement (with its events and the job's outcome, in one
   * transaction the store's group commit shares), and the suppression check.
   */
  mail: Pick<SendingMailStore, 'startDeliveryRun' | 'markDataStarted' | 'settleDeliveryRun' | 'suppressedAmong'>;
  clock: Clock;
  logger: Logger;
  domains: Pick<DomainService, 'signingKey'>;
  routes: RouteResolver;
  deliverer: SmtpDeliverer;
  /** DKIM signatures (on worker threads in a running service). */
  signer: MessageSigner;
  /** Each recipient's own envelope sender (verp.ts). */
  returnPaths: ReturnPaths;
  /** Each recipient's one-click unsubscribe fields, for messages sent with `unsubscribe: true`. */
  unsubscribe: Pick<UnsubscribeTokens, 'headerLines'>;
  /** First retry after DELIVERY_RETRY_BASE_MS, doubling, capped at an hour, ±20%. */
  retryBaseMs: number;
  /** A message not accepted after this long fails (RFC 5321 section 4.5.4.1). */
  maxAgeMs: number;
  concurrency?: number;
  /** Counts the recipients of each recorded run by where it left them. */
  metrics?: Pick<Metrics, 'delivery'>;
  /** Delivery jobs of one workspace running at once in every process together (MAILROOM_QUEUE_WORKSPACE_CONCURRENCY); unset = no cap. */
  workspaceConcurrency?: number;
}

const HOUR_MS = 3_600_000;
const DONE = { type: 'done' } as const satisfies JobOutcome;
const SETTLED = { type: 'settled' } as const satisfies JobOutcome;

type Emitted = { type: 'message.accepted' | 'message.failed' | 'message.bounced'; extra: Record<string, unknown> };
/** An address a permanent RCPT refusal suppresses: the row less its workspace, message and time, added at settling. */
type Suppressed = { address: string; detail: string; status: string };

/** One run of a delivery job: what it read, and the recipients, attempts and events it changes as it goes. */
interface Run {
  job: DeliveryJob;
  start: RunStart;
  recipients: RecipientState[];
  /** The recipients that were pending when the run started (the same objects, which the run updates). */
  started: RecipientState[];
  attempts: Attempt[];
  emit: Emitted[];
  suppress: Suppressed[];
  lastResponse: string | null;
  lastError: string | null;
}

function overall(recipients: readonly RecipientState[]): DeliveryStatus {
  if (recipients.some((r) => r.status === 'pending')) return 'queued';
  if (recipients.some((r) => r.status === 'unknown')) return 'unknown';
  if (recipients.some((r) => r.status === 'accepted')) return 'accepted';
  return 'failed';
}

/** Pending recipients of one domain (one route lookup), by envelope sender: one SMTP transaction each. */
type DomainGroup = Map<string, RecipientState[]>;

/**
 * The pending recipients by domain, then by envelope sender. Each recipient has a return path of its own, so that a
 * bounce or complaint can speak only for the recipient it came back for (decision 414): one transaction per recipient.
 * A message sent before that has one return path for all (its `mail_from`), and keeps one transaction per domain.
 * The return paths are at the sending domain's return-path host when it is verified at the time of the run.
 */
function pendingGroups(ctx: Context, start: RunStart, recipients: readonly RecipientState[]): Map<string, DomainGroup> {
  const { delivery } = start;
  const host = start.ownDomain?.return_path_host ?? undefined;
  const parsed = ctx.returnPaths.parse(delivery.mail_from);
  const shared = parsed.kind === 'valid' && parsed.recipient === null;
  const groups = new Map<string, DomainGroup>();
  recipients.forEach((r, place) => {
    if (r.status !== 'pending') return;
    const domain = domainOf(r.address);
    const mailFrom = shared ? delivery.mail_from : ctx.returnPaths.address(delivery.message_id, place, host);
    const byMailFrom = groups.get(domain) ?? new Map<string, RecipientState[]>();
    byMailFrom.set(mailFrom, [...(byMailFrom.get(mailFrom) ?? []), r]);
    groups.set(domain, byMailFrom);
  });
  return groups;
}

/** The domain has no route (its MX lookup failed): a permanent answer fails the group, a temporary one waits. */
function recordNoRoute(run: Run, group: RecipientState[], err: unknown, at: string): void {
  const permanent = err instanceof RouteError && err.permanent;
  const reason = err instanceof Error ? err.message : String(err);
  const mtaSts = err instanceof RouteError ? err.mtaSts : null;
  run.attempts.push({ at, mx: null, recipients: group.map((r) => r.address), outcome: 'no_route', response: reason, tls: null, mta_sts: mtaSts });
  run.lastError = reason;
  for (const r of group) {
    r.response = reason;
    if (permanent) {
      r.status = 'failed';
      run.emit.push({ type: 'message.failed', extra: { recipient: r.address, reason } });
    }
  }
}

/** Each recipient's status after the group's last transaction, and the events it causes (but `message.accepted`). */
function recordResult(run: Run, group: RecipientState[], result: DeliveryResult): void {
  run.lastResponse = result.response;
  const refusedBy = new Map(('refused' in result ? result.refused : []).map((x) => [x.recipient.toLowerCase(), x]));
  for (const r of group) {
    const refusal = refusedBy.get(r.address);
    if (result.type === 'sent' && !refusal) {
      r.status = 'accepted';
      r.response = result.response;
    } else if (result.type === 'ambiguous') {
      r.status = 'unknown';
      r.response = result.response;
    } else {
      const code = refusal?.code ?? (result.type === 'sent' ? 0 : result.code ?? 0);
      r.response = refusal?.response ?? result.response;
      if (code >= 500) {
        r.status = 'failed';
        run.emit.push({ type: 'message.failed', extra: { recipient: r.address, reason: r.response } });
        // A permanent refusal at RCPT TO is a hard bounce of the address; a 5xx to the whole transaction (MAIL
        // FROM, DATA) is about the sender or the content, and suppresses nobody (decision 331).
        if (refusal) recordRefusal(run, r.address, refusal);
      } else {
        run.lastError = r.response;
      }
    }
  }
}

/** One `message.accepted` for a domain's recipients its transactions delivered, with the last acceptance's reply. */
function recordAccepted(run: Run, domainRecipients: readonly RecipientState[], lastSent: DeliveryResult | null): void {
  const accepted = domainRecipients.filter((r) => r.status === 'accepted').map((r) => r.address);
  if (lastSent === null || accepted.length === 0) return;
  run.emit.push({ type: 'message.accepted', extra: { recipients: accepted, smtp_response: lastSent.response } });
}

/** A permanent RCPT refusal: `message.bounced` (as Postmark counts it) and the address's suppression (decision 332). */
function recordRefusal(run: Run, address: string, refusal: RecipientRefusal): void {
  const status = replyStatus(refusal.code, refusal.response);
  run.suppress.push({ address, detail: refusal.response, status });
  run.emit.push({ type: 'message.bounced', extra: { recipient: address, reason: refusal.response, status, status_code: status, suppressed: true } });
}

/**
 * Recipients suppressed since the message was sent fail without a transaction, as Postmark and Resend check at send
 * time (decision 358): a scheduled message waits up to 30 days and a deferred one hours, and an address may bounce,
 * complain or be added by hand meanwhile. The first run of a message sent at once skips the read: its send checked.
 */
async function dropSuppressed(ctx: Context, run: Run): Promise<void> {
  const { delivery } = run.start;
  if (delivery.send_at === null && run.job.attempt <= 1) return;
  const pending = run.recipients.filter((r) => r.status === 'pending');
  const found = await ctx.mail.suppressedAmong(ctx.work, delivery.workspace_id, pending.map((r) => r.address));
  for (const r of pending) {
    if (!found.has(r.address)) continue;
    r.status = 'failed';
    r.response = `not sent: ${r.address} is on this workspace's suppression list`;
    run.lastError = r.response;
    run.emit.push({ type: 'message.failed', extra: { recipient: r.address, reason: r.response, suppressed: true } });
  }
}

/** `host [address]:port`; a route without a port (the sandbox's capture) is its host alone. */
const mxName = (route: SmtpRoute) => `${route.host}${route.address && route.address !== route.host ? ` [${route.address}]` : ''}${route.port > 0 ? `:${route.port}` : ''}`;

/** What the steps of a run use: the handler's dependencies and its retry policy. */
type Context = DeliveryDeps & { backoff: BackoffPolicy };

const isoNow = (clock: Clock) => new Date(clock.now()).toISOString();

/** The run's recipients by where it left them, once it is recorded. */
function countOutcomes(ctx: Context, run: Run): void {
  if (!ctx.metrics) return;
  const counts = { accepted: 0, deferred: 0, failed: 0, unknown: 0 };
  for (const r of run.started) counts[r.status === 'pending' ? 'deferred' : r.status] += 1;
  for (const [outcome, n] of Object.entries(counts) as Array<[keyof typeof counts, number]>) ctx.metrics.delivery(outcome, n);
}

/** Record the run's outcome with its events; false when the run lost its lease and nothing was written. */
async function settle(ctx: Context, run: Run, status: DeliveryStatus, lastError: string | null, outcome: Exclude<JobOutcome, { type: 'settled' }>): Promise<boolean> {
  let emitted: EmitInput[] = [];
  if (run.emit.length > 0) {
    const view = toMessageListView(run.start.message);
    const workspaceId = run.start.delivery.workspace_id;
    // A bounce's `status` is its SMTP status; the message's own moves to `delivery_status` (decision 328).
    emitted = run.emit.map((e) => ({ workspaceId, type: e.type, data: { ...view, status, ...(e.type === 'message.bounced' ? { delivery_status: status } : {}), ...e.extra } }));
  }
  const { recipients, attempts, lastResponse: smtpResponse } = run;
  const { workspace_id, message_id } = run.start.delivery;
  const now = ctx.clock.now();
  const suppressions = run.suppress.map((x): SuppressionTable => ({ workspace_id, address: x.address, reason: 'hard_bounce', detail: x.detail, status_code: x.status, message_id, created_at: now }));
  const recorded = await ctx.mail.settleDeliveryRun(run.job, { status, recipients, attempts, lastError, smtpResponse, events: emitted, suppressions, outcome, backoff: ctx.backoff });
  if (recorded) countOutcomes(ctx, run);
  return recorded;
}

/** A worker died (or its lease ran out) after DATA began: the peer may have the message. Never resend. */
async function settleInterrupted(ctx: Context, run: Run, now: number): Promise<JobOutcome> {
  for (const r of run.recipients) if (r.status === 'pending') r.status = 'unknown';
  run.attempts.push({ at: new Date(now).toISOString(), mx: null, recipients: [], outcome: 'ambiguous', response: 'delivery interrupted after DATA began' });
  await settle(ctx, run, 'unknown', 'delivery interrupted after DATA began; not retried to avoid a duplicate', DONE);
  return SETTLED;
}

/** The message was not accepted in time: its pending recipients fail. */
async function settleExpired(ctx: Context, run: Run): Promise<JobOutcome> {
  const hours = Math.round(ctx.maxAgeMs / HOUR_MS);
  for (const r of run.recipients) {
    if (r.status !== 'pending') continue;
    r.status = 'failed';
    run.emit.push({ type: 'message.failed', extra: { recipient: r.address, reason: `not delivered within ${hours} h; last reply: ${r.response ?? 'none'}` } });
  }
  await settle(ctx, run, overall(run.recipients), 'gave up: maximum age reached', DONE);
  return SETTLED;
}

/** The bytes one SMTP transaction sends to its group of recipients. */
type MessageFor = (group: readonly RecipientState[]) => Promise<Buffer>;

/**
 * The message as it goes out: a scheduled one dated its `send_at` (a reschedule moves only the time, never
 * rewrites the stored source), then DKIM-signed with the key of the sender's domain, if it has one, so the
 * signature covers the final Date. Signed once for every recipient; but a message sent with one-click unsubscribe
 * gives each recipient's copy its own List-Unsubscribe fields, so each copy is signed for its recipient (the fields
 * must be in h=, RFC 8058 section 4).
 */
async function outgoing(ctx: Context, run: Run): Promise<MessageFor> {
  const { message, ownDomain, delivery } = run.start;
  const stored = Buffer.from(message.raw);
  const raw = delivery.send_at === null ? stored : withDate(stored, delivery.send_at);
  const key = await ctx.domains.signingKey(domainOf(message.mailbox_address), ownDomain);
  const sign = (bytes: Buffer) => (key ? ctx.signer.sign(bytes, key, delivery.workspace_id) : Promise.resolve(bytes));
  if (delivery.list_unsubscribe !== 1) {
    const once = await sign(raw);
    return () => Promise.resolve(once);
  }
  return (group) => {
    // One recipient a transaction (its own return path); the old whole-message return paths never had this option.
    const place = group.length === 1 ? run.recipients.indexOf(group[0]!) : -1;
    if (place < 0) return sign(raw);
    return sign(Buffer.concat([Buffer.from(ctx.unsubscribe.headerLines(delivery.message_id, place), 'latin1'), raw]));
  };
}

/** One SMTP transaction for `group`, trying the routes in order; null when there was none to try. */
async function transact(ctx: Context, run: Run, message: Buffer, mailFrom: string, group: RecipientState[], candidates: SmtpRoute[]): Promise<DeliveryResult | null> {
  const { delivery } = run.start;
  const notifyDelivery = delivery.delivery_notification === 1 ? { envelopeId: delivery.message_id } : undefined;
  let result: DeliveryResult | null = null;
  for (const route of candidates) {
    result = await ctx.deliverer.deliver({
      route,
      mailFrom,
      recipients: group.map((r) => r.address),
      message,
      origin: { workspaceId: delivery.workspace_id, messageId: delivery.message_id },
      notifyDelivery,
      onDataStart: async () => {
        // No byte of DATA without a live lease: a run whose job was claimed again must not send a second copy.
        if (!(await ctx.mail.markDataStarted(run.job))) throw new Error('lease lost or expired before DATA; not sending');
      },
    });
    const mx = mxName(route);
    run.attempts.push({ at: isoNow(ctx.clock), mx, recipients: group.map((r) => r.address), outcome: result.type, response: result.response, tls: result.tls ?? null, mta_sts: route.mtaSts ?? null });
    for (const r of group) r.mx = mx;
    // Only a peer that could not have taken the message sends us on to the next host.
    if (!(result.type === 'deferred' && result.beforeMail)) break;
  }
  return result;
}

/** A domain's pending recipients: its routes looked up once, then a transaction per envelope sender. */
async function deliverDomain(ctx: Context, run: Run, messageFor: MessageFor, domain: string, byMailFrom: DomainGroup): Promise<void> {
  const all = [...byMailFrom.values()].flat();
  let candidates: SmtpRoute[];
  try {
    candidates = await ctx.routes.routes(domain);
  } catch (err) {
    recordNoRoute(run, all, err, isoNow(ctx.clock));
    return;
  }
  let lastSent: DeliveryResult | null = null;
  let unreachable: DeliveryResult | null = null;
  for (const [mailFrom, group] of byMailFrom) {
    if (unreachable) {
      recordResult(run, group, unreachable);
      continue;
    }
    const result = await transact(ctx, run, await messageFor(group), mailFrom, group, candidates);
    if (!result) continue;
    recordResult(run, group, result);
    if (result.type === 'sent') lastSent = result;
    // No host of the domain took a connection: the domain's other recipients would wait out the same time-outs now.
    else if (result.type === 'deferred' && result.beforeMail) unreachable = result;
  }
  recordAccepted(run, all, lastSent);
}

/** Settle the run with what its transactions gave: done, or a retry while recipients are pending. */
async function finish(ctx: Context, run: Run): Promise<JobOutcome> {
  const { job } = run;
  const status = overall(run.recipients);
  const outcome = status === 'queued' ? { type: 'retry' as const, error: run.lastError ?? 'deferred', delayMs: backoffDelay(ctx.backoff, job.attempt) } : DONE;
  const lastError = status === 'failed' ? run.lastError ?? run.lastResponse : run.lastError;
  const messageId = run.start.delivery.message_id;
  if (!(await settle(ctx, run, status, lastError, outcome))) {
    ctx.logger.warn({ messageId, attempt: job.attempt }, 'delivery lease lost; another run owns the message');
  } else if (status === 'queued') {
    ctx.logger.info({ messageId, attempt: job.attempt, error: run.lastError }, 'delivery deferred');
  }
  return SETTLED;
}

async function handle(ctx: Context, job: DeliveryJob): Promise<JobOutcome> {
  const start = await ctx.mail.startDeliveryRun(job);
  if (!start) return DONE;
  const { delivery } = start;
  if (delivery.status === 'accepted' || delivery.status === 'failed' || delivery.status === 'unknown' || delivery.status === 'cancelled') return DONE;
  const started = delivery.recipients.filter((r) => r.status === 'pending');
  const run: Run = { job, start, recipients: delivery.recipients, started, attempts: delivery.attempts, emit: [], suppress: [], lastResponse: delivery.smtp_response, lastError: null };
  const now = ctx.clock.now();
  if (delivery.data_started_at !== null) return settleInterrupted(ctx, run, now);
  // A scheduled message ages from its send_at: waiting 30 days for it is not failing to deliver it.
  if (now - (delivery.send_at ?? delivery.created_at) > ctx.maxAgeMs) return settleExpired(ctx, run);
  if (!start.started) return DONE; // another run owns the message now
  await dropSuppressed(ctx, run);
  const messageFor = await outgoing(ctx, run);
  for (const [domain, byMailFrom] of pendingGroups(ctx, start, run.recipients)) await deliverDomain(ctx, run, messageFor, domain, byMailFrom);
  return finish(ctx, run);
}

/** The delivery worker's job handler: one job per outbound message, a transaction per recipient (its return path). */
export function createDeliveryHandler(deps: DeliveryDeps): JobHandler<{ message_id: string }> {
  const backoff: BackoffPolicy = { baseMs: deps.retryBaseMs, factor: 2, capMs: HOUR_MS, jitter: 0.2 };
  const ctx: Context = { ...deps, backoff };
  return {
    queue: DELIVERY_QUEUE,
    concurrency: deps.concurrency ?? 8,
    ...(deps.workspaceConcurrency === undefined ? {} : { workspaceConcurrency: deps.workspaceConcurrency }),
    backoff,
    handle: (job) => handle(ctx, job),
  };
}
