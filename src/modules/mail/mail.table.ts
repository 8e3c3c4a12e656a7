import type { MailboxTable } from './mailbox.table.js';
import type {
  AttachmentTable,
  FolderCountTable,
  MailExpungedTable,
  MessageContentTable,
  MessageFtsKeyTable,
  MessageFtsTable,
  MessageLabelTable,
  MessageSpamTable,
  MessageStructureTable,
  MessageTable,
  ThreadRefTable,
  ThreadTable,
} from './message.table.js';
import type { OutboundTable } from './outbound.table.js';
import type { DraftAttachmentTable, DraftTable } from './draft.table.js';
import type { SuppressionTable } from './suppression.table.js';
import type { MailRetentionTable } from './retention.table.js';
import type { LabelDefinitionTable } from './label.table.js';

/**
 * The mail store's tables: mailboxes and everything in them (messages, their threads, contents, kept FETCH
 * structures, attachments, labels and their definitions, folder counts and search index), drafts, and the outbound copies with their
 * delivery state and suppressions. Only the mail store's own files (`src/modules/mail/*.store.ts`) name them.
 */
export interface MailTables {
  mailboxes: MailboxTable;
  threads: ThreadTable;
  messages: MessageTable;
  message_contents: MessageContentTable;
  message_structures: MessageStructureTable;
  message_spam: MessageSpamTable;
  message_fts: MessageFtsTable;
  message_fts_keys: MessageFtsKeyTable;
  attachments: AttachmentTable;
  message_labels: MessageLabelTable;
  thread_refs: ThreadRefTable;
  folder_counts: FolderCountTable;
  outbound: OutboundTable;
  drafts: DraftTable;
  draft_attachments: DraftAttachmentTable;
  suppressions: SuppressionTable;
  mail_retention: MailRetentionTable;
  mail_expunged: MailExpungedTable;
  label_definitions: LabelDefinitionTable;
}
