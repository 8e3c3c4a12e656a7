/**
 * Storing a copy of a message: the one write path of received and sent mail alike. SMTP ingest, sending and drafts
 * all store a message copy through `storeCopy`, inside the caller's transaction (which also emits the event): the
 * message joins its thread (by reference, else by subject and participant), its contents, attachments, labels and
 * search entry are written, and its folder's counters raised.
 */
import { sql } from 'kysely';
import type { DialectInfo } from '../../db/dialect.js';
import { insertRows, preparedQuery, preparedWrite } from '../../db/prepared.js';
import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { foldCase } from '../../lib/mail-text.js';
import type { AttachmentView, AuthSummary, Folder, SpamView } from '../messages/message.types.js';
import type { ParsedMessage } from '../messages/mime.js';
import type { MailTables } from './mail.table.js';
import type { AttachmentTable, ThreadTable } from './message.table.js';
import { bumpFolder, insertLabels, insertMessage, lockThread, mailDb, type MailDb, type NewMessageRow, type StoredMessageRow } from './message.store.js';
import { indexFts } from './search.store.js';
import { normalizeSubject, shareParticipant, SUBJECT_THREAD_WINDOW_MS } from './threading.js';

// The store's threading statements run for every stored message (prepared: see db/prepared.ts).
/** A thread a new message may join: by a reference (`message_key` set) or by subject (`participants` set). */
interface ThreadCandidate {
  thread_id: string;
  message_key: string | null;
  participants: string | null;
  last_message_at: number | null;
}
// Both ways a new message finds its thread in one statement: the threads its references (and its own
// Message-ID) name, and the recent threads of the mailbox with its normalised subject. The subject part
// is wasted when a reference hits, but it is an index lookup, and a second round trip costs more.
const threadCandidatesQuery = preparedQuery<{ workspaceId: string; mailboxId: string; keys?: readonly string[] | undefined; subjectKey?: string | undefined; since: number }, ThreadCandidate, MailTables>((db, p) => {
  const workspaceId = p<string>('workspaceId');
  const mailboxId = p<string>('mailboxId');
  const recent = db
    .selectFrom('threads')
    .select(['id', 'participants', 'last_message_at'])
    .where('workspace_id', '=', workspaceId)
    .where('mailbox_id', '=', mailboxId)
    .where('subject_key', '=', p<string>('subjectKey'))
    .where('last_message_at', '>=', p<number>('since'))
    .orderBy('last_message_at', 'desc')
    .limit(20);
  const bySubject = db
    .selectFrom(recent.as('s'))
    .select(['s.id as thread_id', sql<string | null>`null`.as('message_key'), 's.participants', 's.last_message_at']);
  if (!p.has('keys')) return bySubject;
  const byRef = db
    .selectFrom('thread_refs')
    .select((eb) => ['thread_id', eb.ref('message_key').$castTo<string | null>().as('message_key'), sql<string | null>`null`.as('participants'), sql<number | null>`null`.as('last_message_at')])
    .where('workspace_id', '=', workspaceId)
    .where('mailbox_id', '=', mailboxId)
    .where('message_key', 'in', p.list<string>('keys'));
  return p.has('subjectKey') ? byRef.unionAll(bySubject) : byRef;
});

type ThreadUpdate = Pick<ThreadTable, 'participants' | 'message_count' | 'unread_count' | 'labels' | 'snippet' | 'last_message_at' | 'updated_at'>;
const addToThreadQuery = preparedWrite<ThreadUpdate & { workspaceId: string; threadId: string }, MailTables>((db, p) =>
  db
    .updateTable('threads')
    .set({
      participants: p('participants'),
      message_count: p('message_count'),
      unread_count: p('unread_count'),
      labels: p('labels'),
      snippet: p('snippet'),
      last_message_at: p('last_message_at'),
      updated_at: p('updated_at'),
    })
    .where('workspace_id', '=', p<string>('workspaceId'))
    .where('id', '=', p<string>('threadId')),
);

/**
 * Threads a new message may join: those its reference keys name, and (with a subject key) the recent threads
 * with that subject since `since`. One statement; no statement at all when there is nothing to look up.
 */
async function threadCandidates(db: MailDb, q: { workspaceId: string; mailboxId: string; keys: readonly string[]; subjectKey: string; since: number }): Promise<ThreadCandidate[]> {
  const { workspaceId, mailboxId, keys, subjectKey, since } = q;
  if (keys.length === 0 && subjectKey === '') return [];
  return threadCandidatesQuery(db, { workspaceId, mailboxId, keys: keys.length > 0 ? keys : undefined, subjectKey: subjectKey === '' ? undefined : subjectKey, since });
}

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

