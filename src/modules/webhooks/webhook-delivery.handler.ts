import type { Work } from '../../db/tables.js';
import { backoffDelay, type BackoffPolicy } from '../../jobs/backoff.js';
import type { ClaimedJob } from '../../jobs/queue.js';
import type { JobHandler, JobOutcome } from '../../jobs/worker.js';
import type { Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import type { Logger } from '../../lib/logger.js';
import type { Metrics, WebhookOutcome } from '../../lib/metrics.js';
import type { SecretBox } from '../../lib/secret-box.js';
import type { EventStore } from '../events/event.store.js';
import type { EventsService } from '../events/events.service.js';
import { raceAbort, WebhookUrlRefused, type AddressRules } from './address-rules.js';
import { createAttemptLog, type AttemptLogDeps, type NextStep } from './attempt-log.js';
import { signatureHeader } from './signing.js';
import type { WebhookStore } from './webhook.store.js';
import { signingSecrets } from './webhook.service.js';
import {
  BACKOFF_FACTOR,
  BACKOFF_JITTER,
  DELIVERY_CONCURRENCY,
  ENDPOINT_CONCURRENCY,
  ERROR_BODY_EXCERPT,
  MAX_ATTEMPTS,
  MAX_RETRY_AFTER_MS,
  WEBHOOK_QUEUE,
  WORKSPACE_CONCURRENCY,
  type WebhookJobPayload,
  type WebhookSender,
} from './webhook.types.js';

/** What a delivery attempt needs: the endpoint and the event's stored bytes. */
export interface DeliveryTarget {
  url: string;
  active: number;
  secret: string | null;
  previous_secrets: string;
  payload: string | null;
  event_type: string | null;
}

/** One delivery job's endpoint and event. */
export interface TargetKey {
  workspaceId: string;
  webhookId: string;
  eventId: string;
}

export interface WebhookDeliveryDeps {
  work: Work;
  store: Pick<WebhookStore, 'endpoints'> & AttemptLogDeps['store'];
  /** The stored events whose bytes are delivered. */
  feed: Pick<EventStore, 'findMany'>;
  clock: Clock;
  logger: Logger;
  queue: AttemptLogDeps['queue'];
  rules: AddressRules;
  sender: WebhookSender;
  /** MAILROOM_WEBHOOK_BACKOFF_BASE_MS, ×5 each retry, ±20%. */
  backoffBaseMs: number;
  /** MAILROOM_WEBHOOK_TIMEOUT_MS, for the whole attempt (DNS, connection, answer). */
  timeoutMs: number;
  /** Deliveries this process runs at once, over every endpoint and workspace. */
  concurrency?: number;
  /** Deliveries running at once to one endpoint, and for one workspace, in every process together. */
  endpointConcurrency?: number;
  workspaceConcurrency?: number;
  /** Opens the endpoints' secrets, only to sign an attempt. */
  box: SecretBox;
  /** Emits `webhook.disabled` when an attempt disables its endpoint. */
  events: Pick<EventsService, 'emit'>;
  /** Endpoints disabled for failing are recorded in the audit log (actor `system`). */
  audit: AttemptLogDeps['audit'];
  /** Counts each recorded attempt by what it led to. */
  metrics?: Pick<Metrics, 'webhookAttempt'>;
}

/** An attempt's next step, as metrics name it. */
const OUTCOMES: Record<NextStep['type'], WebhookOutcome> = { complete: 'delivered', retry: 'retry', bury: 'given_up', deactivate: 'gone' };

const USER_AGENT = 'Mailroom-Webhooks/0.1';
/** Past the time-out, how long an attempt may take to notice it before it is abandoned anyway. */
const ABANDON_GRACE_MS = 1000;
/** The longest wait the retry schedule reaches (~22 h before the 8th attempt), with room for jitter. */
const BACKOFF_CAP_MS = 48 * 3_600_000;

/**
 * The endpoints and events of several delivery jobs in two queries run side by side, each row matched by its id and
 * its job's workspace; undefined for a job whose endpoint is gone.
 */
async function readTargets(deps: Pick<WebhookDeliveryDeps, 'work' | 'store' | 'feed'>, keys: readonly TargetKey[]): Promise<Array<DeliveryTarget | undefined>> {
  const unique = <T>(items: T[], key: (t: T) => string) => [...new Map(items.map((t) => [key(t), t])).values()];
  const hookKeys = unique([...keys], (k) => `${k.workspaceId} ${k.webhookId}`);
  const eventKeys = unique([...keys], (k) => `${k.workspaceId} ${k.eventId}`);
  const [hooks, events] = await Promise.all([deps.store.endpoints(deps.work, hookKeys), deps.feed.findMany(deps.work, eventKeys)]);
  const hookByKey = new Map(hooks.map((h) => [`${h.workspace_id} ${h.id}`, h]));
  const eventByKey = new Map(events.map((e) => [`${e.workspace_id} ${e.id}`, e]));
  return keys.map((key) => {
    const hook = hookByKey.get(`${key.workspaceId} ${key.webhookId}`);
    if (!hook) return undefined;
    const event = eventByKey.get(`${key.workspaceId} ${key.eventId}`);
    return { url: hook.url, active: hook.active, secret: hook.secret, previous_secrets: hook.previous_secrets, payload: event?.payload ?? null, event_type: event?.type ?? null };
  });
}

/**
 * Loads delivery targets in batches: the jobs of one claim start together, and their endpoints and
 * events are read in one round trip instead of one each.
 */
function targetLoader(deps: Pick<WebhookDeliveryDeps, 'work' | 'store' | 'feed'>): (key: TargetKey) => Promise<DeliveryTarget | undefined> {
  let pending: Array<{ key: TargetKey; resolve: (t: DeliveryTarget | undefined) => void; reject: (err: Error) => void }> = [];
  const flush = () => {
    const batch = pending;
    pending = [];
    readTargets(deps, batch.map((p) => p.key)).then(
      (targets) => batch.forEach((p, i) => p.resolve(targets[i])),
      (err: Error) => batch.forEach((p) => p.reject(err)),
    );
  };
  return (key) =>
    new Promise((resolve, reject) => {
      if (pending.length === 0) setImmediate(flush);
      pending.push({ key, resolve, reject });
    });
}

/** What one attempt came to. */
interface Attempt {
  statusCode: number | null;
  error: string | null;
  success: boolean;
  /** Milliseconds the receiver asked us to wait (429/503 with Retry-After), bounded to an hour. */
  retryAfterMs: number | null;
}

/** Retry-After (RFC 9110 section 10.2.3): delay-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | null, now: number): number | null {
  if (value === null) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Math.min(Number(text) * 1000, MAX_RETRY_AFTER_MS);
  // An HTTP-date starts with the day's name (IMF-fixdate, RFC 850 and asctime forms alike).
  const date = /^[A-Za-z]{3}/.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(date)) return null;
  return Math.min(Math.max(0, date - now), MAX_RETRY_AFTER_MS);
}

const excerpt = (body: string) => {
  const text = body.replace(/\s+/g, ' ').trim();
  return text.length > ERROR_BODY_EXCERPT ? `${text.slice(0, ERROR_BODY_EXCERPT)}…` : text;
};

/**
 * The webhook delivery worker's handler: one job per endpoint and event. Each attempt checks the URL
 * against the address rules again (DNS may have changed), signs the stored event bytes, POSTs them over
 * a connection pinned to the checked address, and records the attempt and the job's next step in one
 * transaction.
 */
export function createWebhookDeliveryHandler(deps: WebhookDeliveryDeps): JobHandler<WebhookJobPayload> {
  const { work, clock, logger, queue, rules, sender, timeoutMs, box } = deps;
  const backoff: BackoffPolicy = { baseMs: deps.backoffBaseMs, factor: BACKOFF_FACTOR, capMs: BACKOFF_CAP_MS, jitter: BACKOFF_JITTER };
  // Attempts that finish together are recorded in one transaction: one commit (and flush) for many deliveries.
  const attempts = createAttemptLog({ work, clock, queue, store: deps.store, events: deps.events, audit: deps.audit });
  const loadTarget = targetLoader(deps);

  /** Why an attempt was cut short: the job's own signal (lease lost, shutdown) or the time-out. */
  function stopped(jobSignal: AbortSignal, where: string): string {
    if (jobSignal.aborted) return `aborted ${where}: ${jobSignal.reason instanceof Error ? jobSignal.reason.message : String(jobSignal.reason)}`;
    return `timed out after ${timeoutMs} ms ${where}`;
  }

  /** One attempt; `signal` is the attempt's deadline (time-out or the job's signal, whichever first). */
  async function attempt(url: string, eventId: string, body: string, secrets: string[], signal: AbortSignal, jobSignal: AbortSignal): Promise<Attempt> {
    const failed = (error: string, statusCode: number | null = null): Attempt => ({ statusCode, error, success: false, retryAfterMs: null });
    let target;
    try {
      target = await rules.check(url, signal);
    } catch (err) {
      if (err instanceof WebhookUrlRefused) return failed(`refused by the address rules: ${err.message}`);
      if (signal.aborted) return failed(stopped(jobSignal, `resolving ${new URL(url).hostname}`));
      throw err;
    }
    // IPv4 first: a receiver reachable both ways is as likely to listen there, and v4 routes are commoner.
    const pinned = target.addresses.find((a) => a.family === 4) ?? target.addresses[0]!;
    const timestamp = Math.floor(clock.now() / 1000);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
      'webhook-id': eventId,
      'webhook-timestamp': String(timestamp),
    };
    if (secrets.length > 0) headers['webhook-signature'] = signatureHeader(secrets, eventId, timestamp, body);
    const response = await sender.send({ url: target.url, address: pinned.address, family: pinned.family, headers, body, signal });
    if (response.type === 'error') {
      return failed(signal.aborted ? stopped(jobSignal, `(${pinned.address})`) : `${response.error} (${pinned.address})`);
    }
    const code = response.statusCode;
    if (code >= 200 && code < 300) return { statusCode: code, error: null, success: true, retryAfterMs: null };
    const said = response.body === '' ? '' : `: ${excerpt(response.body)}`;
    const error = code >= 300 && code < 400 ? `HTTP ${code} redirect (not followed)${said}` : `HTTP ${code}${said}`;
    return { statusCode: code, error, success: false, retryAfterMs: code === 429 || code === 503 ? parseRetryAfter(response.retryAfter, clock.now()) : null };
  }

  async function handle(job: ClaimedJob<WebhookJobPayload>, signal: AbortSignal): Promise<JobOutcome> {
    const workspaceId = job.workspaceId ?? '';
    const { webhook_id: webhookId, event_id: eventId } = job.payload;
    const target = await loadTarget({ workspaceId, webhookId, eventId });
    // Deleted or inactive: no further attempts, pending retries included.
    if (!target || target.active !== 1 || target.payload === null || target.event_type === null) return { type: 'done' };

    const startedAt = clock.now();
    const started = performance.now();
    const deadline = AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
    // The attempt obeys `deadline` itself (and says where it was cut short); this only guards against one that would not.
    const abandon = AbortSignal.any([signal, AbortSignal.timeout(timeoutMs + ABANDON_GRACE_MS)]);
    let result: Attempt;
    try {
      result = await raceAbort(attempt(target.url, eventId, target.payload, signingSecrets(box, { id: webhookId, secret: target.secret, previous_secrets: target.previous_secrets }, startedAt), deadline, signal), abandon);
    } catch (err) {
      if (!abandon.aborted) throw err;
      result = { statusCode: null, error: stopped(signal, '(no answer)'), success: false, retryAfterMs: null };
    }
    const durationMs = Math.round(performance.now() - started);

    const gone = result.statusCode === 410;
    const last = job.attempt >= Math.min(job.maxAttempts, MAX_ATTEMPTS);
    let next: NextStep;
    if (result.success) next = { type: 'complete' };
    // 410 Gone: the receiver says the endpoint no longer exists; stop, pending retries included.
    else if (gone) next = { type: 'deactivate' };
    else if (last) next = { type: 'bury', error: `gave up after ${job.attempt} attempts; last: ${result.error ?? 'failed'}` };
    else next = { type: 'retry', error: result.error ?? 'failed', delayMs: Math.max(backoffDelay(backoff, job.attempt), result.retryAfterMs ?? 0) };
    await attempts.record(
      {
        id: newId('dlv'),
        workspace_id: workspaceId,
        webhook_id: webhookId,
        event_id: eventId,
        event_type: target.event_type,
        attempt: job.attempt,
        status_code: result.statusCode,
        error: gone ? `${result.error ?? 'HTTP 410'} (the endpoint is now inactive)` : result.error,
        success: result.success ? 1 : 0,
        duration_ms: durationMs,
        delivered_at: startedAt,
      },
      job,
      next,
    );
    deps.metrics?.webhookAttempt(OUTCOMES[next.type]);
    if (gone) logger.info({ webhookId, eventId }, 'webhook endpoint answered 410 Gone; set inactive');
    else if (!result.success && last) logger.warn({ webhookId, eventId, attempt: job.attempt, error: result.error }, 'webhook delivery given up');
    // Settled above, in the attempt's transaction.
    return { type: 'settled' };
  }

  return {
    queue: WEBHOOK_QUEUE,
    concurrency: deps.concurrency ?? DELIVERY_CONCURRENCY,
    groupConcurrency: deps.endpointConcurrency ?? ENDPOINT_CONCURRENCY,
    workspaceConcurrency: deps.workspaceConcurrency ?? WORKSPACE_CONCURRENCY,
    backoff,
    handle,
  };
}
