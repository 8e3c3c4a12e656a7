import { deleteWorkspaceBatch } from '../../db/purge.js';
import { tablesOf, type Work } from '../../db/tables.js';
import type { SandboxCatchAllTable, SandboxDnsRecordTable, SandboxMessageTable, SandboxTables } from './sandbox.table.js';

/** A captured message without its bytes, for lists. */
export type SandboxMessageSummary = Omit<SandboxMessageTable, 'raw'>;

const SUMMARY_COLUMNS = ['id', 'workspace_id', 'message_id', 'mail_from', 'recipients_json', 'stored_json', 'subject', 'size', 'created_at'] as const;

/**
 * The sandbox's tables. Every operation filters by workspace except the two the servers ask for any workspace, as inbound
 * SMTP's recipient look-up does: the DNS server's records of a name, and the catch-all of a domain.
 */
export function createSandboxStore() {
  const of = (work: Work) => tablesOf<SandboxTables>(work);
  return {
    listRecords: (work: Work, workspaceId: string) =>
      of(work).selectFrom('sandbox_dns_records').selectAll().where('workspace_id', '=', workspaceId).orderBy('name').orderBy('type').orderBy('created_at').orderBy('id').execute(),

    countRecords: async (work: Work, workspaceId: string): Promise<number> => {
      const row = await of(work).selectFrom('sandbox_dns_records').select((eb) => eb.fn.countAll<number | string>().as('n')).where('workspace_id', '=', workspaceId).executeTakeFirstOrThrow();
      return Number(row.n);
    },

    /** Replace the workspace's records of one name and type with `rows` (which all have that name and type). */
    async replaceSet(work: Work, workspaceId: string, name: string, type: string, rows: SandboxDnsRecordTable[]): Promise<void> {
      await of(work).deleteFrom('sandbox_dns_records').where('workspace_id', '=', workspaceId).where('name', '=', name).where('type', '=', type).execute();
      if (rows.length > 0) await of(work).insertInto('sandbox_dns_records').values(rows).execute();
    },

    /** Delete the workspace's records of a name (of one type, when given); how many went. */
    async deleteRecords(work: Work, workspaceId: string, name: string, type: string | null): Promise<number> {
      let query = of(work).deleteFrom('sandbox_dns_records').where('workspace_id', '=', workspaceId).where('name', '=', name);
      if (type !== null) query = query.where('type', '=', type);
      const result = await query.executeTakeFirst();
      return Number(result.numDeletedRows);
    },

    /** Every workspace's records of a name: the DNS server answers what anyone published. */
    recordsNamed: (work: Work, name: string) => of(work).selectFrom('sandbox_dns_records').select(['name', 'type', 'value']).where('name', '=', name).orderBy('created_at').orderBy('id').execute(),

    insertMessage: (work: Work, row: SandboxMessageTable) => of(work).insertInto('sandbox_messages').values(row).execute(),

    /** Newest first, then id, so pages never overlap. */
    listMessages: (work: Work, workspaceId: string, limit: number, offset: number): Promise<SandboxMessageSummary[]> =>
      of(work).selectFrom('sandbox_messages').select(SUMMARY_COLUMNS).where('workspace_id', '=', workspaceId).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute(),

    countMessages: async (work: Work, workspaceId: string): Promise<number> => {
      const row = await of(work).selectFrom('sandbox_messages').select((eb) => eb.fn.countAll<number | string>().as('n')).where('workspace_id', '=', workspaceId).executeTakeFirstOrThrow();
      return Number(row.n);
    },

    findMessage: (work: Work, workspaceId: string, id: string) => of(work).selectFrom('sandbox_messages').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst(),

    async clearMessages(work: Work, workspaceId: string): Promise<number> {
      const result = await of(work).deleteFrom('sandbox_messages').where('workspace_id', '=', workspaceId).executeTakeFirst();
      return Number(result.numDeletedRows);
    },

    /** The workspace's catch-alls, by domain. */
    listCatchAlls: (work: Work, workspaceId: string): Promise<SandboxCatchAllTable[]> =>
      of(work).selectFrom('sandbox_catch_alls').selectAll().where('workspace_id', '=', workspaceId).orderBy('domain').execute(),

    /** The catch-all of a domain, in whichever workspace (inbound routing). */
    findCatchAll: (work: Work, domain: string): Promise<SandboxCatchAllTable | undefined> =>
      of(work).selectFrom('sandbox_catch_alls').selectAll().where('domain', '=', domain).executeTakeFirst(),

    insertCatchAll: (work: Work, row: SandboxCatchAllTable) => of(work).insertInto('sandbox_catch_alls').values(row).execute(),

    /** Point the workspace's catch-all of a domain at another mailbox; false when the workspace has none there. */
    async updateCatchAll(work: Work, workspaceId: string, domain: string, mailboxId: string): Promise<boolean> {
      const result = await of(work).updateTable('sandbox_catch_alls').set({ mailbox_id: mailboxId }).where('workspace_id', '=', workspaceId).where('domain', '=', domain).executeTakeFirst();
      return Number(result.numUpdatedRows) > 0;
    },

    async deleteCatchAll(work: Work, workspaceId: string, domain: string): Promise<boolean> {
      const result = await of(work).deleteFrom('sandbox_catch_alls').where('workspace_id', '=', workspaceId).where('domain', '=', domain).executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    },

    /** One batch of a deleted workspace's rows, captured mail, DNS records, catch-alls (at most `limit` each); 0 once none is left. */
    async purgeWorkspaceBatch(work: Work, workspaceId: string, limit: number): Promise<number> {
      return (
        (await deleteWorkspaceBatch(of(work), 'sandbox_messages', 'id', workspaceId, limit)) ||
        (await deleteWorkspaceBatch(of(work), 'sandbox_dns_records', 'id', workspaceId, limit)) ||
        deleteWorkspaceBatch(of(work), 'sandbox_catch_alls', 'domain', workspaceId, limit)
      );
    },
  };
}

export type SandboxStore = ReturnType<typeof createSandboxStore>;
