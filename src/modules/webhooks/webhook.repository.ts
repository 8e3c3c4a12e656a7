import type { Db } from '../../db/database.js';
import { preparedQuery } from '../../db/prepared.js';
import { SEALED_PREFIX } from '../../lib/secret-box.js';
import type { WebhookTable } from './webhook.table.js';
import { WEBHOOK_QUEUE, type WebhookJobPayload } from './webhook.types.js';

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

/** Read for every event in its producer's transaction (prepared: see db/prepared.ts). */
const activeQuery = preparedQuery<{ workspaceId: string }, Pick<WebhookTable, 'id' | 'event_types'>>((db, p) =>
  db.selectFrom('webhooks').select(['id', 'event_types']).where('workspace_id', '=', p<string>('workspaceId')).where('active', '=', 1),
);

/** Webhook endpoint and delivery queries; every one filters by workspace. */
export const webhookRepository = {
  insert: (db: Db, row: WebhookTable) => db.insertInto('webhooks').values(row).execute(),
  /** Newest first. */
  list: (db: Db, workspaceId: string) =>
    db.selectFrom('webhooks').selectAll().where('workspace_id', '=', workspaceId).orderBy('created_at', 'desc').orderBy('id', 'desc').execute(),
  count: async (db: Db, workspaceId: string): Promise<number> =>
    Number((await db.selectFrom('webhooks').select((eb) => eb.fn.countAll<number>().as('n')).where('workspace_id', '=', workspaceId).executeTakeFirstOrThrow()).n),
  find: (db: Db, workspaceId: string, id: string) =>
    db.selectFrom('webhooks').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst(),
  /** The active endpoints of a workspace with their filters: what every event is matched against. */
  active: (db: Db, workspaceId: string) => activeQuery(db, { workspaceId }),
  update: async (db: Db, workspaceId: string, id: string, values: Partial<Omit<WebhookTable, 'id' | 'workspace_id' | 'created_at'>>): Promise<number> =>
    Number((await db.updateTable('webhooks').set(values).where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst()).numUpdatedRows),
  /** Active → inactive, saying why; the row as it is now, or undefined when it was inactive (or gone) already. */
  deactivate: (db: Db, workspaceId: string, id: string, at: number, reason: string) =>
    db
      .updateTable('webhooks')
      .set({ active: 0, updated_at: at, disabled_at: at, disabled_reason: reason })
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', id)
      .where('active', '=', 1)
      .returningAll()
      .executeTakeFirst(),
  /**
   * The same, only when every attempt since `failedBefore` or earlier has failed (decided in the
   * transaction that records the latest failure, so any number of workers agree).
   */
  disableFailing: (db: Db, workspaceId: string, id: string, at: number, failedBefore: number) =>
    db
      .updateTable('webhooks')
      .set({ active: 0, updated_at: at, disabled_at: at })
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', id)
      .where('active', '=', 1)
      .where('failing_since', '<=', failedBefore)
      .returningAll()
      .executeTakeFirst(),
  setDisabledReason: (db: Db, workspaceId: string, id: string, reason: string) =>
    db.updateTable('webhooks').set({ disabled_reason: reason }).where('workspace_id', '=', workspaceId).where('id', '=', id).execute(),
  /** Successes: these endpoints are no longer failing (one statement; only rows marked failing are written). */
  clearFailing: async (db: Db, endpoints: ReadonlyArray<{ workspaceId: string; webhookId: string }>): Promise<void> => {
    if (endpoints.length === 0) return;
    await db
      .updateTable('webhooks')
      .set({ failing_since: null })
      .where((eb) => eb.or(endpoints.map((e) => eb.and([eb('id', '=', e.webhookId), eb('workspace_id', '=', e.workspaceId)]))))
      .where('failing_since', 'is not', null)
      .execute();
  },
  /** Failures: `since` becomes the endpoint's failing_since unless it was failing already (`restart`: a success came first in the batch). */
  markFailing: (db: Db, workspaceId: string, id: string, since: number, restart: boolean) =>
    db
      .updateTable('webhooks')
      .set((eb) => ({ failing_since: restart ? since : eb.fn.coalesce('failing_since', eb.val(since)) }))
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', id)
      .execute(),
  /** The workspace's event, or undefined. */
  event: (db: Db, workspaceId: string, id: string) => db.selectFrom('events').select(['id', 'type', 'payload']).where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst(),
  /** Which of `eventIds` the endpoint received (a successful attempt). */
  received: async (db: Db, workspaceId: string, webhookId: string, eventIds: readonly string[]): Promise<Set<string>> => {
    if (eventIds.length === 0) return new Set();
    const rows = await db
      .selectFrom('webhook_deliveries')
      .select('event_id')
      .where('workspace_id', '=', workspaceId)
      .where('webhook_id', '=', webhookId)
      .where('event_id', 'in', eventIds)
      .where('success', '=', 1)
      .execute();
    return new Set(rows.map((r) => r.event_id));
  },
  /** The events the endpoint has a delivery job waiting for (leased ones included; not the dead). */
  pending: async (db: Db, workspaceId: string, webhookId: string): Promise<Set<string>> => {
    const rows = await db
      .selectFrom('jobs')
      .select('payload')
      .where('queue', '=', WEBHOOK_QUEUE)
      .where('group_key', '=', webhookId)
      .where('workspace_id', '=', workspaceId)
      .where('state', '=', 'pending')
      .execute();
    return new Set(rows.map((r) => (JSON.parse(r.payload) as WebhookJobPayload).event_id));
  },
  delete: async (db: Db, workspaceId: string, id: string): Promise<number> =>
    Number((await db.deleteFrom('webhooks').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst()).numDeletedRows),
  /**
   * The endpoints and events of several delivery jobs in two queries, each row matched by its id and its
   * job's workspace (pairs, so that both databases look every row up by primary key); undefined for a job
   * whose endpoint is gone.
   */
  targets: async (db: Db, keys: readonly TargetKey[]): Promise<Array<DeliveryTarget | undefined>> => {
    const unique = <T>(items: T[], key: (t: T) => string) => [...new Map(items.map((t) => [key(t), t])).values()];
    const hookKeys = unique([...keys], (k) => `${k.workspaceId} ${k.webhookId}`);
    const eventKeys = unique([...keys], (k) => `${k.workspaceId} ${k.eventId}`);
    const [hooks, events] = await Promise.all([
      db
        .selectFrom('webhooks')
        .select(['id', 'workspace_id', 'url', 'active', 'secret', 'previous_secrets'])
        .where((eb) => eb.or(hookKeys.map((k) => eb.and([eb('id', '=', k.webhookId), eb('workspace_id', '=', k.workspaceId)]))))
        .execute(),
      db
        .selectFrom('events')
        .select(['id', 'workspace_id', 'payload', 'type'])
        .where((eb) => eb.or(eventKeys.map((k) => eb.and([eb('id', '=', k.eventId), eb('workspace_id', '=', k.workspaceId)]))))
        .execute(),
    ]);
    const hookByKey = new Map(hooks.map((h) => [`${h.workspace_id} ${h.id}`, h]));
    const eventByKey = new Map(events.map((e) => [`${e.workspace_id} ${e.id}`, e]));
    return keys.map((key) => {
      const hook = hookByKey.get(`${key.workspaceId} ${key.webhookId}`);
      if (!hook) return undefined;
      const event = eventByKey.get(`${key.workspaceId} ${key.eventId}`);
      return { url: hook.url, active: hook.active, secret: hook.secret, previous_secrets: hook.previous_secrets, payload: event?.payload ?? null, event_type: event?.type ?? null };
    });
  },
  /**
   * Start-up, across workspaces: endpoints with a secret stored before encryption at rest (plaintext secrets
   * are `whsec_…`, sealed ones `v1:…`). The replacement keeps the old values as a condition, so a process
   * doing the same at once changes nothing twice.
   */
  withPlaintextSecrets: (db: Db) =>
    db
      .selectFrom('webhooks')
      .select(['id', 'secret', 'previous_secrets'])
      .where((eb) => eb.or([eb('secret', 'not like', `${SEALED_PREFIX}%`), eb('previous_secrets', 'like', '%"whsec_%')]))
      .execute(),
  replaceSecrets: async (db: Db, old: Pick<WebhookTable, 'id' | 'secret' | 'previous_secrets'>, values: Pick<WebhookTable, 'secret' | 'previous_secrets'>): Promise<number> =>
    Number(
      (
        await db
          .updateTable('webhooks')
          .set(values)
          .where('id', '=', old.id)
          .where('secret', old.secret === null ? 'is' : '=', old.secret)
          .where('previous_secrets', '=', old.previous_secrets)
          .executeTakeFirst()
      ).numUpdatedRows,
    ),
  /** Newest first (then id, so attempts of one millisecond keep their order). */
  deliveries: (db: Db, workspaceId: string, webhookId: string, limit: number) =>
    db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where('webhook_id', '=', webhookId)
      .orderBy('delivered_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .execute(),
} as const;
