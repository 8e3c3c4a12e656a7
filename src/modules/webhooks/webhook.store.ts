import type { DialectInfo } from '../../db/dialect.js';
import { preparedQuery } from '../../db/prepared.js';
import { deleteWorkspaceBatch } from '../../db/purge.js';
import { tablesOf, type Work } from '../../db/tables.js';
import { SEALED_PREFIX } from '../../lib/secret-box.js';
import type { WebhookDeliveryTable, WebhookTable, WebhookTables } from './webhook.table.js';

/** An endpoint as a delivery attempt needs it. */
export type DeliveryEndpoint = Pick<WebhookTable, 'id' | 'workspace_id' | 'url' | 'active' | 'secret' | 'previous_secrets'>;

/** One endpoint of a workspace. */
export interface EndpointKey {
  workspaceId: string;
  webhookId: string;
}

/** Read for every event in its producer's transaction (prepared: see db/prepared.ts). */
const activeQuery = preparedQuery<{ workspaceId: string }, Pick<WebhookTable, 'id' | 'event_types'>, WebhookTables>((db, p) =>
  db.selectFrom('webhooks').select(['id', 'event_types']).where('workspace_id', '=', p<string>('workspaceId')).where('active', '=', 1),
);

/** Webhook endpoint and delivery queries; every one filters by workspace. */
/** Webhook endpoints and their delivery attempts; every query but the start-up sealing filters by workspace. */
export function createWebhookStore({ dialect }: { dialect: Pick<DialectInfo, 'supportsRowLocks' | 'supportsSkipLocked'> }) {
  const of = (work: Work) => tablesOf<WebhookTables>(work);
  return {
    insert: (work: Work, row: WebhookTable) => of(work).insertInto('webhooks').values(row).execute(),
    /** Newest first. */
    list: (work: Work, workspaceId: string) =>
      of(work).selectFrom('webhooks').selectAll().where('workspace_id', '=', workspaceId).orderBy('created_at', 'desc').orderBy('id', 'desc').execute(),
    count: async (work: Work, workspaceId: string): Promise<number> =>
      Number((await of(work).selectFrom('webhooks').select((eb) => eb.fn.countAll<number>().as('n')).where('workspace_id', '=', workspaceId).executeTakeFirstOrThrow()).n),
    find: (work: Work, workspaceId: string, id: string) =>
      of(work).selectFrom('webhooks').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst(),
    /** The active endpoints of a workspace with their filters: what every event is matched against. */
    active: (work: Work, workspaceId: string) => activeQuery(of(work), { workspaceId }),
    update: async (work: Work, workspaceId: string, id: string, values: Partial<Omit<WebhookTable, 'id' | 'workspace_id' | 'created_at'>>): Promise<number> =>
      Number((await of(work).updateTable('webhooks').set(values).where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst()).numUpdatedRows),
    /** Active → inactive, saying why; the row as it is now, or undefined when it was inactive (or gone) already. */
    deactivate: (work: Work, workspaceId: string, id: string, at: number, reason: string) =>
      of(work)
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
    disableFailing: (work: Work, workspaceId: string, id: string, at: number, failedBefore: number) =>
      of(work)
        .updateTable('webhooks')
        .set({ active: 0, updated_at: at, disabled_at: at })
        .where('workspace_id', '=', workspaceId)
        .where('id', '=', id)
        .where('active', '=', 1)
        .where('failing_since', '<=', failedBefore)
        .returningAll()
        .executeTakeFirst(),
    setDisabledReason: (work: Work, workspaceId: string, id: string, reason: string) =>
      of(work).updateTable('webhooks').set({ disabled_reason: reason }).where('workspace_id', '=', workspaceId).where('id', '=', id).execute(),
    /** Successes: these endpoints are no longer failing (one statement; only rows marked failing are written). */
    clearFailing: async (work: Work, endpoints: ReadonlyArray<{ workspaceId: string; webhookId: string }>): Promise<void> => {
      if (endpoints.length === 0) return;
      await of(work)
        .updateTable('webhooks')
        .set({ failing_since: null })
        .where((eb) => eb.or(endpoints.map((e) => eb.and([eb('id', '=', e.webhookId), eb('workspace_id', '=', e.workspaceId)]))))
        .where('failing_since', 'is not', null)
        .execute();
    },
    /** Failures: `since` becomes the endpoint's failing_since unless it was failing already (`restart`: a success came first in the batch). */
    markFailing: (work: Work, workspaceId: string, id: string, since: number, restart: boolean) =>
      of(work)
        .updateTable('webhooks')
        .set((eb) => ({ failing_since: restart ? since : eb.fn.coalesce('failing_since', eb.val(since)) }))
        .where('workspace_id', '=', workspaceId)
        .where('id', '=', id)
        .execute(),
    /** Which of `eventIds` the endpoint received (a successful attempt). */
    received: async (work: Work, workspaceId: string, webhookId: string, eventIds: readonly string[]): Promise<Set<string>> => {
      if (eventIds.length === 0) return new Set();
      const rows = await of(work)
        .selectFrom('webhook_deliveries')
        .select('event_id')
        .where('workspace_id', '=', workspaceId)
        .where('webhook_id', '=', webhookId)
        .where('event_id', 'in', eventIds)
        .where('success', '=', 1)
        .execute();
      return new Set(rows.map((r) => r.event_id));
    },
    delete: async (work: Work, workspaceId: string, id: string): Promise<number> =>
      Number((await of(work).deleteFrom('webhooks').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst()).numDeletedRows),
    /**
     * Several endpoints in one query, each matched by its id and workspace (pairs, so that both databases look every
     * row up by primary key); those gone are left out.
     */
    endpoints: async (work: Work, keys: readonly EndpointKey[]): Promise<DeliveryEndpoint[]> => {
      if (keys.length === 0) return [];
      return of(work)
        .selectFrom('webhooks')
        .select(['id', 'workspace_id', 'url', 'active', 'secret', 'previous_secrets'])
        .where((eb) => eb.or(keys.map((k) => eb.and([eb('id', '=', k.webhookId), eb('workspace_id', '=', k.workspaceId)]))))
        .execute();
    },
    /**
     * Which of these endpoints still exist, read in the caller's transaction; on PostgreSQL they are locked FOR KEY
     * SHARE, so none is deleted before the attempts recorded next reference it.
     */
    present: async (work: Work, attempts: readonly Pick<WebhookDeliveryTable, 'workspace_id' | 'webhook_id'>[]): Promise<Set<string>> => {
      let endpoints = of(work)
        .selectFrom('webhooks')
        .select('id')
        .where('workspace_id', 'in', [...new Set(attempts.map((a) => a.workspace_id))])
        .where('id', 'in', [...new Set(attempts.map((a) => a.webhook_id))]);
      if (dialect.supportsRowLocks) endpoints = endpoints.forKeyShare();
      return new Set((await endpoints.execute()).map((row) => row.id));
    },
    /** Append delivery attempts (one statement); an endpoint deleted meanwhile fails it on its foreign key. */
    recordAttempts: async (work: Work, attempts: readonly WebhookDeliveryTable[]): Promise<void> => {
      if (attempts.length > 0) await of(work).insertInto('webhook_deliveries').values([...attempts]).execute();
    },
    /**
     * Start-up, across workspaces: endpoints with a secret stored before encryption at rest (plaintext secrets
     * are `whsec_…`, sealed ones `v1:…`). The replacement keeps the old values as a condition, so a process
     * doing the same at once changes nothing twice.
     */
    withPlaintextSecrets: (work: Work) =>
      of(work)
        .selectFrom('webhooks')
        .select(['id', 'secret', 'previous_secrets'])
        .where((eb) => eb.or([eb('secret', 'not like', `${SEALED_PREFIX}%`), eb('previous_secrets', 'like', '%"whsec_%')]))
        .execute(),
    replaceSecrets: async (work: Work, old: Pick<WebhookTable, 'id' | 'secret' | 'previous_secrets'>, values: Pick<WebhookTable, 'secret' | 'previous_secrets'>): Promise<number> =>
      Number(
        (
          await of(work)
            .updateTable('webhooks')
            .set(values)
            .where('id', '=', old.id)
            .where('secret', old.secret === null ? 'is' : '=', old.secret)
            .where('previous_secrets', '=', old.previous_secrets)
            .executeTakeFirst()
        ).numUpdatedRows,
      ),
    /**
     * Retention: delete the attempts made before `cutoff` among the `limit` oldest (by id, which sorts by time). The
     * number deleted; fewer than `limit` means the walk is done.
     */
    deleteAttemptsOlderThan: async (work: Work, cutoff: number, limit: number): Promise<number> => {
      const db = of(work);
      const oldest = db.selectFrom('webhook_deliveries').select('id').orderBy('id').limit(limit);
      let due = db.selectFrom('webhook_deliveries').select('id').where('id', 'in', oldest).where('delivered_at', '<', cutoff);
      if (dialect.supportsSkipLocked) due = due.forUpdate().skipLocked();
      return Number((await db.deleteFrom('webhook_deliveries').where('id', 'in', due).executeTakeFirst()).numDeletedRows);
    },
    /** Newest first (then id, so attempts of one millisecond keep their order). */
    deliveries: (work: Work, workspaceId: string, webhookId: string, limit: number) =>
      of(work)
        .selectFrom('webhook_deliveries')
        .selectAll()
        .where('workspace_id', '=', workspaceId)
        .where('webhook_id', '=', webhookId)
        .orderBy('delivered_at', 'desc')
        .orderBy('id', 'desc')
        .limit(limit)
        .execute(),
    /** One batch of a deleted workspace's rows, delivery attempts then endpoints (at most `limit` each); 0 once none is left. */
    purgeWorkspaceBatch: async (work: Work, workspaceId: string, limit: number): Promise<number> =>
      // Deliveries are chosen by endpoint: their index is led by webhook_id.
      (await deleteWorkspaceBatch(of(work), 'webhook_deliveries', 'id', workspaceId, limit, {
        column: 'webhook_id',
        ids: of(work).selectFrom('webhooks').select('webhooks.id').where('webhooks.workspace_id', '=', workspaceId),
      })) || deleteWorkspaceBatch(of(work), 'webhooks', 'id', workspaceId, limit),
  };
}

export type WebhookStore = ReturnType<typeof createWebhookStore>;
