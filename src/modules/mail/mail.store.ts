/**
 * The received-mail half of the mail store: the one owner of mailboxes and everything stored in them (messages,
 * threads, contents, attachments, labels, folder counters, the search index), and of what a bounce or complaint
 * reads and files. Every operation takes the pool or the caller's transaction (`Work`) first and names its tables
 * only inside this module; services receive the operations they use as `Pick<ReceivedMailStore, …>` from services.ts.
 */
import type { DialectInfo } from '../../db/dialect.js';
import type { Clock } from '../../lib/clock.js';
import { createBounceStore } from './bounces.store.js';
import { createCopyStore } from './copy.store.js';
import { createCopyMessagesStore } from './copy-messages.store.js';
import { createMailboxStore, type MailboxStoreDeps } from './mailbox.store.js';
import { createMessageStore } from './message.store.js';
import { createFolderThreadStore } from './folder-threads.store.js';
import { createOrganizeStore } from './organize.store.js';
import { createPurgeStore } from './purge.store.js';
import { createSearchStore } from './search.store.js';
import { createTransferStore } from './transfer.store.js';
import { createUsageStore } from './usage.store.js';
import { createRetentionStore } from './retention.store.js';
import { createLabelStore } from './label.store.js';
import { createSyncStore } from './sync.store.js';
import { createUidRenumberStore } from './uid-renumber.store.js';
import { createStructureStore } from './structure.store.js';
import { createDraftFolderStore } from './draft-folder.store.js';
import { createMailLookups, type MailLookups } from './lookups.store.js';
import { createSendingMailStore, type SendingMailStore, type SendingMailStoreDeps } from './sending-mail.store.js';

export interface ReceivedMailStoreDeps extends MailboxStoreDeps {
  clock: Clock;
  /** What the database can do: row locks (a thread's row is locked before its counts change), its full-text index. */
  dialect: DialectInfo;
}

export function createReceivedMailStore(deps: ReceivedMailStoreDeps) {
  return {
    ...createCopyStore(deps),
    ...createCopyMessagesStore(deps),
    ...createMessageStore(),
    ...createFolderThreadStore(),
    ...createOrganizeStore(deps),
    ...createMailboxStore(deps),
    ...createSearchStore(deps),
    ...createBounceStore(),
    ...createPurgeStore(),
    ...createTransferStore(),
    ...createUsageStore(),
    ...createRetentionStore(deps),
    ...createLabelStore(deps),
    ...createSyncStore(deps),
    ...createUidRenumberStore(deps),
    ...createStructureStore(deps),
    ...createDraftFolderStore(deps),
  };
}

export type ReceivedMailStore = ReturnType<typeof createReceivedMailStore>;

/**
 * The mail store: the one owner of the mail tables. Its halves are built apart (received mail; the sending side's
 * outbound state, drafts and suppressions; lookups other modules make) and given out whole from services.ts, where
 * each service takes the operations it uses (`Pick<MailStore, …>`).
 */
export type MailStore = ReceivedMailStore & SendingMailStore & MailLookups;

export function createMailStore(deps: ReceivedMailStoreDeps & SendingMailStoreDeps): MailStore {
  return { ...createReceivedMailStore(deps), ...createSendingMailStore(deps), ...createMailLookups() };
}
export type { StoreInput } from './copy.store.js';
export type { CopiedMessage, CopySource } from './copy-messages.store.js';
export type { MailboxRow, RecipientRow } from './mailbox.store.js';
export type { DeliveryColumns, DeliveryDetailColumns, MessageDetailRow, MessageFilter, MessagePageRow, MessageRow, MessageViewRow, StoredMessageRow, ThreadRow, VersionedPage } from './message.store.js';
export type { FolderThreadRow } from './folder-threads.store.js';
export type { FolderScope, FolderTextField, SearchPageRow } from './search.store.js';
export type { DraftScope } from './draft-folder.store.js';
export type { Renumbered } from './uid-renumber.store.js';
export type { NewStructure } from './structure.store.js';
export type { FetchEntry, FetchRead, FlagStore, FlagStoreResult, FolderStatus, IndexEntry, UidRanges } from './sync.store.js';
export type { FlagChange } from './organize.store.js';
export type { WorkspaceMailUsage } from './purge.store.js';
export type { ImportProbe, TransferCursor, TransferRow } from './transfer.store.js';
