import type { Db } from '../../db/database.js';
import type { MailboxTable } from './mailbox.table.js';

/** Mailbox queries; every one filters by workspace. */
export const mailboxRepository = {
  insert: (db: Db, row: MailboxTable) => db.insertInto('mailboxes').values(row).execute(),
  /** Newest first, then id, so the order is total. */
  list: (db: Db, workspaceId: string) =>
    db
      .selectFrom('mailboxes')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute(),
  findByAddress: (db: Db, workspaceId: string, address: string) =>
    db
      .selectFrom('mailboxes')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where('address', '=', address)
      .executeTakeFirst(),
  delete: (db: Db, workspaceId: string, id: string) =>
    db.deleteFrom('mailboxes').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst(),
} as const;
