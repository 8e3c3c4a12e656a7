import type { Db } from '../../db/database.js';
import type { ServiceTokenTable } from './transactional.table.js';

/** A token with the address of its mailbox, as views and authentication need it. */
export type ServiceTokenRow = ServiceTokenTable & { mailbox: string };

function withMailbox(db: Db) {
  return db
    .selectFrom('service_tokens')
    .innerJoin('mailboxes', (join) => join.onRef('mailboxes.id', '=', 'service_tokens.mailbox_id').onRef('mailboxes.workspace_id', '=', 'service_tokens.workspace_id'))
    .selectAll('service_tokens')
    .select('mailboxes.address as mailbox');
}

/** Service-token queries; every one filters by workspace except the lookup by credential hash. */
export const serviceTokenRepository = {
  insert: (db: Db, row: ServiceTokenTable) => db.insertInto('service_tokens').values(row).execute(),
  list: (db: Db, workspaceId: string): Promise<ServiceTokenRow[]> =>
    withMailbox(db).where('service_tokens.workspace_id', '=', workspaceId).orderBy('service_tokens.created_at', 'desc').orderBy('service_tokens.id', 'desc').execute(),
  find: (db: Db, workspaceId: string, id: string): Promise<ServiceTokenRow | undefined> =>
    withMailbox(db).where('service_tokens.workspace_id', '=', workspaceId).where('service_tokens.id', '=', id).executeTakeFirst(),
  /** Authentication: the credential's hash is the only key a caller has. */
  findByHash: (db: Db, hash: string): Promise<ServiceTokenRow | undefined> => withMailbox(db).where('service_tokens.token_hash', '=', hash).executeTakeFirst(),
  rotate: async (db: Db, workspaceId: string, id: string, hash: string, at: number): Promise<boolean> =>
    (
      await db
        .updateTable('service_tokens')
        .set({ token_hash: hash, rotated_at: at })
        .where('workspace_id', '=', workspaceId)
        .where('id', '=', id)
        .executeTakeFirst()
    ).numUpdatedRows > 0n,
  touch: (db: Db, workspaceId: string, id: string, at: number) =>
    db.updateTable('service_tokens').set({ last_used_at: at }).where('workspace_id', '=', workspaceId).where('id', '=', id).execute(),
  delete: async (db: Db, workspaceId: string, id: string): Promise<boolean> =>
    (await db.deleteFrom('service_tokens').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst()).numDeletedRows > 0n,
} as const;
