/**
 * What a mail client's session may do with its mailbox, in the mail store's terms: IMAP mailboxes are the mailbox's
 * folders (names and special-use flags fixed here), except Drafts, which shows the mailbox's drafts (drafts-folder.ts);
 * \Seen is `read`, keywords are labels. The IMAP transport speaks
 * only to this service; it knows no tables and no syntax.
 */
import { decodeWords } from 'postal-mime';
import type { Work } from '../../db/tables.js';
import { headerBlock, headerValue } from '../../lib/mbox.js';
import { DomainError } from '../../lib/errors.js';
import { lessonOf, type SpamLearning } from '../messages/spam-learning.js';
import type { FetchEntry, FetchRead, FlagStore, FlagStoreResult, FolderStatus, FolderTextField, IndexEntry, MailStore, UidRanges } from '../mail/mail.store.js';
import { MAX_IMAP_UID } from '../../lib/imap-message/index.js';
import type { Logger } from '../../lib/logger.js';
import { withStructures } from './fetch-structures.js';
import { rawChunks, uidRanges, type RawTarget } from './raw-reads.js';
import type { SearchRunner } from '../messages/search-runner.js';
import type { AppPasswordLogin, AppPasswordService } from '../app-passwords/app-password.service.js';
import type { AppPasswordSessions, SessionCredential } from '../app-passwords/app-password-sessions.js';
import { notChecked } from '../messages/authentication.js';
import { MAX_LABELS_PER_MESSAGE, type Folder } from '../messages/message.types.js';
import { messageIds, parseMessage } from '../messages/mime.js';
import type { QuotaService } from '../quotas/quota.service.js';
import type { DraftFlags, DraftSources, ImportedDraft } from '../sending/draft.service.js';
import { createDraftsFolder, type DraftsFolderStore } from './drafts-folder.js';
import type { FolderView, HeaderField, TextSearchResult, ViewAccount } from './folder-view.js';
import type { MailSignal } from '../mail/mail-changes.js';

export type { FetchEntry, FetchRead, FolderStatus, FolderTextField, IndexEntry } from '../mail/mail.store.js';
export type { HeaderField, TextSearchResult } from './folder-view.js';
export type { RawTarget } from './raw-reads.js';

/**
 * One IMAP mailbox: its name, the folder key it shows (a messages folder; for Drafts the key of its counter), its
 * RFC 6154 flag, and whether it shows the mailbox's drafts (drafts-folder.ts) rather than messages.
 */
export interface ImapFolder {
  name: string;
  folder: string;
  specialUse: string | null;
  drafts: boolean;
}

