import { afterCommit } from '../../db/commit-hooks.js';
import type { Work } from '../../db/tables.js';
import type { EventStore } from '../events/event.store.js';
import type { Queue } from '../../jobs/queue.js';
import type { Clock } from '../../lib/clock.js';
import { iso } from '../../lib/clock.js';
import { conflict, invalid, notFound } from '../../lib/errors.js';
import { isSealed, type SecretBox } from '../../lib/secret-box.js';
import { newId } from '../../lib/ids.js';
import { EVENT_TYPES, type EventType, type FeedCursor, type StoredEvent } from '../events/event.types.js';
import type { EventsService } from '../events/events.service.js';
import { actorOf, type TenantContext } from '../tenancy/tenancy.types.js';
import { AUDIT_ACTIONS, type AuditAction } from '../audit/audit.actions.js';
import type { AuditLog } from '../audit/audit.service.js';
import { WebhookUrlRefused, type AddressRules } from './address-rules.js';
import { generateSecret, secretProblem } from './signing.js';
import type { PreviousSecret, WebhookDeliveryTable, WebhookTable } from './webhook.table.js';
import { isTestEventFor, missedEvents, type RecoveryDeps } from './recovery.js';
import type { ReplayLimits } from './replay-limits.js';
import type { WebhookStore } from './webhook.store.js';
import {
  MAX_ATTEMPTS,
  MAX_PREVIOUS_SECRETS,
  MAX_WEBHOOKS_PER_WORKSPACE,
  RECOVER_MAX_AGE_MS,
  SECRET_OVERLAP_MS,
  WEBHOOK_QUEUE,
  type CreatedWebhookView,
  type DeliveryView,
  type RecoverResult,
  type WebhookJobPayload,
  type WebhookView,
} from './webhook.types.js';

export interface WebhookInput {
  url?: string | undefined;
  event_types?: string[] | undefined;
  secret?: string | undefined;
  active?: boolean | undefined;
}

export interface WebhookService {
  list(tenant: TenantContext): Promise<{ webhooks: WebhookView[] }>;
  /** A new endpoint; its URL passes the address rules now. Without `secret` one is generated and shown once. */
  create(tenant: TenantContext, input: WebhookInput & { url: string }): Promise<CreatedWebhookView>;
  get(tenant: TenantContext, webhookId: string): Promise<WebhookView>;
  /** Change the fields given; a new secret keeps the old one signing for 24 hours; inactive drops pending retries. */
  update(tenant: TenantContext, webhookId: string, input: WebhookInput): Promise<WebhookView>;
  remove(tenant: TenantContext, webhookId: string): Promise<{ ok: true; webhook_id: string }>;
  /** The endpoint's delivery attempts, newest first. */
  deliveries(tenant: TenantContext, webhookId: string, limit: number): Promise<{ deliveries: DeliveryView[] }>;
  /**
   * Queue again every event since `since` that this endpoint's filter takes and that it has not
   * received (no successful attempt) and is not waiting for (no pending job): failed, given up, or emitted while the
   * endpoint was inactive. At most RECOVER_SCAN_LIMIT events are examined, newest first; `before` continues.
   */
  recover(tenant: TenantContext, webhookId: string, input: { since: string; before?: string | undefined }): Promise<RecoverResult>;
  /**
   * Send one stored event to this endpoint again, whatever became of it before, with the same event id and bytes,
   * when its filter takes the event's type (or it is this endpoint's test event). `queued` is false when a delivery
   * of it to this endpoint was pending already (nothing is added).
   */
  replay(tenant: TenantContext, webhookId: string, eventId: string): Promise<{ ok: true; event_id: string; queued: boolean }>;
  /** Store one synthetic event (`data.test = true`) and queue it for this endpoint only, whatever its filter. */
  test(tenant: TenantContext, webhookId: string, eventType: string): Promise<{ ok: true; event_id: string }>;
  /** The outbox subscriber: one delivery job per active endpoint whose filter takes the event, in the producer's transaction. */
  fanOut(trx: Work, event: StoredEvent): Promise<void>;
  /** Start-up: encrypt the secrets still stored in plaintext (from before encryption at rest); returns how many endpoints. */
  sealStoredSecrets(): Promise<number>;
}

