/**
 * The mailbox reads other modules (and bench/tools/fill-mailbox.ts, which loads it from the build it measures) still
 * make with a `Db`, answered by the mail store (src/modules/mail). Kept only until they take those operations from
 * the mail store itself; nothing new should call it.
 */
import type { Kysely, SelectQueryBuilder } from 'kysely';
import type { Db } from '../../db/database.js';
import type { Database } from '../../db/schema.js';
import { asWork, tablesOf } from '../../db/tables.js';
import type { MailTables } from '../mail/mail.table.js';
import { createMailboxStore, findMailboxRow, idByAddressSelect as idSelect, mailboxIdByAddress, type MailboxRow } from '../mail/mailbox.store.js';

export type { MailboxRow } from '../mail/mailbox.store.js';

/** A workspace's mailbox by address, id and address only, as a builder over the whole schema. */
export const idByAddressSelect = (db: Kysely<Database>, workspaceId: string, address: string) =>
  idSelect(tablesOf<MailTables>(db), workspaceId, address) as unknown as SelectQueryBuilder<Database, 'mailboxes', { id: string; address: string }>;

const mailboxes = createMailboxStore();

export const mailboxRepository = {
  findByAddress: (db: Db, workspaceId: string, address: string): Promise<MailboxRow | undefined> => findMailboxRow(tablesOf<MailTables>(db), workspaceId, address),
  findIdByAddress: (db: Db, workspaceId: string, address: string) => mailboxIdByAddress(tablesOf<MailTables>(db), workspaceId, address),
  findAnyByAddress: (db: Db, address: string) => mailboxes.mailboxForRecipient(asWork(db), address),
} as const;
