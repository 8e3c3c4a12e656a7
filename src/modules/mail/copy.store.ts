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
import { bumpFolder, insertLabels, insertMessage, mailDb, type MailDb, type NewMessageRow, type StoredMessageRow } from './message.store.js';
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

/** Storing copies of messages (see the top of this file). */
export function createCopyStore({ clock, dialect }: { clock: Clock; dialect: DialectInfo }) {
  /** One copy's rows after its thread is known; returns its row as `storeCopies` does. */
  async function writeCopy(trx: MailDb, input: StoreInput, threadId: string, labels: string[], now: number): Promise<StoredMessageRow> {
    const { parsed } = input;
    const messageId = input.id ?? newId('msg');
    const attachmentRows = attachmentRowsOf(input, messageId);
    const row = messageRowOf(input, { messageId, threadId }, labels, attachmentRows, now);
    await insertMessage(trx, row);
    await insertRows(trx, 'message_contents', [
      {
        message_id: messageId,
        workspace_id: input.workspaceId,
        text_body: parsed.text,
        html_body: parsed.html,
        headers_json: JSON.stringify(parsed.headers),
        raw: input.raw,
        ...(dialect.fullText === 'tsvector' ? { search_document: parsed.search.tsvector } : {}),
      },
    ]);
    if (input.spam) {
      const { score, action, symbols } = input.spam;
      await insertRows(trx, 'message_spam', [{ message_id: messageId, workspace_id: input.workspaceId, score, action, symbols_json: JSON.stringify(symbols) }]);
    }
    if (dialect.fullText === 'fts5') await indexFts(trx, input.workspaceId, messageId, parsed.search.document);
    await insertRows(trx, 'attachments', attachmentRows);
    await insertLabels(trx, input.workspaceId, messageId, labels);
    return { ...row, mailbox_address: input.mailboxAddress };
  }

  const storeCopies: CopyStore['storeCopies'] = async (work, inputs, each) => {
    const trx = mailDb(work);
    const now = clock.now();
    const workspaceId = inputs[0]?.workspaceId;
    if (inputs.some((input) => input.workspaceId !== workspaceId)) throw new Error('storeCopies: the copies of one call are one workspace\'s');
    // The snippet is computed with the parse (mime.ts), outside this transaction, which other writers wait for.
    const plans = inputs.map((input) => {
      const labels = [...new Set(input.labels ?? [])].sort();
      return threadPlanOf({ mailboxId: input.mailboxId, parsed: input.parsed, labels, unread: input.read ? 0 : 1, at: input.receivedAt ?? now });
    });
    let threads: ThreadJoiner | undefined;
    const rows: StoredMessageRow[] = [];
    for (const [i, input] of inputs.entries()) {
      const plan = plans[i]!;
      // The folder's counter first: it takes the message's UID (`uids` 1) and the new modseq, which the message
      // INSERT reads back. On PostgreSQL it is a deferred write that the next statement carries (for the first
      // copy, the threads' read), so it costs no round trip of its own (decision 518); its row lock, held to the
      // end, keeps UIDs in commit order.
      await bumpFolder(trx, input.workspaceId, input.mailboxId, input.folder, 1, plan.unread, input.raw.length, 1);
      threads ??= await ThreadJoiner.open(trx, input.workspaceId, plans, dialect.supportsRowLocks);
      const threadId = await threads.join(trx, plan, now);
      const row = await writeCopy(trx, input, threadId, plan.labels, now);
      await insertRows(trx, 'thread_refs', plan.keys.map((message_key) => ({ workspace_id: input.workspaceId, mailbox_id: input.mailboxId, message_key, thread_id: threadId })), { ignoreConflicts: true });
      rows.push(row);
      if (each) await each(row, i);
    }
    return rows;
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
   * Store copies of one workspace's messages in order, in the caller's transaction, each as `storeCopy` would: a
   * later copy joins an earlier one's thread. Their threads are read and locked for all of them at once
   * (thread-join.store.ts). `each`: the caller's own writes for a copy, run after it is stored and before the next is,
   * so that PostgreSQL receives them with its writes (db/write-coalescing.ts).
   */
  storeCopies(work: Work, inputs: readonly StoreInput[], each?: (row: StoredMessageRow, index: number) => Promise<void>): Promise<StoredMessageRow[]>;
}
