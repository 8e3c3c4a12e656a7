import type { Db } from '../../db/database.js';
import type { SandboxCatchAllTable, SandboxDnsRecordTable, SandboxMessageTable } from './sandbox.table.js';

/** A captured message without its bytes, for lists. */
export type SandboxMessageSummary = Omit<SandboxMessageTable, 'raw'>;

/** A catch-all with its mailbox's address. */
export type CatchAllRow = SandboxCatchAllTable & { address: string };

const SUMMARY_COLUMNS = ['id', 'workspace_id', 'message_id', 'mail_from', 'recipients_json', 'stored_json', 'subject', 'size', 'created_at'] as const;

/**
 * Sandbox queries. Every one filters by workspace except the two the servers ask for any workspace, as inbound
 * SMTP's recipient look-up does: the DNS server's records of a name, and the catch-all of a domain.
 */
export const sandboxRepository = {
  listRecords: (db: Db, workspaceId: string) =>
    db.selectFrom('sandbox_dns_records').selectAll().where('workspace_id', '=', workspaceId).orderBy('name').orderBy('type').orderBy('created_at').orderBy('id').execute(),

  countRecords: async (db: Db, workspaceId: string): Promise<number> => {
    const row = await db.selectFrom('sandbox_dns_records').select((eb) => eb.fn.countAll<number | string>().as('n')).where('workspace_id', '=', workspaceId).executeTakeFirstOrThrow();
    return Number(row.n);
  },

  /** Replace the workspace's records of one name and type with `rows` (which all have that name and type). */
  async replaceSet(trx: Db, workspaceId: string, name: string, type: string, rows: SandboxDnsRecordTable[]): Promise<void> {
    await trx.deleteFrom('sandbox_dns_records').where('workspace_id', '=', workspaceId).where('name', '=', name).where('type', '=', type).execute();
    if (rows.length > 0) await trx.insertInto('sandbox_dns_records').values(rows).execute();
  },

  /** Delete the workspace's records of a name (of one type, when given); how many went. */
  async deleteRecords(db: Db, workspaceId: string, name: string, type: string | null): Promise<number> {
    let query = db.deleteFrom('sandbox_dns_records').where('workspace_id', '=', workspaceId).where('name', '=', name);
    if (type !== null) query = query.where('type', '=', type);
    const result = await query.executeTakeFirst();
    return Number(result.numDeletedRows);
  },

  /** Every workspace's records of a name: the DNS server answers what anyone published. */
  recordsNamed: (db: Db, name: string) => db.selectFrom('sandbox_dns_records').select(['name', 'type', 'value']).where('name', '=', name).orderBy('created_at').orderBy('id').execute(),

  insertMessage: (db: Db, row: SandboxMessageTable) => db.insertInto('sandbox_messages').values(row).execute(),

  /** Newest first, then id, so pages never overlap. */
  listMessages: (db: Db, workspaceId: string, limit: number, offset: number): Promise<SandboxMessageSummary[]> =>
    db.selectFrom('sandbox_messages').select(SUMMARY_COLUMNS).where('workspace_id', '=', workspaceId).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute(),

  countMessages: async (db: Db, workspaceId: string): Promise<number> => {
    const row = await db.selectFrom('sandbox_messages').select((eb) => eb.fn.countAll<number | string>().as('n')).where('workspace_id', '=', workspaceId).executeTakeFirstOrThrow();
    return Number(row.n);
  },

  findMessage: (db: Db, workspaceId: string, id: string) => db.selectFrom('sandbox_messages').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst(),

  async clearMessages(db: Db, workspaceId: string): Promise<number> {
    const result = await db.deleteFrom('sandbox_messages').where('workspace_id', '=', workspaceId).executeTakeFirst();
    return Number(result.numDeletedRows);
  },

  listCatchAlls: (db: Db, workspaceId: string): Promise<CatchAllRow[]> =>
    db
      .selectFrom('sandbox_catch_alls as c')
      .innerJoin('mailboxes as m', 'm.id', 'c.mailbox_id')
      .selectAll('c')
      .select('m.address')
      .where('c.workspace_id', '=', workspaceId)
      .orderBy('c.domain')
      .execute(),

  /** The catch-all of a domain, in whichever workspace (inbound routing). */
  findCatchAll: (db: Db, domain: string): Promise<CatchAllRow | undefined> =>
    db.selectFrom('sandbox_catch_alls as c').innerJoin('mailboxes as m', 'm.id', 'c.mailbox_id').selectAll('c').select('m.address').where('c.domain', '=', domain).executeTakeFirst(),

  insertCatchAll: (db: Db, row: SandboxCatchAllTable) => db.insertInto('sandbox_catch_alls').values(row).execute(),

  /** Point the workspace's catch-all of a domain at another mailbox; false when the workspace has none there. */
  async updateCatchAll(db: Db, workspaceId: string, domain: string, mailboxId: string): Promise<boolean> {
    const result = await db.updateTable('sandbox_catch_alls').set({ mailbox_id: mailboxId }).where('workspace_id', '=', workspaceId).where('domain', '=', domain).executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  },

  async deleteCatchAll(db: Db, workspaceId: string, domain: string): Promise<boolean> {
    const result = await db.deleteFrom('sandbox_catch_alls').where('workspace_id', '=', workspaceId).where('domain', '=', domain).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  },
} as const;
