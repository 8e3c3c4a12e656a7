/**
 * A folder's UIDs renumbered under a new UIDVALIDITY, for when its counter has run past what IMAP can say (UIDs and
 * UIDNEXT are 32-bit, RFC 9051's nz-number). The store itself counts UIDs in 64 bits, so storing never fails on
 * it: the IMAP side (imap-access) renumbers a folder before it would show a UID or a UIDNEXT above the limit, as
 * Dovecot does when its counter runs out. Every message stays; clients see a new UIDVALIDITY and sync afresh.
 */
import { sql } from 'kysely';
import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { MAX_IMAP_UID } from '../../lib/imap-message/index.js';
import { bumpFolder, DRAFTS_FOLDER, mailDb, type MailDb } from './message.store.js';

type Scope = { workspaceId: string; mailboxId: string; folder: string };

/** What a renumbering did: null when another one had done it already. */
export interface Renumbered {
  uidvalidity: number;
  messages: number;
}

/** The folder's messages numbered 1…n in their UID order, each at `modseq`; how many there are. */
async function renumberMessages(db: MailDb, scope: Scope, modseq: number): Promise<number> {
  // Negative first: the unique (mailbox, folder, uid) index is checked row by row on PostgreSQL.
  await db
    .updateTable('messages')
    .set({ uid: sql<number>`-${sql.ref('uid')}` })
    .where('workspace_id', '=', scope.workspaceId)
    .where('mailbox_id', '=', scope.mailboxId)
    .where('folder', '=', scope.folder)
    .execute();
  const numbered = db
    .selectFrom('messages')
    .select(['id', sql<number>`row_number() over (order by ${sql.ref('uid')} desc)`.as('n')])
    .where('workspace_id', '=', scope.workspaceId)
    .where('mailbox_id', '=', scope.mailboxId)
    .where('folder', '=', scope.folder)
    .as('numbered');
  const result = await db
    .updateTable('messages')
    .from(numbered)
    .set((eb) => ({ uid: eb.ref('numbered.n'), modseq }))
    .whereRef('messages.id', '=', 'numbered.id')
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Drafts' shown drafts (those with a source, so a UID) numbered 1…n in their UID order, as messages are. */
async function renumberDrafts(db: MailDb, scope: Scope, modseq: number): Promise<number> {
  await db
    .updateTable('drafts')
    .set({ uid: sql<number>`-${sql.ref('uid')}` })
    .where('workspace_id', '=', scope.workspaceId)
    .where('mailbox_id', '=', scope.mailboxId)
    .where('uid', 'is not', null)
    .execute();
  const numbered = db
    .selectFrom('drafts')
    .select(['id', sql<number>`row_number() over (order by ${sql.ref('uid')} desc)`.as('n')])
    .where('workspace_id', '=', scope.workspaceId)
    .where('mailbox_id', '=', scope.mailboxId)
    .where('uid', 'is not', null)
    .as('numbered');
  const result = await db
    .updateTable('drafts')
    .from(numbered)
    .set((eb) => ({ uid: eb.ref('numbered.n'), modseq }))
    .whereRef('drafts.id', '=', 'numbered.id')
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

export function createUidRenumberStore({ clock }: { clock: Clock }) {
  return {
    /**
     * In the caller's transaction: the folder's messages (Drafts: its drafts) get UIDs 1…n in their UID order, UIDNEXT becomes n + 1,
     * UIDVALIDITY rises (to now in seconds, or by one if that is not more), the folder's expunge log (UIDs of the old
     * validity) is dropped and its modseq raised (which rings its sessions). A folder whose counter fits is left alone.
     */
    async renumberFolder(work: Work, scope: Scope): Promise<Renumbered | null> {
      const db = mailDb(work);
      // The bump takes the counter's row lock first: a second renumbering waits here, then finds nothing to do.
      await bumpFolder(db, scope.workspaceId, scope.mailboxId, scope.folder, 0, 0, 0);
      const counter = await db
        .selectFrom('folder_counts')
        .select(['uidnext', 'uidvalidity', 'modseq'])
        .where('workspace_id', '=', scope.workspaceId)
        .where('mailbox_id', '=', scope.mailboxId)
        .where('folder', '=', scope.folder)
        .executeTakeFirstOrThrow();
      if (Number(counter.uidnext) <= MAX_IMAP_UID) return null;
      const messages = scope.folder === DRAFTS_FOLDER ? await renumberDrafts(db, scope, Number(counter.modseq)) : await renumberMessages(db, scope, Number(counter.modseq));
      const uidvalidity = Math.max(Math.floor(clock.now() / 1000), Number(counter.uidvalidity) + 1);
      await db
        .updateTable('folder_counts')
        .set({ uidnext: messages + 1, uidvalidity })
        .where('workspace_id', '=', scope.workspaceId)
        .where('mailbox_id', '=', scope.mailboxId)
        .where('folder', '=', scope.folder)
        .execute();
      await db.deleteFrom('mail_expunged').where('workspace_id', '=', scope.workspaceId).where('mailbox_id', '=', scope.mailboxId).where('folder', '=', scope.folder).execute();
      return { uidvalidity, messages };
    },
  };
}
