/**
 * What a mail client's session may do with its mailbox, in the mail store's terms: IMAP mailboxes are the mailbox's
 * folders (names and special-use flags fixed here), \Seen is `read`, keywords are labels. The IMAP transport speaks
 * only to this service; it knows no tables and no syntax.
 */
import type { Work } from '../../db/tables.js';
import type { FetchEntry, FlagStore, FlagStoreResult, FolderStatus, IndexEntry, MailStore, UidRanges } from '../mail/mail.store.js';
import type { AppPasswordLogin, AppPasswordService } from '../app-passwords/app-password.service.js';
import type { AppPasswordSessions, SessionCredential } from '../app-passwords/app-password-sessions.js';
import type { MailSignal } from '../mail/mail-changes.js';

export type { FetchEntry, FolderStatus, IndexEntry } from '../mail/mail.store.js';

/** One IMAP mailbox: its name, the folder it shows (null: Drafts, kept by the drafts API, shown empty), its RFC 6154 flag. */
export interface ImapFolder {
  name: string;
  folder: string | null;
  specialUse: string | null;
}

export const IMAP_FOLDERS: readonly ImapFolder[] = [
  { name: 'INBOX', folder: 'inbox', specialUse: null },
  { name: 'Archive', folder: 'archive', specialUse: '\\Archive' },
  { name: 'Drafts', folder: null, specialUse: '\\Drafts' },
  { name: 'Sent', folder: 'sent', specialUse: '\\Sent' },
  { name: 'Spam', folder: 'spam', specialUse: '\\Junk' },
  { name: 'Trash', folder: 'trash', specialUse: '\\Trash' },
];

/** The mailbox a session logged in to. */
export interface ImapAccount {
  workspaceId: string;
  mailboxId: string;
  address: string;
  credential: SessionCredential;
}

/** Labels are 1–64 of a-z 0-9 _ . : - (the API's rule); a keyword is one when its lower-case form is one. */
const LABEL = /^[a-z0-9_.:-]{1,64}$/;

/** The label a keyword is stored as, or null for a keyword no label can hold (it is not kept). */
export function keywordToLabel(keyword: string): string | null {
  const label = keyword.toLowerCase();
  return LABEL.test(label) ? label : null;
}

/** The empty status of a folder the mail store does not hold (Drafts). */
const EMPTY_STATUS: FolderStatus = { uidvalidity: 1, uidnext: 1, highestmodseq: 1, total: 0, unseen: 0, firstUnseenUid: null };

export type ImapAccessStore = Pick<MailStore, 'folderStatus' | 'folderIndex' | 'messagesByUid' | 'changedSince' | 'expungedSince' | 'storeFlags' | 'expungeDeleted'>;

export interface ImapAccessService {
  login(address: string, password: string, remoteAddress: string): Promise<{ ok: true; account: ImapAccount } | Extract<AppPasswordLogin, { ok: false }>>;
  /** Follow the account's credential; `end` is called once when it no longer holds. Returns the function that stops. */
  watch(account: ImapAccount, end: () => void): () => void;
  /** Hear that the account's mailbox changed (any folder, committed, in any process). Returns the function that stops. */
  changes(account: ImapAccount, changed: () => void): () => void;
  /** The IMAP mailbox of a client's name (INBOX in any case), or null. */
  folder(name: string): ImapFolder | null;
  status(account: ImapAccount, folder: ImapFolder): Promise<FolderStatus>;
  index(account: ImapAccount, folder: ImapFolder): Promise<IndexEntry[]>;
  messages(account: ImapAccount, folder: ImapFolder, ranges: UidRanges, withRaw: boolean): Promise<FetchEntry[]>;
  changedSince(account: ImapAccount, folder: ImapFolder, modseq: number): Promise<IndexEntry[]>;
  expungedSince(account: ImapAccount, folder: ImapFolder, modseq: number): Promise<number[]>;
  /** STORE: flags and keywords (keywords no label can hold are left out). */
  store(account: ImapAccount, folder: ImapFolder, ranges: UidRanges, change: Omit<FlagStore, 'keywords'> & { keywords: readonly string[] }): Promise<FlagStoreResult>;
  /** EXPUNGE: the folder's \Deleted messages (within `ranges`) removed as the API's delete removes them; their UIDs. */
  expunge(account: ImapAccount, folder: ImapFolder, ranges?: UidRanges): Promise<number[]>;
}

export interface ImapAccessDeps {
  work: Work;
  store: ImapAccessStore;
  appPasswords: Pick<AppPasswordService, 'verify'>;
  sessions: Pick<AppPasswordSessions, 'watch'>;
  changes: Pick<MailSignal, 'subscribe'>;
}

export function createImapAccessService({ work, store, appPasswords, sessions, changes }: ImapAccessDeps): ImapAccessService {
  const scope = (account: ImapAccount, folder: string) => ({ workspaceId: account.workspaceId, mailboxId: account.mailboxId, folder });
  return {
    async login(address, password, remoteAddress) {
      const verdict = await appPasswords.verify(address, password, remoteAddress);
      if (!verdict.ok) return verdict;
      const credential = { appPasswordId: verdict.appPasswordId, workspaceId: verdict.workspaceId, userId: verdict.userId };
      return { ok: true, account: { workspaceId: verdict.workspaceId, mailboxId: verdict.mailboxId, address: verdict.mailbox, credential } };
    },
    watch: (account, end) => sessions.watch(account.credential, end),
    changes: (account, changed) => changes.subscribe(account.workspaceId, account.mailboxId, changed),
    folder(name) {
      if (name.toUpperCase() === 'INBOX') return IMAP_FOLDERS[0]!;
      return IMAP_FOLDERS.find((f) => f.name === name) ?? null;
    },
    status: async (account, f) => (f.folder === null ? EMPTY_STATUS : store.folderStatus(work, scope(account, f.folder))),
    index: async (account, f) => (f.folder === null ? [] : store.folderIndex(work, scope(account, f.folder))),
    messages: async (account, f, ranges, withRaw) => (f.folder === null ? [] : store.messagesByUid(work, scope(account, f.folder), ranges, withRaw)),
    changedSince: async (account, f, modseq) => (f.folder === null ? [] : store.changedSince(work, scope(account, f.folder), modseq)),
    expungedSince: async (account, f, modseq) => (f.folder === null ? [] : store.expungedSince(work, scope(account, f.folder), modseq)),
    async store(account, f, ranges, change) {
      const folder = f.folder;
      if (folder === null) return { modified: [], failed: [] };
      const keywords = [...new Set(change.keywords.map(keywordToLabel).filter((l): l is string => l !== null))];
      return work.transaction().execute((trx) => store.storeFlags(trx, scope(account, folder), ranges, { ...change, keywords }));
    },
    async expunge(account, f, ranges) {
      const folder = f.folder;
      if (folder === null) return [];
      const removed = await work.transaction().execute((trx) => store.expungeDeleted(trx, scope(account, folder), ranges));
      return removed.map((r) => Number(r.uid)).sort((a, b) => a - b);
    },
  };
}