/** The endpoint operations the service uses. */
export type WebhookServiceStore = Pick<
  WebhookStore,
  'insert' | 'list' | 'count' | 'find' | 'active' | 'update' | 'delete' | 'deliveries' | 'received' | 'withPlaintextSecrets' | 'replaceSecrets'
>;

export interface WebhookDeps {
  work: Work;
  store: WebhookServiceStore;
  /** The event log: positions, the backward walk of recover, and the event a replay sends again. */
  feed: Pick<EventStore, 'cursorOf' | 'readBefore' | 'find'>;
  clock: Clock;
  queue: Pick<Queue, 'enqueue' | 'enqueueMany' | 'enqueueNew' | 'hurry' | 'cancelGroup' | 'pendingPayloads'>;
  events: Pick<EventsService, 'emit'>;
  rules: AddressRules;
  /** Called after a transaction that queued deliveries commits (wakes this process's worker). */
  wake: (queue: string) => void;
  /** Seals secrets at rest (MAILROOM_SECRET_KEY); they are opened only to sign a delivery. */
  box: SecretBox;
  /** The rate and pending caps of replay, recover and test. */
  limits: ReplayLimits;
  /** Endpoints created, changed, deleted, and replays and recoveries asked for, in the audit log. */
  audit: Pick<AuditLog, 'record'>;
}

/** What `since` takes: an RFC 3339 date-time (Date.parse alone would also take "2026" or "Nov 30"). */
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;
const inactive = (id: string) => conflict('webhook_inactive', `webhook ${id} is inactive; activate it first (PATCH active: true)`);

/** `recover`'s since as epoch ms: a date-time with a zone, not in the future, at most RECOVER_MAX_AGE_MS ago. */
function checkSince(raw: string, now: number): number {
  const since = ISO_DATE_TIME.test(raw) ? Date.parse(raw) : Number.NaN;
  if (Number.isNaN(since)) throw invalid('invalid_since', `since: not an ISO 8601 date-time with a zone (e.g. 2026-11-30T08:00:00Z): ${raw}`);
  if (since > now) throw invalid('invalid_since', `since: ${raw} is in the future`);
  if (since < now - RECOVER_MAX_AGE_MS) throw invalid('invalid_since', `since: at most ${RECOVER_MAX_AGE_MS / 86_400_000} days ago`);
  return since;
}

const webhookNotFound = (id: string) => notFound('webhook_not_found', `no webhook ${id}`);
const KNOWN_EVENTS = new Set<string>(EVENT_TYPES);

export function toWebhookView(row: WebhookTable): WebhookView {
  return {
    webhook_id: row.id,
    url: row.url,
    event_types: JSON.parse(row.event_types) as string[],
    active: row.active === 1,
    has_secret: row.secret !== null,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    disabled_at: row.disabled_at === null ? null : iso(row.disabled_at),
    disabled_reason: row.disabled_reason,
  };
}

function toDeliveryView(row: WebhookDeliveryTable): DeliveryView {
  return {
    delivery_id: row.id,
    event_id: row.event_id,
    event_type: row.event_type,
    attempt: row.attempt,
    status_code: row.status_code,
    error: row.error,
    success: row.success === 1,
    duration_ms: row.duration_ms,
    delivered_at: iso(row.delivered_at),
  };
}

/**
 * The audit entries of an update: one per kind of change it made (the URL or filter, the secret, the state), each
 * only when the value really changed. Never the secret itself.
 */
