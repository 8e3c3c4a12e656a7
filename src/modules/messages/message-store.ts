import type { Db } from '../../db/database.js';
import type { DialectInfo } from '../../db/dialect.js';
import type { Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import type { AttachmentTable, MessageTable } from './message.table.js';
import type { AttachmentView, AuthSummary, Folder } from './message.types.js';
import { messageRepository as repo, type MessageRow } from './message.repository.js';
import type { ParsedMessage } from './mime.js';
import { searchRepository } from './search.repository.js';
import { normalizeSubject, shareParticipant, SUBJECT_THREAD_WINDOW_MS } from './threading.js';

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
}

/** Largest participants list kept on a thread. */
const MAX_PARTICIPANTS = 100;

function participantsOf(parsed: ParsedMessage): string[] {
  const all = [parsed.from, ...parsed.to, ...parsed.cc].filter((a): a is NonNullable<typeof a> => a !== null).map((a) => a.address);
  return [...new Set(all)];
}

/** The thread a new message joins (References/In-Reply-To first, then subject + participant), or a new one. */
async function resolveThread(trx: Db, input: StoreInput, now: number, participants: string[]): Promise<{ threadId: string | null; keys: string[] }> {
  const { parsed } = input;
  const refKeys = [...new Set([...(parsed.inReplyTo ? [parsed.inReplyTo] : []), ...parsed.references])];
  const ownKey = parsed.messageId;
  const keys = [...new Set([...refKeys, ...(ownKey ? [ownKey] : [])])];
  const subjectKey = normalizeSubject(parsed.subject);
  const candidates = await repo.threadCandidates(trx, input.workspaceId, input.mailboxId, keys, subjectKey, now - SUBJECT_THREAD_WINDOW_MS);
  const hits = candidates.filter((c) => c.message_key !== null);
  // A reference to an earlier message wins; a match on our own id means a reply arrived first.
  const byRef = hits.find((h) => refKeys.includes(h.message_key!)) ?? hits[0];
  // thread_refs rows go with their thread (ON DELETE CASCADE), so a hit names a live thread.
  if (byRef) return { threadId: byRef.thread_id, keys };
  // Otherwise the most recent thread with the subject that shares a participant.
  const bySubject = candidates.filter((c) => c.participants !== null).sort((a, b) => (b.last_message_at ?? 0) - (a.last_message_at ?? 0));
  const match = bySubject.find((c) => shareParticipant(JSON.parse(c.participants!) as string[], participants));
  if (match) return { threadId: match.thread_id, keys };
  return { threadId: null, keys };
}

/** What a stored copy adds to its thread. */
interface ThreadAddition {
  now: number;
  participants: string[];
  labels: string[];
  unread: number;
  snippet: string;
}

/**
 * Put the new copy into its thread: the thread it resolves to, counted up, or a new one. Returns the thread's id
 * and the message keys to record for it. `rowLocks`: lock the thread row first (PostgreSQL), so concurrent
 * deliveries into one thread do not lose each other's counts.
 */
async function joinThread(trx: Db, input: StoreInput, add: ThreadAddition, rowLocks: boolean): Promise<{ threadId: string; keys: string[] }> {
  const { now, participants, labels, unread, snippet } = add;
  const resolved = await resolveThread(trx, input, now, participants);
  const { keys } = resolved;
  const current = resolved.threadId ? await repo.lockThread(trx, input.workspaceId, resolved.threadId, rowLocks) : undefined;
  if (current) {
    const merged = [...new Set([...(JSON.parse(current.participants) as string[]), ...participants])].slice(0, MAX_PARTICIPANTS);
    const threadLabels = [...new Set([...(JSON.parse(current.labels) as string[]), ...labels])].sort();
    await repo.addToThread(trx, input.workspaceId, current.id, {
      participants: JSON.stringify(merged),
      message_count: current.message_count + 1,
      unread_count: current.unread_count + unread,
      labels: JSON.stringify(threadLabels),
      snippet,
      last_message_at: Math.max(current.last_message_at, now),
      updated_at: now,
    });
    return { threadId: current.id, keys };
  }
  const threadId = newId('thr');
  const { parsed } = input;
  await repo.insertThread(trx, {
    id: threadId,
    workspace_id: input.workspaceId,
    mailbox_id: input.mailboxId,
    subject: parsed.subject,
    subject_key: normalizeSubject(parsed.subject),
    participants: JSON.stringify(participants.slice(0, MAX_PARTICIPANTS)),
    message_count: 1,
    unread_count: unread,
    labels: JSON.stringify(labels),
    snippet,
    last_message_at: now,
    created_at: now,
    updated_at: now,
  });
  return { threadId, keys };
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
function messageRowOf(input: StoreInput, ids: { messageId: string; threadId: string }, labels: string[], attachments: AttachmentTable[], now: number): MessageTable {
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
    created_at: now,
    updated_at: now,
  };
}

/**
 * The one write path of the message store: SMTP ingest, sending and drafts all store a message
 * copy through `store`, inside the caller's transaction (which also emits the event).
 */
export function createMessageStore({ clock, dialect }: { clock: Clock; dialect: DialectInfo }) {
  return {
    /** Store one copy of a message in one mailbox; returns the stored row (list-view columns). */
    async store(trx: Db, input: StoreInput): Promise<MessageRow> {
      const now = clock.now();
      const { parsed } = input;
      const labels = [...new Set(input.labels ?? [])].sort();
      const unread = input.read ? 0 : 1;
      // The snippet is computed with the parse (mime.ts), outside this transaction, which other writers wait for.
      const addition: ThreadAddition = { now, participants: participantsOf(parsed), labels, unread, snippet: parsed.snippet };
      const { threadId, keys } = await joinThread(trx, input, addition, dialect.supportsRowLocks);
      const messageId = input.id ?? newId('msg');
      const attachmentRows = attachmentRowsOf(input, messageId);
      const row = messageRowOf(input, { messageId, threadId }, labels, attachmentRows, now);
      await repo.insertMessage(trx, row);
      await repo.insertContent(trx, {
        message_id: messageId,
        workspace_id: input.workspaceId,
        text_body: parsed.text,
        html_body: parsed.html,
        headers_json: JSON.stringify(parsed.headers),
        raw: input.raw,
        ...(dialect.fullText === 'tsvector' ? { search_document: parsed.search.tsvector } : {}),
      });
      if (dialect.fullText === 'fts5') await searchRepository.indexFts(trx, input.workspaceId, messageId, parsed.search.document);
      await repo.insertAttachments(trx, attachmentRows);
      await repo.insertLabels(trx, input.workspaceId, messageId, labels);
      await repo.insertRefs(trx, input.workspaceId, input.mailboxId, threadId, keys);
      await repo.bumpFolder(trx, input.workspaceId, input.mailboxId, input.folder, 1, unread);
      return { ...row, mailbox_address: input.mailboxAddress };
    },
  };
}

export type MessageStore = ReturnType<typeof createMessageStore>;
