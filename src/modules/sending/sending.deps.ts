import type { Work } from '../../db/tables.js';
import type { EmitInput } from '../events/event.types.js';
import type { MailboxRow } from '../mailboxes/mailbox.repository.js';
import type { StoreInput } from '../messages/message-store.js';
import type { DeliveryDetailColumns, MessageDetailRow, MessageFilter, MessagePageRow, MessageRow } from '../messages/message.repository.js';
import type { MessageContentTable } from '../messages/message.table.js';

/**
 * What the sending services use of the received half of the mail store (messages and mailboxes), as operations
 * taking `Work`. services.ts wires them; the sending half's own operations come as `Pick<SendingMailStore, …>`.
 */
export interface ReceivedMail {
  /** Store the message's `sent` copy, in the caller's transaction. */
  storeMessage(work: Work, input: StoreInput): Promise<MessageRow>;
  findMessage(work: Work, workspaceId: string, messageId: string): Promise<MessageDetailRow | undefined>;
  findContent(work: Work, workspaceId: string, messageId: string, withRaw: boolean): Promise<Partial<MessageContentTable> | undefined>;
  listWithDelivery(work: Work, workspaceId: string, filter: MessageFilter, limit: number, offset: number): Promise<Array<MessagePageRow & DeliveryDetailColumns>>;
  countMessages(work: Work, workspaceId: string, filter: MessageFilter): Promise<number>;
  findMailboxByAddress(work: Work, workspaceId: string, address: string): Promise<MailboxRow | undefined>;
}

/** Writing an event into the outbox, in the caller's transaction (`EventsService.emit`). */
export interface EventOutbox {
  emit(work: Work, input: EmitInput): Promise<unknown>;
}

/** The sending domain check of a send (`DomainService.isAllowedDomain`), read on the caller's connection. */
export interface SendingDomains {
  isAllowedDomain(workspaceId: string, domain: string, conn: Work): Promise<boolean>;
}