export function updateEntries(current: WebhookTable, values: Partial<WebhookTable>): Array<{ action: AuditAction; details?: Record<string, unknown> }> {
  const entries: Array<{ action: AuditAction; details?: Record<string, unknown> }> = [];
  const before: Record<string, unknown> = {};
  const after: Record<string, unknown> = {};
  if (values.url !== undefined && values.url !== current.url) {
    before.url = current.url;
    after.url = values.url;
  }
  if (values.event_types !== undefined && values.event_types !== current.event_types) {
    before.event_types = JSON.parse(current.event_types) as unknown;
    after.event_types = JSON.parse(values.event_types) as unknown;
  }
  if (Object.keys(after).length > 0) entries.push({ action: AUDIT_ACTIONS.webhookUpdated, details: { before, after } });
  if (values.secret !== undefined) entries.push({ action: AUDIT_ACTIONS.webhookSecretRotated });
  if (values.active !== undefined && values.active !== current.active) {
    entries.push({ action: values.active === 1 ? AUDIT_ACTIONS.webhookEnabled : AUDIT_ACTIONS.webhookDisabled, details: values.active === 1 ? {} : { reason: 'turned off by hand' } });
  }
  return entries;
}

/** Whether an endpoint's filter (JSON array; empty = every event) takes an event type. */
export function filterTakes(eventTypes: string, type: string): boolean {
  const list = JSON.parse(eventTypes) as string[];
  return list.length === 0 || list.includes(type);
}

/** The filter as stored: known names only, each once, in the order given. */
function normalizeEventTypes(list: string[]): string[] {
  for (const name of list) {
    if (!KNOWN_EVENTS.has(name)) throw invalid('invalid_event_type', `unknown event type '${name}' (known: ${EVENT_TYPES.join(', ')})`);
  }
  return [...new Set(list)];
}

type StoredSecrets = Pick<WebhookTable, 'id' | 'secret' | 'previous_secrets'>;
/** Where a secret is stored: its associated data, so a sealed secret opens only in its own endpoint's row. */
const secretContext = (id: string) => `webhooks.secret:${id}`;
const previousContext = (id: string) => `webhooks.previous_secrets:${id}`;
/** Opens a sealed secret; a plaintext one (only before the start-up step sealed it) is taken as it is. */
const openOne = (box: SecretBox, stored: string, context: string) => (isSealed(stored) ? box.open(stored, context) : stored);

/** An endpoint's secrets in plaintext: its own and those it replaced. */
function openSecrets(box: SecretBox, row: StoredSecrets): { secret: string | null; previous: PreviousSecret[] } {
  return {
    secret: row.secret === null ? null : openOne(box, row.secret, secretContext(row.id)),
    previous: (JSON.parse(row.previous_secrets) as PreviousSecret[]).map((p) => ({ secret: openOne(box, p.secret, previousContext(row.id)), until: p.until })),
  };
}

/** The stored form of an endpoint's secrets. */
function sealSecrets(box: SecretBox, id: string, secret: string | null, previous: PreviousSecret[]): Pick<WebhookTable, 'secret' | 'previous_secrets'> {
  return {
    secret: secret === null ? null : box.seal(secret, secretContext(id)),
    previous_secrets: JSON.stringify(previous.map((p) => ({ secret: box.seal(p.secret, previousContext(id)), until: p.until }))),
  };
}

/** The secrets an endpoint signs with at `now`: its own, then those replaced less than 24 hours ago. */
export function signingSecrets(box: SecretBox, row: StoredSecrets, now: number): string[] {
  const { secret, previous } = openSecrets(box, row);
  const current = previous.filter((p) => p.until > now).map((p) => p.secret);
  return [...(secret === null ? [] : [secret]), ...current.filter((s) => s !== secret)];
}

type ActiveEndpoints = Awaited<ReturnType<WebhookStore['active']>>;
/** The active endpoints read per transaction and workspace (see `activeEndpoints`). */
const activeByTransaction = new WeakMap<Work, Map<string, Promise<ActiveEndpoints>>>();

/**
 * The active endpoints of a workspace, read once per transaction: a group commit (db/group-commit.ts)
 * emits many events of one workspace in one transaction, and endpoints are only ever changed in
 * transactions that emit no event, or (auto-disable.ts) change them all before the first event, so one read
 * serves them all. Outside a transaction, read each time.
 */
