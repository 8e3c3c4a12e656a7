/**
 * Storing a copy of a message: the one write path of received and sent mail alike. SMTP ingest, sending and drafts
 * all store a message copy through `storeCopy`, inside the caller's transaction (which also emits the event): the
 * message joins its thread (by reference, else by subject and participant), its contents, attachments, labels and
 * search entry are written, and its folder's counters raised.
 */
import type { DialectInfo } from '../../db/dialect.js';
import { insertRows } from '../../db/prepared.js';
import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { foldCase } from '../../lib/mail-text.js';
import type { AttachmentView, AuthSummary, Folder, SpamView } from '../messages/message.types.js';
import type { ParsedMessage } from '../messages/mime.js';
import type { AttachmentTable } from './message.table.js';
import { bumpFolder, insertLabelRows, insertMessages, mailDb, type MailDb, type NewMessageRow, type StoredMessageRow } from './message.store.js';
import { indexFts } from './search.store.js';
import { ThreadJoiner, threadPlanOf } from './thread-join.store.js';

export interface StoreInput {
  /** A message id chosen by the caller (outbound mail names it in its VERP address); new by default. */
  id?: string;
  workspaceId: string;
  mailboxId: string;
  mailboxAddress: string;
  direction: 'inbound' | 'outbound';
  folder: Folder;
  read: boolean;
  labels?: readonly string[];
  raw: Buffer;
  parsed: ParsedMessage;
  auth: AuthSummary;
  envelope: Record<string, unknown>;
  /**
   * When the message arrived, if not now: an imported message keeps the date its source gives (its place in lists,
   * and the thread's latest activity); subject threading then looks at threads active around that time.
   */
  receivedAt?: number;
  /** IMAP's \Flagged, \Answered and \Deleted of an appended message (none by default). */
  flags?: { flagged?: boolean; answered?: boolean; deleted?: boolean };
  /** rspamd's verdict, when the message was scored (inbound SMTP). */
  spam?: SpamView | null | undefined;
}

function attachmentRowsOf(input: StoreInput, messageId: string): AttachmentTable[] {
  return input.parsed.attachments.map((a) => ({
    id: newId('att'),
    workspace_id: input.workspaceId,
    message_id: messageId,
    filename: a.filename,
    content_type: a.contentType,
    size: a.content.length,
    inline: a.inline ? 1 : 0,
    content_id: a.contentId,
    content: a.content,
  }));
}

/** The message row, with its attachments' list view (`attachments_json`) beside the bodies kept elsewhere. */
function messageRowOf(input: StoreInput, ids: { messageId: string; threadId: string }, labels: string[], attachments: AttachmentTable[], now: number): NewMessageRow {
  const at = input.receivedAt ?? now;
  const { parsed } = input;
  const attachmentViews: AttachmentView[] = attachments.map((a) => ({
    attachment_id: a.id,
    filename: a.filename,
    content_type: a.content_type,
    size: a.size,
    inline: a.inline === 1,
    content_id: a.content_id,
  }));
  return {
    id: ids.messageId,
    workspace_id: input.workspaceId,
    mailbox_id: input.mailboxId,
    thread_id: ids.threadId,
    direction: input.direction,
    folder: input.folder,
    read: input.read ? 1 : 0,
    labels: JSON.stringify(labels),
    from_json: JSON.stringify(parsed.from),
    from_address: parsed.from ? foldCase(parsed.from.address) : '',
    to_json: JSON.stringify(parsed.to),
    cc_json: JSON.stringify(parsed.cc),
    subject: parsed.subject,
    snippet: parsed.snippet,
    size: input.raw.length,
    date: parsed.date,
    internet_message_id: parsed.messageId,
    auth_json: JSON.stringify(input.auth),
    attachments_json: JSON.stringify(attachmentViews),
    envelope_json: JSON.stringify(input.envelope),
    created_at: at,
    updated_at: now,
    flagged: input.flags?.flagged ? 1 : 0,
    answered: input.flags?.answered ? 1 : 0,
    deleted: input.flags?.deleted ? 1 : 0,
  };
}

/** A folder's share of the copies: its counter is bumped once for all of them. */
interface FolderShare {
  mailboxId: string;
  folder: Folder;
  count: number;
  unread: number;
  bytes: number;
}

/** Each copy's folder, counted (map keyed by mailbox and folder), and each copy's UID offset from its folder's new `uidnext`. */
function folderShares(inputs: readonly StoreInput[]): { shares: Map<string, FolderShare>; offsets: number[] } {
  const shares = new Map<string, FolderShare>();
  const keys = inputs.map((input) => {
    const key = `${input.mailboxId}\u0000${input.folder}`;
    const share = shares.get(key) ?? { mailboxId: input.mailboxId, folder: input.folder, count: 0, unread: 0, bytes: 0 };
    share.count += 1;
    share.unread += input.read ? 0 : 1;
    share.bytes += input.raw.length;
    shares.set(key, share);
    return { key, index: share.count };
  });
  // The folder's copies take its UIDs in order: the first of n takes uidnext - n, the last uidnext - 1.
  return { shares, offsets: keys.map(({ key, index }) => shares.get(key)!.count - index + 1) };
}

