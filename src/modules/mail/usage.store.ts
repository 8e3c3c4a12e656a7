/**
 * What a workspace holds, for its quotas (modules/quotas): its mailboxes, and the bytes of its stored messages as
 * the folder counters sum them. The counters' `bytes` are kept by every operation that stores, deletes or moves a
 * message (`bumpFolder`), in the same statement as their other counts, so reading them counts no message rows.
 */
import type { Work } from '../../db/tables.js';
import { preparedQuery } from '../../db/prepared.js';
import { mailDb } from './message.store.js';
import type { MailTables } from './mail.table.js';

const storedBytesQuery = preparedQuery<{ workspaceId: string }, { b: number | string }, MailTables>((db, p) =>
  db
    .selectFrom('folder_counts')
    .select((f) => f.fn.coalesce(f.fn.sum<number | string>('bytes'), f.lit(0)).as('b'))
    .where('workspace_id', '=', p<string>('workspaceId')),
);

export interface MailUsage {
  mailboxes: number;
  /** The raw size of every message stored in the workspace's mailboxes, sent copies included. */
  storedBytes: number;
}

export function createUsageStore() {
  return {
    /** The workspace's mailboxes and stored bytes, in one statement. */
    async mailUsage(work: Work, workspaceId: string): Promise<MailUsage> {
      const row = await mailDb(work)
        .selectNoFrom((eb) => [
          eb.selectFrom('mailboxes').select((m) => m.fn.countAll<number | string>().as('n')).where('workspace_id', '=', workspaceId).$asScalar().as('mailboxes'),
          eb
            .selectFrom('folder_counts')
            .select((f) => f.fn.coalesce(f.fn.sum<number | string>('bytes'), f.lit(0)).as('b'))
            .where('workspace_id', '=', workspaceId)
            .$asScalar()
            .as('stored_bytes'),
        ])
        .executeTakeFirstOrThrow();
      return { mailboxes: Number(row.mailboxes ?? 0), storedBytes: Number(row.stored_bytes ?? 0) };
    },
    /** The workspace's stored bytes alone (the inbound path's check, per recipient and per message: prepared). */
    async storedBytes(work: Work, workspaceId: string): Promise<number> {
      const [row] = await storedBytesQuery(mailDb(work), { workspaceId });
      return Number(row?.b ?? 0);
    },
    /** The workspace's mailboxes, counted (the check before a mailbox is created). */
    async mailboxCount(work: Work, workspaceId: string): Promise<number> {
      const row = await mailDb(work).selectFrom('mailboxes').select((m) => m.fn.countAll<number | string>().as('n')).where('workspace_id', '=', workspaceId).executeTakeFirstOrThrow();
      return Number(row.n);
    },
  };
}
