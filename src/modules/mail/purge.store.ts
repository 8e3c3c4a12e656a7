/**
 * What the operator's workspace commands need of the mail tables: a deleted workspace's rows, a batch at a time, and
 * each workspace's usage for the listing. Each operation is a few statements over one workspace's (or one page of
 * workspaces') rows, on the pool: no transaction is held between batches.
 */
import { deleteWorkspaceBatch } from '../../db/purge.js';
import type { Work } from '../../db/tables.js';
import { mailDb } from './message.store.js';

/** A workspace's mail usage, as the operator's listing shows it. */
export interface WorkspaceMailUsage {
  mailboxes: number;
  messages: number;
  /** Sum of the stored messages' sizes (their raw source). */
  stored_bytes: number;
  /** Messages sent (outbound copies made) since the `since` asked for. */
  sent_since: number;
}

const EMPTY: WorkspaceMailUsage = { mailboxes: 0, messages: 0, stored_bytes: 0, sent_since: 0 };

export function createPurgeStore() {
  return {
    /**
     * One batch of a deleted workspace's mail: up to `limit` rows of the first mail table that still has some (plus
     * what cascades from them); 0 once every mail table is empty of it.
     */
    async purgeMailBatch(work: Work, workspaceId: string, limit: number): Promise<number> {
      const db = mailDb(work);
      const byMailbox = { column: 'mailbox_id' as const, ids: db.selectFrom('mailboxes').select('mailboxes.id').where('mailboxes.workspace_id', '=', workspaceId) };
      // Messages first (their contents, search rows, attachments, labels and outbound copies go with each through
      // foreign keys, a few rows each), then what hangs off mailboxes, the mailboxes last. A table no index of which
      // leads with workspace_id is chosen by mailbox. The keys need be unique only within the workspace.
      const steps = [
        () => deleteWorkspaceBatch(db, 'messages', 'id', workspaceId, limit),
        () => deleteWorkspaceBatch(db, 'thread_refs', 'message_key', workspaceId, limit, byMailbox),
        () => deleteWorkspaceBatch(db, 'threads', 'id', workspaceId, limit),
        () => deleteWorkspaceBatch(db, 'draft_attachments', 'id', workspaceId, limit),
        () => deleteWorkspaceBatch(db, 'drafts', 'id', workspaceId, limit),
        () => deleteWorkspaceBatch(db, 'suppressions', 'address', workspaceId, limit),
        () => deleteWorkspaceBatch(db, 'label_definitions', 'name', workspaceId, limit),
        () => deleteWorkspaceBatch(db, 'mail_expunged', 'mailbox_id', workspaceId, limit, byMailbox),
        () => deleteWorkspaceBatch(db, 'folder_counts', 'mailbox_id', workspaceId, limit, byMailbox),
        () => deleteWorkspaceBatch(db, 'mailboxes', 'id', workspaceId, limit),
      ];
      for (const step of steps) {
        const deleted = await step();
        if (deleted > 0) return deleted;
      }
      return 0;
    },

    /** The mail usage of each of `workspaceIds` (a page of them): three grouped statements, each over those workspaces' rows. */
    async workspacesMailUsage(work: Work, workspaceIds: readonly string[], since: number): Promise<Map<string, WorkspaceMailUsage>> {
      const usage = new Map<string, WorkspaceMailUsage>(workspaceIds.map((id) => [id, { ...EMPTY }]));
      if (workspaceIds.length === 0) return usage;
      const db = mailDb(work);
      const ids = [...workspaceIds];
      const [mailboxes, counts, sent] = await Promise.all([
        db.selectFrom('mailboxes').select(['workspace_id', (eb) => eb.fn.countAll<number | string>().as('n')]).where('workspace_id', 'in', ids).groupBy('workspace_id').execute(),
        // Stored bytes as the quotas count them: the folder counters' sums (usage.store.ts).
        db
          .selectFrom('folder_counts')
          .select(['workspace_id', (eb) => eb.fn.sum<number | string>('total').as('n'), (eb) => eb.fn.sum<number | string>('bytes').as('b')])
          .where('workspace_id', 'in', ids)
          .groupBy('workspace_id')
          .execute(),
        db
          .selectFrom('messages')
          .select(['workspace_id', (eb) => eb.fn.countAll<number | string>().as('n')])
          .where('workspace_id', 'in', ids)
          .where('created_at', '>=', since)
          .where('direction', '=', 'outbound')
          .groupBy('workspace_id')
          .execute(),
      ]);
      const put = (rows: ReadonlyArray<{ workspace_id: string; n: number | string | null }>, field: keyof WorkspaceMailUsage) => {
        for (const row of rows) usage.get(row.workspace_id)![field] = Number(row.n ?? 0);
      };
      put(mailboxes, 'mailboxes');
      put(counts, 'messages');
      put(counts.map((row) => ({ workspace_id: row.workspace_id, n: row.b })), 'stored_bytes');
      put(sent, 'sent_since');
      return usage;
    },
  };
}
