/**
 * The message reads the sending module still makes with a `Db`, answered by the mail store (src/modules/mail). Kept
 * only until sending takes those operations from the mail store itself; nothing new should call it.
 */
import type { QueryCreator, SelectQueryBuilder } from 'kysely';
import type { Db } from '../../db/database.js';
import type { Database } from '../../db/schema.js';
import { asWork, tablesOf } from '../../db/tables.js';
import type { MailTables } from '../mail/mail.table.js';
import {
  countMessages,
  createMessageStore,
  deliveryRows,
  findMessageRow,
  messageWithRawQuery as rawQuery,
  type MessageDetailRow,
  type MessageFilter,
  type MessageRow,
} from '../mail/message.store.js';
import type { OutboundTable } from '../mail/outbound.table.js';

export type { MessageDetailRow, MessageRow } from '../mail/message.store.js';

const reads = createMessageStore();

/** A message (list-view columns) with its raw source, as a query over the whole schema to narrow and extend. */
export function messageWithRawQuery(db: QueryCreator<Database>, workspaceId: string) {
  // The same builder, seen over the whole schema so that its caller may join tables the mail store does not own.
  return rawQuery(db as unknown as QueryCreator<MailTables>, workspaceId) as unknown as SelectQueryBuilder<
    Database & { delivery: OutboundTable },
    'messages' | 'mailboxes' | 'message_contents' | 'delivery',
    MessageRow & { raw: Buffer }
  >;
}

export const messageRepository = {
  findMessage: (db: Db, workspaceId: string, messageId: string): Promise<MessageDetailRow | undefined> => findMessageRow(tablesOf<MailTables>(db), workspaceId, messageId),
  findContent: (db: Db, workspaceId: string, messageId: string, withRaw: boolean) => reads.findContent(asWork(db), workspaceId, messageId, withRaw),
  listWithDelivery: (db: Db, workspaceId: string, filter: MessageFilter, limit: number, offset: number) => deliveryRows(tablesOf<MailTables>(db), workspaceId, filter, limit, offset),
  countMessages: (db: Db, workspaceId: string, filter: MessageFilter) => countMessages(tablesOf<MailTables>(db), workspaceId, filter),
} as const;
