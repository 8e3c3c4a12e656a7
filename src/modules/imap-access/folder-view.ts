/**
 * One IMAP mailbox as the selected-folder commands use it, whatever keeps it: a folder of the mail store's messages,
 * or Drafts, which shows the drafts (drafts-folder.ts). The access service picks the view by the mailbox.
 */
import type { FetchEntry, FetchRead, FlagStore, FlagStoreResult, FolderStatus, FolderTextField, IndexEntry, UidRanges } from '../mail/mail.store.js';

/** The mailbox a session logged in to (workspace and mailbox are all a view needs). */
export interface ViewAccount {
  workspaceId: string;
  mailboxId: string;
}

/** A header field as SEARCH reads it: unfolded, MIME encoded-words decoded. */
export interface HeaderField {
  name: string;
  value: string;
}

/** A SEARCH text key's answer: the UIDs that match (null: every message), or why the index cannot answer now. */
export type TextSearchResult = { ok: true; uids: number[] | null } | { ok: false; text: string };

/** What the access service's per-mailbox operations read and change (see ImapAccessService for each). */
export interface FolderView {
  status(account: ViewAccount): Promise<FolderStatus>;
  /** The folder's modseq alone (null before anything was in it): one row, for IDLE's safety poll. */
  modseq(account: ViewAccount): Promise<number | null>;
  index(account: ViewAccount): Promise<IndexEntry[]>;
  messages(account: ViewAccount, ranges: UidRanges, read: FetchRead): Promise<FetchEntry[]>;
  changedSince(account: ViewAccount, modseq: number): Promise<IndexEntry[]>;
  expungedSince(account: ViewAccount, modseq: number): Promise<number[]>;
  /** STORE with keywords already as labels. */
  store(account: ViewAccount, ranges: UidRanges, change: FlagStore): Promise<FlagStoreResult>;
  searchText(account: ViewAccount, field: FolderTextField, value: string): Promise<TextSearchResult>;
  headers(account: ViewAccount, ranges: UidRanges): Promise<Array<{ uid: number; headers: HeaderField[] }>>;
  expunge(account: ViewAccount, ranges?: UidRanges): Promise<number[]>;
}
