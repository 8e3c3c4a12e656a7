import type { AliasableExpression, Expression } from 'kysely';
import { deleteWorkspaceBatch } from '../../db/purge.js';
import { tablesOf, type Work } from '../../db/tables.js';
import type { IdempotencyKeyTable, ServiceTokenTable, TransactionalTables } from './transactional.table.js';

/** An idempotency key's claim: the request it was first used with, the answer given, and the message it made. */
export type IdempotencyClaim = Pick<IdempotencyKeyTable, 'request_hash' | 'response_json' | 'message_id' | 'idempotency_key'>;

/**
 * The transactional surface's tables: service tokens (every query filters by workspace except the lookup by credential
 * hash) and the idempotency keys of the sends made with them.
 */
/**
 * The tenancy store's part: the state of the workspace whose id the expression is (null when it has none), read in
 * the credential lookup's own statement.
 */
export type WorkspaceStatePart = (handle: Parameters<typeof tablesOf>[0], workspaceId: Expression<string>) => AliasableExpression<string | null>;

/** A token as authentication reads it: with its workspace's state (`active` when no part was given). */
export type AuthenticatedTokenRow = ServiceTokenTable & { workspace_state: string | null };

export function createServiceTokenStore(parts: { workspaceState?: WorkspaceStatePart } = {}) {
  const of = (work: Work) => tablesOf<TransactionalTables>(work);
  return {
    insert: (work: Work, row: ServiceTokenTable) => of(work).insertInto('service_tokens').values(row).execute(),
    /** Newest first. */
    list: (work: Work, workspaceId: string): Promise<ServiceTokenTable[]> =>
      of(work).selectFrom('service_tokens').selectAll().where('workspace_id', '=', workspaceId).orderBy('created_at', 'desc').orderBy('id', 'desc').execute(),
    find: (work: Work, workspaceId: string, id: string): Promise<ServiceTokenTable | undefined> =>
      of(work).selectFrom('service_tokens').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst(),
    /** Authentication: the credential's hash is the only key a caller has. */
    findByHash: async (work: Work, hash: string): Promise<AuthenticatedTokenRow | undefined> => {
      const { workspaceState } = parts;
      const query = of(work).selectFrom('service_tokens').selectAll('service_tokens').where('service_tokens.token_hash', '=', hash);
      if (!workspaceState) {
        const row = await query.executeTakeFirst();
        return row && { ...row, workspace_state: null };
      }
      return query.select((eb) => workspaceState(work, eb.ref('service_tokens.workspace_id')).as('workspace_state')).executeTakeFirst();
    },
    rotate: async (work: Work, workspaceId: string, id: string, hash: string, at: number): Promise<boolean> =>
      (
        await of(work)
          .updateTable('service_tokens')
          .set({ token_hash: hash, rotated_at: at })
          .where('workspace_id', '=', workspaceId)
          .where('id', '=', id)
          .executeTakeFirst()
      ).numUpdatedRows > 0n,
    touch: (work: Work, workspaceId: string, id: string, at: number) =>
      of(work).updateTable('service_tokens').set({ last_used_at: at }).where('workspace_id', '=', workspaceId).where('id', '=', id).execute(),
    delete: async (work: Work, workspaceId: string, id: string): Promise<boolean> =>
      (await of(work).deleteFrom('service_tokens').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst()).numDeletedRows > 0n,
    /** The tokens bound to a sending domain: up to `limit` (oldest first), and how many in all. */
    boundToDomain: async (work: Work, workspaceId: string, domainId: string, limit: number): Promise<{ tokens: Array<Pick<ServiceTokenTable, 'id' | 'name'>>; count: number }> => {
      const tokens = of(work).selectFrom('service_tokens').where('workspace_id', '=', workspaceId).where('domain_id', '=', domainId);
      const [rows, count] = await Promise.all([
        tokens.select(['id', 'name']).orderBy('created_at').orderBy('id').limit(limit).execute(),
        tokens.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
      ]);
      return { tokens: rows, count: Number(count.n) };
    },

    /** The claim of a token's idempotency key, found by the key or by the message it made; undefined when unused. */
    findClaim: (work: Work, token: { tokenId: string; workspaceId: string }, where: { key: string } | { messageId: string }): Promise<IdempotencyClaim | undefined> => {
      const query = of(work)
        .selectFrom('idempotency_keys')
        .select(['request_hash', 'response_json', 'message_id', 'idempotency_key'])
        .where('token_id', '=', token.tokenId)
        .where('workspace_id', '=', token.workspaceId);
      return ('key' in where ? query.where('idempotency_key', '=', where.key) : query.where('message_id', '=', where.messageId)).executeTakeFirst();
    },
    /**
     * Claim a key for a send, in the caller's transaction; false when it was claimed already. On PostgreSQL a
     * concurrent claim of the same key blocks until the first transaction ends and then inserts nothing.
     */
    claim: async (work: Work, row: IdempotencyKeyTable): Promise<boolean> => {
      const inserted = await of(work)
        .insertInto('idempotency_keys')
        .values(row)
        .onConflict((oc) => oc.columns(['token_id', 'idempotency_key']).doNothing())
        .executeTakeFirst();
      return (inserted.numInsertedOrUpdatedRows ?? 0n) > 0n;
    },
    /**
     * Retention: delete the keys claimed before `cutoff` among the `limit` oldest (by their message's id, which sorts
     * by time and is indexed). The number deleted; fewer than `limit` means the walk is done.
     */
    deleteClaimsOlderThan: async (work: Work, cutoff: number, limit: number): Promise<number> => {
      const db = of(work);
      const oldest = db.selectFrom('idempotency_keys').select('message_id').orderBy('message_id').limit(limit);
      const due = db.selectFrom('idempotency_keys').select('message_id').where('message_id', 'in', oldest).where('created_at', '<', cutoff);
      return Number((await db.deleteFrom('idempotency_keys').where('message_id', 'in', due).executeTakeFirst()).numDeletedRows);
    },
    /** The answer a claimed key gives from now on. */
    settleClaim: (work: Work, tokenId: string, key: string, responseJson: string) =>
      of(work).updateTable('idempotency_keys').set({ response_json: responseJson }).where('token_id', '=', tokenId).where('idempotency_key', '=', key).execute(),

    /** One batch of a deleted workspace's rows, idempotency keys then tokens (at most `limit` each); 0 once none is left. */
    purgeWorkspaceBatch: async (work: Work, workspaceId: string, limit: number): Promise<number> =>
      // Keys are chosen by token: their primary key is led by token_id.
      (await deleteWorkspaceBatch(of(work), 'idempotency_keys', 'idempotency_key', workspaceId, limit, {
        column: 'token_id',
        ids: of(work).selectFrom('service_tokens').select('service_tokens.id').where('service_tokens.workspace_id', '=', workspaceId),
      })) || deleteWorkspaceBatch(of(work), 'service_tokens', 'id', workspaceId, limit),
  };
}

export type ServiceTokenStore = ReturnType<typeof createServiceTokenStore>;