/** Largest participants list kept on a thread. */
const MAX_PARTICIPANTS = 100;

function participantsOf(parsed: ParsedMessage): string[] {
  const all = [parsed.from, ...parsed.to, ...parsed.cc].filter((a): a is NonNullable<typeof a> => a !== null).map((a) => a.address);
  return [...new Set(all)];
}

/** The thread a new message joins (References/In-Reply-To first, then subject + participant), or a new one. */
async function resolveThread(trx: MailDb, input: StoreInput, now: number, participants: string[]): Promise<{ threadId: string | null; keys: string[] }> {
  const { parsed } = input;
  const refKeys = [...new Set([...(parsed.inReplyTo ? [parsed.inReplyTo] : []), ...parsed.references])];
  const ownKey = parsed.messageId;
  const keys = [...new Set([...refKeys, ...(ownKey ? [ownKey] : [])])];
  const subjectKey = normalizeSubject(parsed.subject);
  const candidates = await threadCandidates(trx, { workspaceId: input.workspaceId, mailboxId: input.mailboxId, keys, subjectKey, since: (input.receivedAt ?? now) - SUBJECT_THREAD_WINDOW_MS });
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
  /** When the message arrived (`receivedAt`, else now): the thread's latest activity. */
  at: number;
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
async function joinThread(trx: MailDb, input: StoreInput, add: ThreadAddition, rowLocks: boolean): Promise<{ threadId: string; keys: string[] }> {
  const { now, at, participants, labels, unread, snippet } = add;
  const resolved = await resolveThread(trx, input, now, participants);
  const { keys } = resolved;
  const current = resolved.threadId ? await lockThread(trx, input.workspaceId, resolved.threadId, rowLocks) : undefined;
  if (current) {
    const merged = [...new Set([...(JSON.parse(current.participants) as string[]), ...participants])].slice(0, MAX_PARTICIPANTS);
    const threadLabels = [...new Set([...(JSON.parse(current.labels) as string[]), ...labels])].sort();
    await addToThreadQuery(trx, {
      workspaceId: input.workspaceId,
      threadId: current.id,
      participants: JSON.stringify(merged),
      message_count: current.message_count + 1,
      unread_count: current.unread_count + unread,
      labels: JSON.stringify(threadLabels),
      // An older message joining (an import) leaves the thread showing its latest one.
      snippet: at >= current.last_message_at ? snippet : current.snippet,
      last_message_at: Math.max(current.last_message_at, at),
      updated_at: now,
    });
    return { threadId: current.id, keys };
  }
  const threadId = newId('thr');
  const { parsed } = input;
  await insertRows(trx, 'threads', [{
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
    last_message_at: at,
    created_at: at,
    updated_at: now,
  }]);
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
  return {
    /** Store one copy of a message in one mailbox, in the caller's transaction; returns the stored row (list-view columns). */
    async storeCopy(work: Work, input: StoreInput): Promise<StoredMessageRow> {
      const trx = mailDb(work);
      const now = clock.now();
      const { parsed } = input;
      const labels = [...new Set(input.labels ?? [])].sort();
      const unread = input.read ? 0 : 1;
      // The snippet is computed with the parse (mime.ts), outside this transaction, which other writers wait for.
      const addition: ThreadAddition = { now, at: input.receivedAt ?? now, participants: participantsOf(parsed), labels, unread, snippet: parsed.snippet };
      // The folder's counter first: it takes the message's UID (`uids` 1) and the new modseq, which the message
      // INSERT reads back. On PostgreSQL it is a deferred write that the thread lookup's statement carries, so it
      // costs no round trip of its own (decision 518); its row lock, held to the end, keeps UIDs in commit order.
      await bumpFolder(trx, input.workspaceId, input.mailboxId, input.folder, 1, unread, input.raw.length, 1);
      const { threadId, keys } = await joinThread(trx, input, addition, dialect.supportsRowLocks);
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
      await insertRows(trx, 'thread_refs', keys.map((message_key) => ({ workspace_id: input.workspaceId, mailbox_id: input.mailboxId, message_key, thread_id: threadId })), { ignoreConflicts: true });
      return { ...row, mailbox_address: input.mailboxAddress };
    },
  };
}
