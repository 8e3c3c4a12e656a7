/**
 * Mailboxes: the addresses mail is stored under, each with its counts summed from its folders' counters. Every
 * lookup filters by workspace, but the lookup by address for inbound SMTP, which is service-wide on purpose.
 */
import type { Kysely } from 'kysely';
import { preparedQuery } from '../../db/prepared.js';
import type { Work } from '../../db/tables.js';
import type { CandidateRow, candidatesSelect } from '../lists/list.store.js';
import type { MailTables } from './mail.table.js';
import type { MailboxTable } from './mailbox.table.js';
import { mailDb, type MailDb } from './message.store.js';

export interface MailboxRow extends MailboxTable {
  message_count: number;
  unread_count: number;
}

/** Mailboxes with their message and unread counts summed from folder_counts. */
function withCounts(db: MailDb, workspaceId: string) {
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
    .select((eb) => [eb.fn.coalesce('fc.total', eb.lit(0)).as('message_count'), eb.fn.coalesce('fc.unread', eb.lit(0)).as('unread_count')])
    .where('mailboxes.workspace_id', '=', workspaceId);
}

/** Looked up for every RCPT TO (prepared: see db/prepared.ts). */
const findAnyByAddressQuery = preparedQuery<{ address: string }, Pick<MailboxTable, 'id' | 'workspace_id' | 'address'>, MailTables>((db, p) =>
  db.selectFrom('mailboxes').select(['id', 'workspace_id', 'address']).where('address', '=', p<string>('address')),
);
/** A workspace's mailbox by address, id and address only: a builder, so that a caller may read more in the same statement. */
export const idByAddressSelect = (db: Kysely<MailTables>, workspaceId: string, address: string) =>
  db.selectFrom('mailboxes').select(['id', 'address']).where('workspace_id', '=', workspaceId).where('address', '=', address);

const idByAddressQuery = preparedQuery<{ workspaceId: string; address: string }, Pick<MailboxTable, 'id' | 'address'>, MailTables>((db, p) =>
  idByAddressSelect(db, p<string>('workspaceId'), p<string>('address')),
);

/** A workspace's mailbox by address, without counts (prepared: every filtered page asks it). */
export async function mailboxIdByAddress(db: MailDb, workspaceId: string, address: string): Promise<Pick<MailboxTable, 'id' | 'address'> | undefined> {
  return (await idByAddressQuery(db, { workspaceId, address }))[0];
}

/** A workspace's mailbox by address, with its counts. */
export function findMailboxRow(db: MailDb, workspaceId: string, address: string): Promise<MailboxRow | undefined> {
  return withCounts(db, workspaceId).where('mailboxes.address', '=', address).executeTakeFirst();
}

/**
 * A RCPT's recipient check in one statement: the mailbox of the address (in whichever workspace) and that workspace's
 * inbound list entries that could apply to the peer (`keys`). Every row is a list candidate with the mailbox beside
 * it (its columns null when no mailbox has the address, and then no entry is read); there is always at least one row.
 */
export type RecipientRow = CandidateRow & { mailbox_id: string | null; workspace_id: string | null; mailbox_address: string | null };

export interface MailboxStoreDeps {
  /** The list entries a peer could match, as a part of the recipient check (lists module); none: no recipient check. */
  listCandidates?: typeof candidatesSelect;
}

export function createMailboxStore({ listCandidates }: MailboxStoreDeps = {}) {
  // Every RCPT TO asks it (prepared: see db/prepared.ts). The workspace is the mailbox's, as a scalar subquery (the
  // address is unique), so that the list entries' part needs no second statement.
  const recipientQuery = preparedQuery<{ address: string; keys: readonly string[] }, RecipientRow, MailTables>((db, p) => {
    if (!listCandidates) throw new Error('the mailbox store was built without the lists');
    const address = p<string>('address');
    const workspace = db.selectFrom('mailboxes').select('workspace_id').where('address', '=', address).$asScalar();
    return db
      .selectFrom(listCandidates(db, workspace, 'inbound', p.list<string>('keys')).as('l'))
      .leftJoin(db.selectFrom('mailboxes').select(['id', 'workspace_id', 'address']).where('address', '=', address).as('m'), (join) => join.onTrue())
      .select(['l.has_allow', 'l.list_type', 'l.entry', 'l.kind', 'm.id as mailbox_id', 'm.workspace_id', 'm.address as mailbox_address']);
  });
  return {
    createMailbox: async (work: Work, row: MailboxTable): Promise<void> => {
      await mailDb(work).insertInto('mailboxes').values(row).execute();
    },
    /** Newest first, then id, so the order is total. */
    listMailboxes: (work: Work, workspaceId: string): Promise<MailboxRow[]> =>
      withCounts(mailDb(work), workspaceId).orderBy('mailboxes.created_at', 'desc').orderBy('mailboxes.id', 'desc').execute(),
    findMailbox: (work: Work, workspaceId: string, address: string) => findMailboxRow(mailDb(work), workspaceId, address),
    mailboxIdByAddress: (work: Work, workspaceId: string, address: string) => mailboxIdByAddress(mailDb(work), workspaceId, address),
    /** The mailbox an address belongs to with its workspace's inbound list candidates for the peer (see `RecipientRow`). */
    readRecipient: (work: Work, query: { address: string; keys: readonly string[] }): Promise<RecipientRow[]> => recipientQuery(mailDb(work), query),
    /** The mailbox an address belongs to, in whichever workspace (inbound SMTP routing). */
    mailboxForRecipient: async (work: Work, address: string): Promise<Pick<MailboxTable, 'id' | 'workspace_id' | 'address'> | undefined> =>
      (await findAnyByAddressQuery(mailDb(work), { address }))[0],
    /** The workspace's mailboxes that have a signature, with it. */
    listSignatures: (work: Work, workspaceId: string): Promise<{ address: string; signature_html?: string | null; updated_at: number }[]> =>
      mailDb(work)
        .selectFrom('mailboxes')
        .select(['address', 'updated_at', 'signature_html'])
        .where('workspace_id', '=', workspaceId)
        .where('signature_html', 'is not', null)
        .orderBy('address')
        .execute(),
    /** Set (or, with null, clear) a mailbox's signature; answers whether the mailbox is the workspace's. */
    setSignature: async (work: Work, workspaceId: string, address: string, html: string | null, now: number): Promise<boolean> => {
      const result = await mailDb(work)
        .updateTable('mailboxes')
        .set({ signature_html: html, updated_at: now })
        .where('workspace_id', '=', workspaceId)
        .where('address', '=', address)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) > 0;
    },
    /**
     * The senders and recipients of the workspace's newest messages: a bounded read down the (workspace, created_at)
     * index, so address completion costs the same on a workspace of any size.
     */
    recentCorrespondents: (work: Work, workspaceId: string, limit: number) =>
      mailDb(work)
        .selectFrom('messages')
        .select(['from_json', 'to_json', 'cc_json', 'created_at'])
        .where('workspace_id', '=', workspaceId)
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(limit)
        .execute(),
    /** Delete a mailbox and, through foreign keys, everything stored in it. */
    deleteMailbox: async (work: Work, workspaceId: string, id: string): Promise<void> => {
      await mailDb(work).deleteFrom('mailboxes').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();
    },
  };
}