function activeEndpoints(repo: Pick<WebhookStore, 'active'>, trx: Work, workspaceId: string): Promise<ActiveEndpoints> {
  if (!trx.isTransaction) return repo.active(trx, workspaceId);
  let byWorkspace = activeByTransaction.get(trx);
  if (!byWorkspace) {
    byWorkspace = new Map();
    activeByTransaction.set(trx, byWorkspace);
  }
  let endpoints = byWorkspace.get(workspaceId);
  if (!endpoints) {
    endpoints = repo.active(trx, workspaceId);
    byWorkspace.set(workspaceId, endpoints);
  }
  return endpoints;
}

/** Webhook endpoints (session surface, every role) and the fan-out of events to them. */
export function createWebhookService({ work, store: repo, feed, clock, queue, events, rules, wake, box, limits, audit }: WebhookDeps): WebhookService {
  const recovery: RecoveryDeps = { feed, store: repo, queue };
  const record = (trx: Work, tenant: TenantContext, webhookId: string, action: AuditAction, details?: Record<string, unknown>) =>
    audit.record(trx, { workspaceId: tenant.workspaceId, action, actor: actorOf(tenant), target: { kind: 'webhook', id: webhookId }, details });
  async function find(tenant: TenantContext, webhookId: string): Promise<WebhookTable> {
    const row = await repo.find(work, tenant.workspaceId, webhookId);
    if (!row) throw webhookNotFound(webhookId);
    return row;
  }

  /** Test, replay and recover queue deliveries, which an inactive endpoint would drop unsent. */
  async function findActive(tenant: TenantContext, webhookId: string): Promise<WebhookTable> {
    const row = await find(tenant, webhookId);
    if (row.active !== 1) throw inactive(webhookId);
    return row;
  }

  /** The address rules at create and update: a refusal is the caller's error. */
  async function checkUrl(raw: string): Promise<string> {
    try {
      return (await rules.check(raw)).url.href;
    } catch (err) {
      if (err instanceof WebhookUrlRefused) throw invalid('invalid_webhook_url', `${raw}: ${err.message}`);
      throw err;
    }
  }

  function checkSecret(secret: string): string {
    const problem = secretProblem(secret);
    if (problem) throw invalid('invalid_secret', problem);
    return secret;
  }

  function job(workspaceId: string, webhookId: string, eventId: string) {
    const payload: WebhookJobPayload = { webhook_id: webhookId, event_id: eventId };
    // One pending delivery per endpoint and event, however many replays and recovers ask for it.
    return { queue: WEBHOOK_QUEUE, workspaceId, payload, groupKey: webhookId, dedupKey: `${webhookId}:${eventId}`, maxAttempts: MAX_ATTEMPTS };
  }

  return {
    async list(tenant) {
      return { webhooks: (await repo.list(work, tenant.workspaceId)).map(toWebhookView) };
    },

    async create(tenant, input) {
      const url = await checkUrl(input.url);
      const eventTypes = normalizeEventTypes(input.event_types ?? []);
      const generated = input.secret === undefined ? generateSecret() : null;
      const secret = generated ?? checkSecret(input.secret!);
      const now = clock.now();
      const id = newId('whk');
      const row: WebhookTable = {
        id,
        workspace_id: tenant.workspaceId,
        url,
        event_types: JSON.stringify(eventTypes),
        active: input.active === false ? 0 : 1,
        ...sealSecrets(box, id, secret, []),
        created_at: now,
        updated_at: now,
        failing_since: null,
        disabled_at: null,
        disabled_reason: null,
      };
      await work.transaction().execute(async (trx) => {
        // Counted in the inserting transaction; two concurrent creates may both pass at the limit, which is harmless.
        if ((await repo.count(trx, tenant.workspaceId)) >= MAX_WEBHOOKS_PER_WORKSPACE) {
          throw conflict('too_many_webhooks', `a workspace may have at most ${MAX_WEBHOOKS_PER_WORKSPACE} webhooks`);
        }
        await repo.insert(trx, row);
        await record(trx, tenant, id, AUDIT_ACTIONS.webhookCreated, { url, event_types: eventTypes, active: row.active === 1, secret_generated: generated !== null });
      });
      return { ...toWebhookView(row), ...(generated ? { secret: generated } : {}) };
    },

    async get(tenant, webhookId) {
      return toWebhookView(await find(tenant, webhookId));
    },

    async update(tenant, webhookId, input) {
      const current = await find(tenant, webhookId);
      const now = clock.now();
      const values: Partial<WebhookTable> = {};
      if (input.url !== undefined) values.url = await checkUrl(input.url);
      if (input.event_types !== undefined) values.event_types = JSON.stringify(normalizeEventTypes(input.event_types));
      const stored = input.secret === undefined ? null : openSecrets(box, current);
      if (input.secret !== undefined && stored !== null && checkSecret(input.secret) !== stored.secret) {
        const kept = stored.previous.filter((p) => p.until > now && p.secret !== input.secret);
        if (stored.secret !== null) kept.unshift({ secret: stored.secret, until: now + SECRET_OVERLAP_MS });
        Object.assign(values, sealSecrets(box, current.id, input.secret, kept.slice(0, MAX_PREVIOUS_SECRETS)));
      }
      if (input.active !== undefined) values.active = input.active ? 1 : 0;
      // Re-activated: the reason it was disabled goes, and its failures are counted afresh.
      if (input.active === true && current.active === 0) Object.assign(values, { disabled_at: null, disabled_reason: null, failing_since: null });
      if (Object.keys(values).length > 0) {
        values.updated_at = now;
        await work.transaction().execute(async (trx) => {
          if ((await repo.update(trx, tenant.workspaceId, webhookId, values)) === 0) throw webhookNotFound(webhookId);
          for (const entry of updateEntries(current, values)) await record(trx, tenant, webhookId, entry.action, entry.details);
          // An inactive endpoint gets no further attempts, pending retries included.
          if (values.active === 0) await queue.cancelGroup(trx, WEBHOOK_QUEUE, webhookId);
        });
      }
      return toWebhookView(await find(tenant, webhookId));
    },

    async remove(tenant, webhookId) {
      await work.transaction().execute(async (trx) => {
        const row = await repo.find(trx, tenant.workspaceId, webhookId);
        if (!row || (await repo.delete(trx, tenant.workspaceId, webhookId)) === 0) throw webhookNotFound(webhookId);
        await queue.cancelGroup(trx, WEBHOOK_QUEUE, webhookId);
        await record(trx, tenant, webhookId, AUDIT_ACTIONS.webhookDeleted, { url: row.url });
      });
      return { ok: true, webhook_id: webhookId };
    },

    async deliveries(tenant, webhookId, limit) {
      await find(tenant, webhookId);
      return { deliveries: (await repo.deliveries(work, tenant.workspaceId, webhookId, limit)).map(toDeliveryView) };
    },

    async recover(tenant, webhookId, input) {
      const since = checkSince(input.since, clock.now());
      const row = await find(tenant, webhookId);
      let start: FeedCursor | null = null;
      if (input.before !== undefined) {
        start = (await feed.cursorOf(work, tenant.workspaceId, input.before)) ?? null;
        if (!start) throw invalid('invalid_before', `before: no event ${input.before} in this workspace`);
      }
      if (row.active !== 1) throw inactive(webhookId);
      limits.take(tenant.workspaceId);
      // Events from before the endpoint existed were never its to miss.
      const scan = await missedEvents(work, recovery, row, Math.max(since, row.created_at), start);
      let queued = 0;
      if (scan.missed.length > 0) {
        await limits.checkBacklog(work, tenant.workspaceId, webhookId, scan.missed.length);
        queued = await work.transaction().execute(async (trx) => {
          const added = await queue.enqueueNew(trx, scan.missed.map((eventId) => job(tenant.workspaceId, webhookId, eventId)));
          await record(trx, tenant, webhookId, AUDIT_ACTIONS.webhookRecovered, { since: new Date(since).toISOString(), queued: added.length });
          await afterCommit(trx, () => wake(WEBHOOK_QUEUE));
          return added.length;
        });
      }
      return { ok: true, queued, next_before: scan.nextBefore };
    },

    async replay(tenant, webhookId, eventId) {
      const endpoint = await findActive(tenant, webhookId);
      const event = await feed.find(work, tenant.workspaceId, eventId);
      if (!event) throw notFound('event_not_found', `no event ${eventId}`);
      if (!filterTakes(endpoint.event_types, event.type) && !isTestEventFor(event.payload, webhookId)) {
        throw conflict('event_type_not_subscribed', `webhook ${webhookId} does not take ${event.type} events (its event_types); add the type first (PATCH event_types)`);
      }
      limits.take(tenant.workspaceId);
      await limits.checkBacklog(work, tenant.workspaceId, webhookId, 1);
      const added = await work.transaction().execute(async (trx) => {
        const replay = job(tenant.workspaceId, webhookId, eventId);
        const ids = await queue.enqueueNew(trx, [replay]);
        // Already waiting (a retry after a failure): asking again means now, not after its back-off.
        if (ids.length === 0) await queue.hurry(trx, WEBHOOK_QUEUE, replay.dedupKey);
        await record(trx, tenant, webhookId, AUDIT_ACTIONS.webhookReplayed, { event_id: eventId, queued: ids.length > 0 });
        await afterCommit(trx, () => wake(WEBHOOK_QUEUE));
        return ids.length;
      });
      return { ok: true, event_id: eventId, queued: added > 0 };
    },

    async test(tenant, webhookId, eventType) {
      if (!KNOWN_EVENTS.has(eventType)) throw invalid('invalid_event_type', `unknown event type '${eventType}' (known: ${EVENT_TYPES.join(', ')})`);
      if (eventType === 'message.delivered') throw invalid('invalid_event_type', 'message.delivered cannot be sent as a test event (it comes only from a receiver\'s delivery report)');
      await findActive(tenant, webhookId);
      limits.take(tenant.workspaceId);
      await limits.checkBacklog(work, tenant.workspaceId, webhookId, 1);
      const event = await work.transaction().execute(async (trx) => {
        // A real event row (its bytes are what is signed), routed by hand to this endpoint only.
        const stored = await events.emit(
          trx,
          { workspaceId: tenant.workspaceId, type: eventType as Exclude<EventType, 'message.delivered'>, data: { test: true, webhook_id: webhookId } },
          { fanOut: false },
        );
        await queue.enqueue(trx, job(tenant.workspaceId, webhookId, stored.id));
        await afterCommit(trx, () => wake(WEBHOOK_QUEUE));
        return stored;
      });
      return { ok: true, event_id: event.id };
    },

    async sealStoredSecrets() {
      let sealed = 0;
      for (const row of await repo.withPlaintextSecrets(work)) {
        const { secret, previous } = openSecrets(box, row);
        sealed += await repo.replaceSecrets(work, row, sealSecrets(box, row.id, secret, previous));
      }
      return sealed;
    },

    async fanOut(trx, event) {
      const endpoints = await activeEndpoints(repo, trx, event.workspaceId);
      const targets = endpoints.filter((e) => filterTakes(e.event_types, event.type));
      if (targets.length === 0) return;
      // Never refused nor capped: an event is delivered however long the endpoint's backlog (only replay, recover
      // and test are capped). The event is new, so no delivery of it can be pending: the plain insert cannot conflict.
      await queue.enqueueMany(trx, targets.map((t) => job(event.workspaceId, t.id, event.id)));
      await afterCommit(trx, () => wake(WEBHOOK_QUEUE));
    },
  };
}