/** Storing copies of messages (see the top of this file). */
export function createCopyStore({ clock, dialect }: { clock: Clock; dialect: DialectInfo }) {
  /** The copies' rows beside `messages`: contents, spam verdicts, the SQLite search index, files, labels, thread keys. */
  async function writeParts(trx: MailDb, copies: readonly { input: StoreInput; row: NewMessageRow; attachments: AttachmentTable[]; keys: string[] }[]): Promise<void> {
    const tsvector = dialect.fullText === 'tsvector';
    await insertRows(
      trx,
      'message_contents',
      copies.map(({ input, row }) => ({
        message_id: row.id,
        workspace_id: input.workspaceId,
        text_body: input.parsed.text,
        html_body: input.parsed.html,
        headers_json: JSON.stringify(input.parsed.headers),
        raw: input.raw,
        ...(tsvector ? { search_document: input.parsed.search.tsvector } : {}),
      })),
    );
    const spam = copies.flatMap(({ input, row }) => (input.spam ? [{ message_id: row.id, workspace_id: input.workspaceId, score: input.spam.score, action: input.spam.action, symbols_json: JSON.stringify(input.spam.symbols) }] : []));
    await insertRows(trx, 'message_spam', spam);
    if (dialect.fullText === 'fts5') for (const { input, row } of copies) await indexFts(trx, input.workspaceId, row.id, input.parsed.search.document);
    await insertRows(trx, 'attachments', copies.flatMap((c) => c.attachments));
    const labels = copies.flatMap(({ input, row }) => (JSON.parse(row.labels) as string[]).map((label) => ({ message_id: row.id, workspace_id: input.workspaceId, label })));
    await insertLabelRows(trx, labels);
    const refs = copies.flatMap(({ input, row, keys }) => keys.map((message_key) => ({ workspace_id: input.workspaceId, mailbox_id: input.mailboxId, message_key, thread_id: row.thread_id })));
    await insertRows(trx, 'thread_refs', refs, { ignoreConflicts: true });
  }

  const storeCopies: CopyStore['storeCopies'] = async (work, inputs) => {
    const first = inputs[0];
    if (!first) return [];
    if (inputs.some((input) => input.workspaceId !== first.workspaceId)) throw new Error("storeCopies: the copies of one call are one workspace's");
    const trx = mailDb(work);
    const now = clock.now();
    // The snippet is computed with the parse (mime.ts), outside this transaction, which other writers wait for.
    const plans = inputs.map((input) => {
      const labels = [...new Set(input.labels ?? [])].sort();
      return threadPlanOf({ mailboxId: input.mailboxId, parsed: input.parsed, labels, unread: input.read ? 0 : 1, at: input.receivedAt ?? now });
    });
    // The folders' counters first: they take the copies' UIDs and the new modseq, which the messages' INSERT reads
    // back. On PostgreSQL they are deferred writes that the threads' read carries, so they cost no round trip of their
    // own (decision 518); their row locks, held to the end, keep UIDs in commit order.
    const { shares, offsets } = folderShares(inputs);
    for (const share of shares.values()) await bumpFolder(trx, first.workspaceId, share.mailboxId, share.folder, share.count, share.unread, share.bytes, share.count);
    const threads = await ThreadJoiner.open(trx, first.workspaceId, plans, dialect.supportsRowLocks);
    const threadIds: string[] = [];
    for (const plan of plans) threadIds.push(await threads.join(trx, plan, now));
    await threads.write(trx);
    const copies = inputs.map((input, i) => {
      const messageId = input.id ?? newId('msg');
      const attachments = attachmentRowsOf(input, messageId);
      return { input, attachments, keys: plans[i]!.keys, row: messageRowOf(input, { messageId, threadId: threadIds[i]! }, plans[i]!.labels, attachments, now) };
    });
    await insertMessages(trx, copies.map(({ row }, i) => ({ row, uidOffset: offsets[i]! })));
    await writeParts(trx, copies);
    return copies.map(({ input, row }) => ({ ...row, mailbox_address: input.mailboxAddress }));
  };

  return {
    storeCopies,
    async storeCopy(work, input) {
      return (await storeCopies(work, [input]))[0]!;
    },
  } satisfies CopyStore;
}

export interface CopyStore {
  /** Store one copy of a message in one mailbox, in the caller's transaction; returns the stored row (list-view columns). */
  storeCopy(work: Work, input: StoreInput): Promise<StoredMessageRow>;
  /**
   * Store copies of one workspace's messages, in the caller's transaction, as storing them one at a time in this
   * order would: a later copy joins an earlier one's thread and takes a later UID. Each table is written once for all
   * of them (PostgreSQL: a few round trips for any number): threads are read and locked together
   * (thread-join.store.ts), each folder's counter bumped once.
   */
  storeCopies(work: Work, inputs: readonly StoreInput[]): Promise<StoredMessageRow[]>;
}
