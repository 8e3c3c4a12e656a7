import type { Db } from '../../db/database.js';
import type { WebhookDeliveryTable, WebhookTable } from './webhook.table.js';

/** What a delivery attempt needs: the endpoint and the event's stored bytes. */
export interface DeliveryTarget {
  url: string;
  active: number;
  secret: string | null;
  previous_secrets: string;
  payload: string | null;
  event_type: string | null;
}

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
  active: (db: Db, workspaceId: string) =>
    db.selectFrom('webhooks').select(['id', 'event_types']).where('workspace_id', '=', workspaceId).where('active', '=', 1).execute(),
  update: async (db: Db, workspaceId: string, id: string, values: Partial<Omit<WebhookTable, 'id' | 'workspace_id' | 'created_at'>>): Promise<number> =>
    Number((await db.updateTable('webhooks').set(values).where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst()).numUpdatedRows),
  /** Active → inactive; false when it was inactive (or gone) already. */
  deactivate: async (db: Db, workspaceId: string, id: string, at: number): Promise<boolean> =>
    (await db.updateTable('webhooks').set({ active: 0, updated_at: at }).where('workspace_id', '=', workspaceId).where('id', '=', id).where('active', '=', 1).executeTakeFirst()).numUpdatedRows > 0n,
  delete: async (db: Db, workspaceId: string, id: string): Promise<number> =>
    Number((await db.deleteFrom('webhooks').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst()).numDeletedRows),
  /** The endpoint and the event of one delivery job, in one round trip; undefined when the endpoint is gone. */
  target: (db: Db, workspaceId: string, webhookId: string, eventId: string): Promise<DeliveryTarget | undefined> =>
    db
      .selectFrom('webhooks')
      .leftJoin('events', (join) => join.on('events.id', '=', eventId).on('events.workspace_id', '=', workspaceId))
      .select(['webhooks.url', 'webhooks.active', 'webhooks.secret', 'webhooks.previous_secrets', 'events.payload', 'events.type as event_type'])
      .where('webhooks.workspace_id', '=', workspaceId)
      .where('webhooks.id', '=', webhookId)
      .executeTakeFirst(),
  /**
   * Append an attempt, unless its endpoint was deleted meanwhile (the history goes with the endpoint):
   * INSERT … SELECT from the endpoint's row writes nothing when it is gone.
   */
  recordAttempt: async (db: Db, row: WebhookDeliveryTable): Promise<void> => {
    await db
      .insertInto('webhook_deliveries')
      .columns(['id', 'workspace_id', 'webhook_id', 'event_id', 'event_type', 'attempt', 'status_code', 'error', 'success', 'duration_ms', 'delivered_at'])
      .expression((eb) =>
        eb
          .selectFrom('webhooks')
          .select([
            eb.val(row.id).as('id'),
            eb.val(row.workspace_id).as('workspace_id'),
            eb.val(row.webhook_id).as('webhook_id'),
            eb.val(row.event_id).as('event_id'),
            eb.val(row.event_type).as('event_type'),
            eb.val(row.attempt).as('attempt'),
            eb.val(row.status_code).as('status_code'),
            eb.val(row.error).as('error'),
            eb.val(row.success).as('success'),
            eb.val(row.duration_ms).as('duration_ms'),
            eb.val(row.delivered_at).as('delivered_at'),
          ])
          .where('workspace_id', '=', row.workspace_id)
          .where('id', '=', row.webhook_id),
      )
      .execute();
  },
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
