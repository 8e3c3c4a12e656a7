import type { Db } from '../../db/database.js';
import { preparedQuery } from '../../db/prepared.js';
import type { MailboxTable } from './mailbox.table.js';

export interface MailboxRow extends MailboxTable {
  message_count: number;
  unread_count: number;
}

/** Mailboxes with their message and unread counts summed from folder_counts. */
function withCounts(db: Db, workspaceId: string) {
  return db
    .selectFrom('mailboxes')
    .leftJoin(
      (eb) =>
        eb
          .selectFrom('folder_counts')
          .select((f) => ['mailbox_id', f.fn.sum<number>('total').as('total'), f.fn.sum<number>('unread').as('unread')])
          .where('workspace_id', '=', workspaceId)
          .groupBy('mailbox_id')
          .as('fc'),
      (join) => join.onRef('fc.mailbox_id', '=', 'mailboxes.id'),
    )
    .selectAll('mailboxes')
    .select((eb) => [
      eb.fn.coalesce('fc.total', eb.lit(0)).as('message_count'),
      eb.fn.coalesce('fc.unread', eb.lit(0)).as('unread_count'),
    ])
    .where('mailboxes.workspace_id', '=', workspaceId);
}

/** Looked up for every RCPT TO (prepared: see db/prepared.ts). */
const findAnyByAddressQuery = preparedQuery<{ address: string }, Pick<MailboxTable, 'id' | 'workspace_id' | 'address'>>((db, p) =>
  db.selectFrom('mailboxes').select(['id', 'workspace_id', 'address']).where('address', '=', p<string>('address')),
);
/** A workspace's mailbox by address, id and address only: a builder, so that a caller may read more in the same statement. */
export const idByAddressSelect = (db: Db, workspaceId: string, address: string) =>
  db.selectFrom('mailboxes').select(['id', 'address']).where('workspace_id', '=', workspaceId).where('address', '=', address);

const idByAddressQuery = preparedQuery<{ workspaceId: string; address: string }, Pick<MailboxTable, 'id' | 'address'>>((db, p) =>
  idByAddressSelect(db, p<string>('workspaceId'), p<string>('address')),
);

/** Mailbox queries; every one filters by workspace (lookups by address for SMTP are service-wide on purpose). */
export const mailboxRepository = {
  insert: (db: Db, row: MailboxTable) => db.insertInto('mailboxes').values(row).execute(),
  /** Newest first, then id, so the order is total. */
  list: (db: Db, workspaceId: string): Promise<MailboxRow[]> =>
    withCounts(db, workspaceId).orderBy('mailboxes.created_at', 'desc').orderBy('mailboxes.id', 'desc').execute(),
  findByAddress: (db: Db, workspaceId: string, address: string): Promise<MailboxRow | undefined> =>
    withCounts(db, workspaceId).where('mailboxes.address', '=', address).executeTakeFirst(),
  /** A mailbox's id by address, without counts: for the filter of a page (prepared: every filtered page asks it). */
  findIdByAddress: async (db: Db, workspaceId: string, address: string) => (await idByAddressQuery(db, { workspaceId, address }))[0],
  /** The mailbox an address belongs to, in whichever workspace (inbound SMTP routing). */
  findAnyByAddress: async (db: Db, address: string) => (await findAnyByAddressQuery(db, { address }))[0],
  delete: (db: Db, workspaceId: string, id: string) =>
    db.deleteFrom('mailboxes').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst(),
} as const;