export const IMAP_FOLDERS: readonly ImapFolder[] = [
  { name: 'INBOX', folder: 'inbox', specialUse: null, drafts: false },
  { name: 'Archive', folder: 'archive', specialUse: '\\Archive', drafts: false },
  { name: 'Drafts', folder: 'drafts', specialUse: '\\Drafts', drafts: true },
  { name: 'Sent', folder: 'sent', specialUse: '\\Sent', drafts: false },
  { name: 'Spam', folder: 'spam', specialUse: '\\Junk', drafts: false },
  { name: 'Trash', folder: 'trash', specialUse: '\\Trash', drafts: false },
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

export type ImapAccessStore = Pick<
  MailStore,
  | 'folderStatus'
  | 'folderModseq'
  | 'folderIndex'
  | 'renumberFolder'
  | 'messagesByUid'
  | 'changedSince'
  | 'expungedSince'
  | 'storeFlags'
  | 'expungeDeleted'
  | 'moveMessages'
  | 'copySources'
  | 'copyMessages'
  | 'messageUid'
  | 'findByMessageId'
  | 'storeCopy'
  | 'headersByUid'
  | 'structureSources'
  | 'saveStructures'
  | 'removeByUid'
> &
  DraftsFolderStore;

/** What a COPY or MOVE did: the target's UIDVALIDITY, and each message's UID in the source and in the target (same order). */
export interface CopyOutcome {
  uidvalidity: number;
  source: number[];
  target: number[];
}

/** A refusal by the workspace's `stored_bytes` quota. */
export interface OverQuota {
  ok: false;
  reason: 'overquota';
  detail: string;
}

/** An APPEND: the message, its flags and keywords as the client gave them, its internal date (epoch ms). */
export interface AppendMessage {
  raw: Buffer;
  flags: readonly string[];
  date?: number | undefined;
}

/** An appended message (or, in Sent, the copy already stored with its Message-ID: `existing`). */
export interface Appended {
  ok: true;
  uidvalidity: number;
  uid: number;
  existing: boolean;
}

/** Most messages one MOVE transaction takes (the store renumbers them 500 a statement). */
const MOVE_BATCH = 1_000;
/** Most messages one COPY transaction takes (the store's `copyMessages` takes at most 500). */
const COPY_BATCH = 500;

/**
 * The raw messages of `messages` (in UID order, with the sizes their index entries give), a bounded read at a time
 * (raw-reads.ts); a read that finds none is not yielded.
 */
async function* rawReads(view: FolderView, account: ViewAccount, messages: readonly RawTarget[]): AsyncGenerator<FetchEntry[]> {
  for (const chunk of rawChunks(messages)) {
    const rows = await view.messages(account, uidRanges(chunk.map((m) => m.uid)), 'raw');
    if (rows.length > 0) yield rows;
  }
}

/** Ascending UIDs as ranges, in batches of at most `size` UIDs. */
function batchesOf(uids: readonly number[], size: number): Array<Array<[number, number]>> {
  const sorted = [...new Set(uids)].sort((a, b) => a - b);
  const out: Array<Array<[number, number]>> = [];
  for (let i = 0; i < sorted.length; i += size) {
    const ranges: Array<[number, number]> = [];
    for (const uid of sorted.slice(i, i + size)) {
      const last = ranges[ranges.length - 1];
      if (last && uid === last[1] + 1) last[1] = uid;
      else ranges.push([uid, uid]);
    }
    out.push(ranges);
  }
  return out;
}

/** A message's flags and keywords as an APPEND gives them (\Draft is not one: every draft has it, no message does). */
function imapFlags(e: IndexEntry): string[] {
  const flags = e.labels.slice();
  if (e.read) flags.push('\\Seen');
  if (e.flagged) flags.push('\\Flagged');
  if (e.answered) flags.push('\\Answered');
  if (e.deleted) flags.push('\\Deleted');
  return flags;
}

/** An APPEND's flags as a draft keeps them. */
function draftFlags(flags: readonly string[]): DraftFlags {
  const kept = appendFlags(flags);
  return { read: kept.read, ...kept.flags, labels: kept.labels };
}

/** An APPEND's flags as the store keeps them: \Seen is `read`, keywords are labels, other system flags are dropped. */
function appendFlags(flags: readonly string[]) {
  const lower = new Set(flags.map((f) => f.toLowerCase()));
  const labels = [...new Set(flags.filter((f) => !f.startsWith('\\')).map(keywordToLabel).filter((l): l is string => l !== null))].slice(0, MAX_LABELS_PER_MESSAGE);
  return { read: lower.has('\\seen'), flags: { flagged: lower.has('\\flagged'), answered: lower.has('\\answered'), deleted: lower.has('\\deleted') }, labels };
}

export interface ImapAccessService {
  login(address: string, password: string, remoteAddress: string): Promise<{ ok: true; account: ImapAccount } | Extract<AppPasswordLogin, { ok: false }>>;
  /** Follow the account's credential; `end` is called once when it no longer holds. Returns the function that stops. */
  watch(account: ImapAccount, end: () => void): () => void;
  /** Hear that the account's mailbox changed (any folder, committed, in any process). Returns the function that stops. */
  changes(account: ImapAccount, changed: () => void): () => void;
  /** The IMAP mailbox of a client's name (INBOX in any case), or null. */
  folder(name: string): ImapFolder | null;
  status(account: ImapAccount, folder: ImapFolder): Promise<FolderStatus>;
  /** The folder's modseq alone (null before anything was in it): every change raises it. */
  modseq(account: ImapAccount, folder: ImapFolder): Promise<number | null>;
  index(account: ImapAccount, folder: ImapFolder): Promise<IndexEntry[]>;
  /**
   * The messages of UID ranges as FETCH reads them: `raw` with their raw source; `structure` with their ENVELOPE,
   * BODYSTRUCTURE and BODY bytes (kept ones, else computed from the raw source and kept: fetch-structures.ts).
   */
  messages(account: ImapAccount, folder: ImapFolder, ranges: UidRanges, read: FetchRead): Promise<FetchEntry[]>;
  /**
   * Messages with their raw sources, in UID order, a bounded read at a time (raw-reads.ts), the reads bounded by the
   * sizes the caller's index entries give.
   */
  rawReads(account: ImapAccount, folder: ImapFolder, messages: readonly RawTarget[]): AsyncGenerator<FetchEntry[]>;
  changedSince(account: ImapAccount, folder: ImapFolder, modseq: number): Promise<IndexEntry[]>;
  expungedSince(account: ImapAccount, folder: ImapFolder, modseq: number): Promise<number[]>;
  /** STORE: flags and keywords (keywords no label can hold are left out). */
  store(account: ImapAccount, folder: ImapFolder, ranges: UidRanges, change: Omit<FlagStore, 'keywords'> & { keywords: readonly string[] }): Promise<FlagStoreResult>;
  /**
   * SEARCH text keys through the full-text index (the search API's threads, slots and time limit): the folder's UIDs
   * whose `field` holds the words of `value` in a row, the last as a prefix.
   */
  searchText(account: ImapAccount, folder: ImapFolder, field: FolderTextField, value: string): Promise<TextSearchResult>;
  /** SEARCH HEADER, BCC and SENT* dates: the top-level header fields of the messages of UID ranges, in UID order. */
  headers(account: ImapAccount, folder: ImapFolder, ranges: UidRanges): Promise<Array<{ uid: number; headers: HeaderField[] }>>;
  /** EXPUNGE: the folder's \Deleted messages (within `ranges`) removed as the API's delete removes them; their UIDs. */
  expunge(account: ImapAccount, folder: ImapFolder, ranges?: UidRanges): Promise<number[]>;
  /**
   * COPY: new messages in `to` with the same bytes, flags, labels and thread, in transactions of at most 500; the
   * stored-bytes quota is checked once, for the whole copy, before any of it is made.
   */
  copy(account: ImapAccount, from: ImapFolder, to: ImapFolder, uids: readonly number[]): Promise<({ ok: true } & CopyOutcome) | OverQuota>;
  /** MOVE: the API's move (a new UID in `to`, the old one expunged), at most 1,000 messages a transaction; into or out of Drafts, a copy and a removal in one transaction. */
  move(account: ImapAccount, from: ImapFolder, to: ImapFolder, uids: readonly number[]): Promise<CopyOutcome>;
  /** APPEND: a message of a folder, or (Drafts) a draft made from it; parsed before its transaction, as an import is. */
  append(account: ImapAccount, to: ImapFolder, message: AppendMessage): Promise<Appended | OverQuota>;
}

export interface ImapAccessDeps {
  work: Work;
  store: ImapAccessStore;
  appPasswords: Pick<AppPasswordService, 'verify'>;
  sessions: Pick<AppPasswordSessions, 'watch'>;
  /** The workspace's `stored_bytes` quota (modules/quotas), which COPY and APPEND count against. */
  storage: Pick<QuotaService, 'storageRefusal'>;
  search: Pick<SearchRunner, 'run'>;
  changes: Pick<MailSignal, 'subscribe'>;
  /** Drafts made from and rendered into MIME sources (the drafts API's service): IMAP's Drafts mailbox shows them. */
  drafts: Pick<DraftSources, 'importSources' | 'renderMissing'>;
  /** Where a folder's renumbering (its UIDs past 32 bits) and a failed write of FETCH structures (the FETCH goes on) are told. */
  logger: Pick<Logger, 'warn'>;
  /** rspamd's lessons from moves into and out of Spam, as the API's moves teach it; none without rspamd. */
  learning?: Pick<SpamLearning, 'teach'>;
}

/** A stored value with its encoded-words decoded; one that does not decode is searched as it came. */
function decoded(value: string): string {
  try {
    return decodeWords(value);
  } catch {
    return value;
  }
}

export function createImapAccessService({ work, store, drafts, appPasswords, sessions, storage, search, changes, logger, learning }: ImapAccessDeps): ImapAccessService {
  const scope = (account: ViewAccount, folder: string) => ({ workspaceId: account.workspaceId, mailboxId: account.mailboxId, folder });
  const mailboxScope = (account: ImapAccount) => ({ workspaceId: account.workspaceId, mailboxId: account.mailboxId });
  const draftsView = createDraftsFolder({ work, store, drafts, folder: IMAP_FOLDERS.find((f) => f.drafts)!.folder, decoded, logger });

  /**
   * The folder's status once its UIDs fit in 32 bits: a folder whose counter ran past them is renumbered first
   * (new UIDVALIDITY, every message kept), so no client is shown a UID or UIDNEXT IMAP cannot carry. `renumbered`:
   * this call did it (UIDs the caller read before are stale).
   */
  async function fitted(account: ViewAccount, folder: string): Promise<{ status: FolderStatus; renumbered: boolean }> {
    const status = await store.folderStatus(work, scope(account, folder));
    if (status.uidnext <= MAX_IMAP_UID) return { status, renumbered: false };
    const done = await work.transaction().execute((trx) => store.renumberFolder(trx, scope(account, folder)));
    if (done) logger.warn({ workspaceId: account.workspaceId, mailboxId: account.mailboxId, folder, ...done }, 'imap folder UIDs renumbered: its UID counter passed 32 bits');
    return { status: await store.folderStatus(work, scope(account, folder)), renumbered: true };
  }
  const uidvalidity = async (account: ImapAccount, folder: string) => (await fitted(account, folder)).status.uidvalidity;

  /** The UIDs in `folder` of messages (by id) after their store: read again when it had to be renumbered. */
  async function targetUids(account: ImapAccount, folder: string, stored: Array<{ id: string; uid: number }>): Promise<{ uidvalidity: number; uids: number[] }> {
    const { status, renumbered } = await fitted(account, folder);
    if (!renumbered) return { uidvalidity: status.uidvalidity, uids: stored.map((m) => m.uid) };
    const uids: number[] = [];
    for (const m of stored) uids.push((await store.messageUid(work, account.workspaceId, m.id)) ?? 0);
    return { uidvalidity: status.uidvalidity, uids };
  }

  /** A folder of the mail store's messages as a view. */
  function messageView(folder: string): FolderView {
    return {
      status: async (account) => (await fitted(account, folder)).status,
      modseq: (account) => store.folderModseq(work, scope(account, folder)),
      async index(account) {
        const entries = await store.folderIndex(work, scope(account, folder));
        // Past 32 bits only before a renumbering (uidnext is above the last UID): read again after it.
        if ((entries.at(-1)?.uid ?? 0) <= MAX_IMAP_UID) return entries;
        await fitted(account, folder);
        return store.folderIndex(work, scope(account, folder));
      },
      async messages(account, ranges, read) {
        const rows = await store.messagesByUid(work, scope(account, folder), ranges, read);
        return read === 'structure' ? withStructures(work, store, logger, account.workspaceId, rows) : rows;
      },
      changedSince: (account, modseq) => store.changedSince(work, scope(account, folder), modseq),
      expungedSince: (account, modseq) => store.expungedSince(work, scope(account, folder), modseq),
      async searchText(account, field, value) {
        try {
          const answer = await search.run({ kind: 'folder-text', workspaceId: account.workspaceId, scope: scope(account, folder), field, value });
          return { ok: true, uids: answer.kind === 'uids' ? answer.uids : [] };
        } catch (err) {
          // Busy, past its time, or no reader thread: the client may try again.
          if (err instanceof DomainError) return { ok: false, text: err.message };
          throw err;
        }
      },
      async headers(account, ranges) {
        const rows = await store.headersByUid(work, scope(account, folder), ranges);
        return rows.map((r) => ({ uid: r.uid, headers: r.headers.map((h): HeaderField => ({ name: h.name, value: decoded(h.value) })) }));
      },
      store: (account, ranges, change) => work.transaction().execute((trx) => store.storeFlags(trx, scope(account, folder), ranges, change)),
      async expunge(account, ranges) {
        const removed = await work.transaction().execute((trx) => store.expungeDeleted(trx, scope(account, folder), ranges));
        return removed.map((r) => Number(r.uid)).sort((a, b) => a - b);
      },
    };
  }
  const views = new Map<string, FolderView>(IMAP_FOLDERS.map((f) => [f.folder, f.drafts ? draftsView : messageView(f.folder)]));
  const view = (f: ImapFolder): FolderView => views.get(f.folder)!;

  /** The copy of a message with this Message-ID already in Sent (stored by the send path or an earlier APPEND). */
  async function inSent(w: Work, account: ImapAccount, messageId: string | null): Promise<{ id: string; uid: number } | null> {
    if (messageId === null) return null;
    const found = await store.findByMessageId(w, { workspaceId: account.workspaceId, mailboxId: account.mailboxId }, messageId);
    const copy = found.find((m) => m.folder === 'sent');
    return copy ? { id: copy.id, uid: copy.uid } : null;
  }

  /** Store a raw message in a folder as APPEND does (no check for a copy already in Sent), in the caller's transaction. */
  async function storeRaw(trx: Work, account: ImapAccount, folder: Folder, message: AppendMessage & { parsed: Awaited<ReturnType<typeof parseMessage>> }) {
    const { read, flags, labels } = appendFlags(message.flags);
    const row = await store.storeCopy(trx, {
      workspaceId: account.workspaceId,
      mailboxId: account.mailboxId,
      mailboxAddress: account.address,
      direction: folder === 'sent' ? 'outbound' : 'inbound',
      folder,
      read,
      labels,
      flags,
      raw: message.raw,
      parsed: message.parsed,
      auth: notChecked,
      envelope: { mail_from: '', rcpt_to: account.address, appended: true },
      ...(message.date === undefined ? {} : { receivedAt: message.date }),
    });
    return { id: row.id, uid: (await store.messageUid(trx, account.workspaceId, row.id))! };
  }

  /**
   * A draft's source stored in a folder as APPEND stores it: in Sent, a copy the send path already stored (same
   * Message-ID) is the one answered, not stored twice, as an APPEND to Sent is answered.
   */
  async function storeOrFind(trx: Work, account: ImapAccount, folder: Folder, message: AppendMessage & { parsed: Awaited<ReturnType<typeof parseMessage>> }) {
    const copy = folder === 'sent' ? await inSent(trx, account, message.parsed.messageId) : null;
    return copy ?? storeRaw(trx, account, folder, message);
  }

  /**
   * COPY or MOVE into or out of Drafts, a bounded read of sources a transaction (raw-reads.ts): into Drafts,
   * drafts made from the messages' sources; out of it, messages stored from the drafts' sources as APPEND stores
   * them. A MOVE removes each batch's originals in its transaction; a COPY checks the stored-bytes quota once, first.
   */
  async function transfer(account: ImapAccount, from: ImapFolder, to: ImapFolder, uids: readonly number[], move: boolean): Promise<({ ok: true } & CopyOutcome) | OverQuota> {
    const batches = batchesOf(uids, COPY_BATCH);
    if (!move) {
      let bytes = 0;
      for (const ranges of batches) bytes += (await view(from).messages(account, ranges, 'index')).reduce((n, r) => n + r.size, 0);
      const refusal = bytes > 0 ? await storage.storageRefusal(account.workspaceId, bytes) : null;
      if (refusal) return { ok: false, reason: 'overquota', detail: refusal };
    }
    const outcome: CopyOutcome = { uidvalidity: 0, source: [], target: [] };
    const stored: Array<{ id: string; uid: number }> = [];
    const made: ImportedDraft[] = [];
    for (const batch of batches) {
      for await (const rows of rawReads(view(from), account, await view(from).messages(account, batch, 'index'))) {
        const sources = rows.map((r) => ({ uid: r.uid, raw: r.raw!, flags: imapFlags(r), date: r.created_at }));
        if (sources.length === 0) continue;
        const ranges = sources.map((m) => [m.uid, m.uid] as const);
        const removeSources = async (trx: Work) => {
          if (!move) return;
          if (from.drafts) await store.removeDraftsByUid(trx, mailboxScope(account), ranges, false);
          else await store.removeByUid(trx, scope(account, from.folder), ranges);
        };
        outcome.source.push(...sources.map((m) => m.uid));
        if (to.drafts) {
          made.push(...(await drafts.importSources(mailboxScope(account), sources.map((m) => ({ raw: m.raw, flags: draftFlags(m.flags), date: m.date })), removeSources)));
          continue;
        }
        const parsed = await Promise.all(sources.map((m) => parseMessage(m.raw)));
        await work.transaction().execute(async (trx) => {
          for (const [i, m] of sources.entries()) stored.push(await storeOrFind(trx, account, to.folder as Folder, { raw: m.raw, flags: m.flags, date: m.date, parsed: parsed[i]! }));
          await removeSources(trx);
        });
      }
    }
    if (to.drafts) {
      const placed = await draftsView.placed(account, made);
      return { ok: true, ...outcome, uidvalidity: placed.uidvalidity, target: placed.uids };
    }
    const target = await targetUids(account, to.folder, stored);
    return { ok: true, ...outcome, uidvalidity: target.uidvalidity, target: target.uids };
  }

  async function copy(account: ImapAccount, from: ImapFolder, to: ImapFolder, uids: readonly number[]): Promise<({ ok: true } & CopyOutcome) | OverQuota> {
    if (from.drafts || to.drafts) return transfer(account, from, to, uids, false);
    const src = from.folder;
    const dst = to.folder;
    const outcome: CopyOutcome = { uidvalidity: 0, source: [], target: [] };
    const batches = batchesOf(uids, COPY_BATCH);
    let bytes = 0;
    for (const ranges of batches) bytes += (await store.messagesByUid(work, scope(account, src), ranges)).reduce((n, r) => n + r.size, 0);
    const refusal = bytes > 0 ? await storage.storageRefusal(account.workspaceId, bytes) : null;
    if (refusal) return { ok: false, reason: 'overquota', detail: refusal };
    const stored: Array<{ id: string; uid: number }> = [];
    for (const ranges of batches) {
      // Read (and on SQLite indexed) before the transaction; what was deleted meanwhile is left out by the copy.
      const sources = await store.copySources(work, scope(account, src), ranges);
      const copied = await work.transaction().execute((trx) => store.copyMessages(trx, scope(account, src), sources, dst));
      for (const c of copied) {
        outcome.source.push(c.sourceUid);
        stored.push(c);
      }
    }
    const target = await targetUids(account, dst, stored);
    return { ok: true, ...outcome, uidvalidity: target.uidvalidity, target: target.uids };
  }

  async function move(account: ImapAccount, from: ImapFolder, to: ImapFolder, uids: readonly number[]): Promise<CopyOutcome> {
    if (from.drafts || to.drafts) {
      const moved = await transfer(account, from, to, uids, true);
      return moved.ok ? moved : { uidvalidity: 0, source: [], target: [] };
    }
    const src = from.folder;
    const dst = to.folder;
    const outcome: CopyOutcome = { uidvalidity: 0, source: [], target: [] };
    const stored: Array<{ id: string; uid: number }> = [];
    for (const ranges of batchesOf(uids, MOVE_BATCH)) {
      const rows = await store.messagesByUid(work, scope(account, src), ranges);
      if (rows.length === 0) continue;
      const before = new Map(rows.map((r) => [r.id, r.uid]));
      const moved = await work.transaction().execute(async (trx) => {
        const done = await store.moveMessages(trx, account.workspaceId, account.mailboxId, rows.map((r) => r.id), dst, src === dst);
        // Each lesson a job in the move's transaction (spam-learning.ts): the client never waits for rspamd.
        for (const m of learning ? done : []) {
          const kind = lessonOf(m.direction, m.from, dst as Folder);
          if (kind) await learning!.teach(trx, account.workspaceId, { messageId: m.id, kind });
        }
        return done;
      });
      const pairs = moved.filter((m) => before.has(m.id)).map((m) => [before.get(m.id)!, m] as const).sort((a, b) => a[0] - b[0]);
      for (const [old, m] of pairs) {
        outcome.source.push(old);
        stored.push(m);
      }
    }
    const target = await targetUids(account, dst, stored);
    return { ...outcome, uidvalidity: target.uidvalidity, target: target.uids };
  }

  async function append(account: ImapAccount, to: ImapFolder, message: AppendMessage): Promise<Appended | OverQuota> {
    if (to.drafts) {
      const refusal = await storage.storageRefusal(account.workspaceId, message.raw.length);
      if (refusal) return { ok: false, reason: 'overquota', detail: refusal };
      const made = await drafts.importSources(mailboxScope(account), [{ raw: message.raw, flags: draftFlags(message.flags), date: message.date }]);
      const placed = await draftsView.placed(account, made);
      return { ok: true, uidvalidity: placed.uidvalidity, uid: placed.uids[0]!, existing: false };
    }
    const folder = to.folder as Folder;
    const messageId = folder === 'sent' ? (messageIds(headerValue(headerBlock(message.raw), 'message-id'))[0] ?? null) : null;
    const existing = await inSent(work, account, messageId);
    if (existing !== null) return { ok: true, uidvalidity: await uidvalidity(account, folder), uid: existing.uid, existing: true };
    const refusal = await storage.storageRefusal(account.workspaceId, message.raw.length);
    if (refusal) return { ok: false, reason: 'overquota', detail: refusal };
    const parsed = await parseMessage(message.raw);
    const stored = await work.transaction().execute(async (trx) => {
      const again = await inSent(trx, account, messageId);
      if (again !== null) return { id: undefined, uid: again.uid, existing: true };
      return { ...(await storeRaw(trx, account, folder, { ...message, parsed })), existing: false };
    });
    const target = await targetUids(account, folder, stored.id === undefined ? [] : [{ id: stored.id, uid: stored.uid }]);
    return { ok: true, uidvalidity: target.uidvalidity, uid: target.uids[0] ?? stored.uid, existing: stored.existing };
  }

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
    status: (account, f) => view(f).status(account),
    modseq: (account, f) => view(f).modseq(account),
    index: (account, f) => view(f).index(account),
    messages: (account, f, ranges, read) => view(f).messages(account, ranges, read),
    rawReads: (account, f, messages) => rawReads(view(f), account, messages),
    changedSince: (account, f, modseq) => view(f).changedSince(account, modseq),
    expungedSince: (account, f, modseq) => view(f).expungedSince(account, modseq),
    searchText: (account, f, field, value) => view(f).searchText(account, field, value),
    headers: (account, f, ranges) => view(f).headers(account, ranges),
    store(account, f, ranges, change) {
      const keywords = [...new Set(change.keywords.map(keywordToLabel).filter((l): l is string => l !== null))];
      return view(f).store(account, ranges, { ...change, keywords });
    },
    expunge: (account, f, ranges) => view(f).expunge(account, ranges),
    copy,
    move,
    append,
  };
}
