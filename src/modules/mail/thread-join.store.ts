/**
 * The threads new messages join (copy.store.ts), for one message or a batch of one workspace's, with the same rule:
 * a reference (References/In-Reply-To, or a reply that arrived first naming the message's own Message-ID) wins;
 * otherwise the most recent thread of the mailbox with the normalised subject that shares a participant; otherwise
 * a new thread.
 *
 * A batch reads every message's candidates in one statement and locks the existing threads it will join in one
 * more, in id order, before its first write; then each message is resolved in turn against what was read plus what
 * the batch's earlier messages did (`ThreadBook`), so a later message joins an earlier one's thread exactly as it
 * would if each were stored alone. The book holds, per subject, the top of the database's list plus every thread the
 * batch touched: the only rows the batch changes are those, and a thread's latest activity only rises, so the
 * book's top candidates are the database's. A thread the plan did not foresee (one deleted meanwhile, and what
 * follows from that) is read and locked when it is met, as a lone message's always is.
 */
import { sql } from 'kysely';
import { insertRows, preparedQuery, preparedWrite } from '../../db/prepared.js';
import { newId } from '../../lib/ids.js';
import { chunksOf } from '../../lib/size-chunks.js';
import type { ParsedMessage } from '../messages/mime.js';
import type { MailTables } from './mail.table.js';
import type { ThreadTable } from './message.table.js';
import { lockThread, lockThreads, type MailDb } from './message.store.js';
import { normalizeSubject, shareParticipant, SUBJECT_THREAD_WINDOW_MS } from './threading.js';

/** Largest participants list kept on a thread. */
const MAX_PARTICIPANTS = 100;
/** Recent threads with a subject that a new message compares participants with. */
const SUBJECT_CANDIDATES = 20;

/** A row the candidates' read returns: a reference (`message_key` set) or a recent thread with the subject (`participants` set). */
interface CandidateRow {
  thread_id: string;
  mailbox_id: string;
  message_key: string | null;
  subject_key: string | null;
  participants: string | null;
  last_message_at: number | null;
}
type LoneCandidateRow = Omit<CandidateRow, 'mailbox_id' | 'subject_key'>;

// Both ways one new message finds its thread in one statement (prepared: it runs for every stored message). The
// subject part is wasted when a reference hits, but it is an index lookup, and a second round trip costs more.
const threadCandidatesQuery = preparedQuery<{ workspaceId: string; mailboxId: string; keys?: readonly string[] | undefined; subjectKey?: string | undefined; since: number }, LoneCandidateRow, MailTables>((db, p) => {
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
    .limit(SUBJECT_CANDIDATES);
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

/** What a message looks its thread up by, and what it adds to it. */
export interface ThreadPlan {
  mailboxId: string;
  subject: string;
  subjectKey: string;
  /** The message keys it references (In-Reply-To first, then References). */
  refKeys: string[];
  /** `refKeys` and its own Message-ID: recorded for its thread. */
  keys: string[];
  /** Subject threading looks at threads active since then. */
  since: number;
  /** When the message arrived: the thread's latest activity. */
  at: number;
  participants: string[];
  labels: string[];
  unread: number;
  snippet: string;
}

export function threadPlanOf(input: { mailboxId: string; parsed: ParsedMessage; labels: string[]; unread: number; at: number }): ThreadPlan {
  const { parsed } = input;
  const refKeys = [...new Set([...(parsed.inReplyTo ? [parsed.inReplyTo] : []), ...parsed.references])];
  const keys = [...new Set([...refKeys, ...(parsed.messageId ? [parsed.messageId] : [])])];
  const participants = [...new Set([parsed.from, ...parsed.to, ...parsed.cc].flatMap((a) => (a ? [a.address] : [])))];
  return {
    mailboxId: input.mailboxId,
    subject: parsed.subject,
    subjectKey: normalizeSubject(parsed.subject),
    refKeys,
    keys,
    since: input.at - SUBJECT_THREAD_WINDOW_MS,
    at: input.at,
    participants,
    labels: input.labels,
    unread: input.unread,
    snippet: parsed.snippet,
  };
}

/** What the book knows of a thread: enough to compare a new message's subject and participants with. */
interface BookThread {
  id: string;
  participants: string[];
  lastMessageAt: number;
}

const keyOf = (mailboxId: string, key: string) => `${mailboxId}\u0000${key}`;

/** The references and subject candidates a batch resolves its threads against (see the top of this file). */
class ThreadBook {
  private readonly refs = new Map<string, string>();
  private readonly threads = new Map<string, BookThread>();
  private readonly bySubject = new Map<string, Set<string>>();

  static of(rows: readonly CandidateRow[]): ThreadBook {
    const book = new ThreadBook();
    for (const row of rows) {
      if (row.message_key !== null) {
        // Read order decides between two references only when they name different threads, as a lone read's does.
        if (!book.refs.has(keyOf(row.mailbox_id, row.message_key))) book.refs.set(keyOf(row.mailbox_id, row.message_key), row.thread_id);
      } else if (row.participants !== null && row.subject_key !== null) {
        book.add(row.mailbox_id, row.subject_key, { id: row.thread_id, participants: JSON.parse(row.participants) as string[], lastMessageAt: row.last_message_at ?? 0 });
      }
    }
    return book;
  }

  copy(): ThreadBook {
    const book = new ThreadBook();
    for (const [key, id] of this.refs) book.refs.set(key, id);
    for (const [id, thread] of this.threads) book.threads.set(id, { ...thread });
    for (const [key, ids] of this.bySubject) book.bySubject.set(key, new Set(ids));
    return book;
  }

  /** The thread `plan`'s message joins, or null for a new one. */
  resolve(plan: ThreadPlan): string | null {
    const hits = plan.keys.flatMap((key) => {
      const id = this.refs.get(keyOf(plan.mailboxId, key));
      return id === undefined ? [] : [{ key, id }];
    });
    // A reference to an earlier message wins; a match on its own id means a reply arrived first.
    const byRef = hits.find((h) => plan.refKeys.includes(h.key)) ?? hits[0];
    if (byRef) return byRef.id;
    if (plan.subjectKey === '') return null;
    const recent = [...(this.bySubject.get(keyOf(plan.mailboxId, plan.subjectKey)) ?? [])]
      .map((id) => this.threads.get(id)!)
      .filter((t) => t.lastMessageAt >= plan.since)
      .sort((a, b) => b.lastMessageAt - a.lastMessageAt)
      .slice(0, SUBJECT_CANDIDATES);
    return recent.find((t) => shareParticipant(t.participants, plan.participants))?.id ?? null;
  }

  /** `plan`'s message is in thread `row` now (as written): its keys name the thread unless they named one already. */
  record(plan: ThreadPlan, row: Pick<ThreadTable, 'id' | 'mailbox_id' | 'subject_key' | 'participants' | 'last_message_at'>): void {
    this.add(row.mailbox_id, row.subject_key, { id: row.id, participants: JSON.parse(row.participants) as string[], lastMessageAt: row.last_message_at });
    for (const key of plan.keys) if (!this.refs.has(keyOf(plan.mailboxId, key))) this.refs.set(keyOf(plan.mailboxId, key), row.id);
  }

  /**
   * The dry run of a join: resolves `plan` and notes what joining does to the book (a new thread under `newId`);
   * returns the thread joined. A thread known only by a reference is not a subject candidate here (its subject
   * is unknown until it is read), so the dry run may miss a join that the real one then locks when it meets it.
   */
  rehearse(plan: ThreadPlan, newId: string): string | null {
    const id = this.resolve(plan);
    const known = id === null ? undefined : this.threads.get(id);
    if (known) {
      known.participants = [...new Set([...known.participants, ...plan.participants])].slice(0, MAX_PARTICIPANTS);
      known.lastMessageAt = Math.max(known.lastMessageAt, plan.at);
    } else if (id === null) {
      this.add(plan.mailboxId, plan.subjectKey, { id: newId, participants: plan.participants.slice(0, MAX_PARTICIPANTS), lastMessageAt: plan.at });
    }
    for (const key of plan.keys) if (!this.refs.has(keyOf(plan.mailboxId, key))) this.refs.set(keyOf(plan.mailboxId, key), id ?? newId);
    return id;
  }

  /** A thread that is gone: its references went with it (ON DELETE CASCADE). */
  forget(id: string): void {
    this.threads.delete(id);
    for (const [key, ref] of this.refs) if (ref === id) this.refs.delete(key);
    for (const ids of this.bySubject.values()) ids.delete(id);
  }

  private add(mailboxId: string, subjectKey: string, thread: BookThread): void {
    this.threads.set(thread.id, thread);
    const key = keyOf(mailboxId, subjectKey);
    const ids = this.bySubject.get(key) ?? new Set<string>();
    ids.add(thread.id);
    this.bySubject.set(key, ids);
  }
}

/**
 * Message keys looked up in one part of the batch's read. With a longer list PostgreSQL may plan a scan of the whole
 * mailbox's references, filtered by the list (it did, 23 ms for 100 keys against 10,500 references before the table's
 * statistics caught up); ten keep the lookup on both columns of the key, as a single message's is.
 */
const REF_KEYS_PER_PART = 10;

/** Every plan's candidates in one statement (one plan: the prepared lone statement); none when there is nothing to look up. */
async function readCandidates(db: MailDb, workspaceId: string, plans: readonly ThreadPlan[]): Promise<CandidateRow[]> {
  if (plans.length === 1) {
    const { mailboxId, keys, subjectKey, since } = plans[0]!;
    if (keys.length === 0 && subjectKey === '') return [];
    const rows = await threadCandidatesQuery(db, { workspaceId, mailboxId, keys: keys.length > 0 ? keys : undefined, subjectKey: subjectKey === '' ? undefined : subjectKey, since });
    return rows.map((row) => ({ ...row, mailbox_id: mailboxId, subject_key: row.message_key === null ? subjectKey : null }));
  }
  const keysByMailbox = new Map<string, Set<string>>();
  const subjects = new Map<string, { mailboxId: string; subjectKey: string; since: number }>();
  for (const plan of plans) {
    const keys = keysByMailbox.get(plan.mailboxId) ?? new Set<string>();
    for (const key of plan.keys) keys.add(key);
    keysByMailbox.set(plan.mailboxId, keys);
    if (plan.subjectKey === '') continue;
    const seen = subjects.get(keyOf(plan.mailboxId, plan.subjectKey));
    // The earliest `since` of the subject's messages: the top of the list is the same whatever the bound.
    if (!seen || plan.since < seen.since) subjects.set(keyOf(plan.mailboxId, plan.subjectKey), { mailboxId: plan.mailboxId, subjectKey: plan.subjectKey, since: plan.since });
  }
  const byRef = [...keysByMailbox].flatMap(([mailboxId, keys]) =>
    chunksOf([...keys], REF_KEYS_PER_PART).map((part) =>
          db
            .selectFrom('thread_refs')
            // Typed nulls: PostgreSQL reads an untyped null in a derived table as text, which a UNION cannot match with bigint.
            .select((eb) => [
              'thread_id',
              'mailbox_id',
              eb.ref('message_key').$castTo<string | null>().as('message_key'),
              eb.cast<string | null>(eb.lit(null), 'text').as('subject_key'),
              eb.cast<string | null>(eb.lit(null), 'text').as('participants'),
              eb.cast<number | null>(eb.lit(null), 'bigint').as('last_message_at'),
            ])
            .where('workspace_id', '=', workspaceId)
            .where('mailbox_id', '=', mailboxId)
            .where('message_key', 'in', part)
            .$castTo<CandidateRow>(),
    ),
  );
  const bySubject = [...subjects.values()].map(({ mailboxId, subjectKey, since }) => {
    const recent = db
      .selectFrom('threads')
      .select(['id', 'mailbox_id', 'subject_key', 'participants', 'last_message_at'])
      .where('workspace_id', '=', workspaceId)
      .where('mailbox_id', '=', mailboxId)
      .where('subject_key', '=', subjectKey)
      .where('last_message_at', '>=', since)
      .orderBy('last_message_at', 'desc')
      .limit(SUBJECT_CANDIDATES);
    return db
      .selectFrom(recent.as('s'))
      .select((eb) => ['s.id as thread_id', 's.mailbox_id', eb.cast<string | null>(eb.lit(null), 'text').as('message_key'), 's.subject_key', 's.participants', 's.last_message_at'])
      .$castTo<CandidateRow>();
  });
  // Each part as a derived table of one row type, so that they chain as one UNION ALL.
  const [first, ...rest] = [...byRef, ...bySubject].map((part) => db.selectFrom(part.as('c')).selectAll());
  if (!first) return [];
  return rest.reduce((all, part) => all.unionAll(part), first).execute();
}

/**
 * Puts new messages into their threads, in the caller's transaction: `open` reads and locks for all of them, then
 * `join` once a message, in order, then `write`. `rowLocks` (PostgreSQL): the joined threads stay locked until the
 * transaction ends, so concurrent deliveries into one thread do not lose each other's counts.
 */
export class ThreadJoiner {
  /** Threads the joins made, and every thread they changed (made or joined), not yet written. */
  private readonly created = new Set<string>();
  private readonly changed = new Set<string>();

  private constructor(
    private readonly workspaceId: string,
    private readonly book: ThreadBook,
    /** Every thread the batch has locked or written, as it stands in this transaction. */
    private readonly current: Map<string, ThreadTable>,
    private readonly rowLocks: boolean,
  ) {}

  static async open(db: MailDb, workspaceId: string, plans: readonly ThreadPlan[], rowLocks: boolean): Promise<ThreadJoiner> {
    const book = ThreadBook.of(await readCandidates(db, workspaceId, plans));
    // The existing threads the batch will join, found by a dry run of the same resolution on a copy of the book.
    const dry = book.copy();
    const joined = new Set<string>();
    plans.forEach((plan, i) => {
      const id = dry.rehearse(plan, `new:${i}`);
      if (id !== null && !id.startsWith('new:')) joined.add(id);
    });
    const locked = await lockThreads(db, workspaceId, [...joined], rowLocks);
    const current = new Map(locked.map((row) => [row.id, row]));
    for (const id of joined) if (!current.has(id)) book.forget(id);
    return new ThreadJoiner(workspaceId, book, current, rowLocks);
  }

  /**
   * Put the message of `plan` into its thread (counted up) or a new one; returns the thread's id. Nothing is written
   * until `write`: a thread the batch joins many times is written once, as it ends.
   */
  async join(db: MailDb, plan: ThreadPlan, now: number): Promise<string> {
    const current = await this.thread(db, this.book.resolve(plan));
    if (current) {
      return this.keep(plan, {
        ...current,
        participants: JSON.stringify([...new Set([...(JSON.parse(current.participants) as string[]), ...plan.participants])].slice(0, MAX_PARTICIPANTS)),
        message_count: current.message_count + 1,
        unread_count: current.unread_count + plan.unread,
        labels: JSON.stringify([...new Set([...(JSON.parse(current.labels) as string[]), ...plan.labels])].sort()),
        // An older message joining (an import) leaves the thread showing its latest one.
        snippet: plan.at >= current.last_message_at ? plan.snippet : current.snippet,
        last_message_at: Math.max(current.last_message_at, plan.at),
        updated_at: now,
      });
    }
    const created: ThreadTable = {
      id: newId('thr'),
      workspace_id: this.workspaceId,
      mailbox_id: plan.mailboxId,
      subject: plan.subject,
      subject_key: plan.subjectKey,
      participants: JSON.stringify(plan.participants.slice(0, MAX_PARTICIPANTS)),
      message_count: 1,
      unread_count: plan.unread,
      labels: JSON.stringify(plan.labels),
      snippet: plan.snippet,
      last_message_at: plan.at,
      created_at: plan.at,
      updated_at: now,
    };
    this.created.add(created.id);
    return this.keep(plan, created);
  }

  /** Write what the joins did: the new threads in one statement, each joined one's new state. */
  async write(db: MailDb): Promise<void> {
    await insertRows(db, 'threads', [...this.created].map((id) => this.current.get(id)!));
    for (const id of this.changed) {
      if (this.created.has(id)) continue;
      const { participants, message_count, unread_count, labels, snippet, last_message_at, updated_at } = this.current.get(id)!;
      await addToThreadQuery(db, { workspaceId: this.workspaceId, threadId: id, participants, message_count, unread_count, labels, snippet, last_message_at, updated_at });
    }
    this.created.clear();
    this.changed.clear();
  }

  /** The thread `id` as it stands, locked; one not locked yet is locked now; undefined for none or one that is gone. */
  private async thread(db: MailDb, id: string | null): Promise<ThreadTable | undefined> {
    if (id === null) return undefined;
    const known = this.current.get(id);
    if (known) return known;
    const row = await lockThread(db, this.workspaceId, id, this.rowLocks);
    if (row) this.current.set(id, row);
    else this.book.forget(id);
    return row;
  }

  private keep(plan: ThreadPlan, row: ThreadTable): string {
    this.current.set(row.id, row);
    this.changed.add(row.id);
    this.book.record(plan, row);
    return row.id;
  }
}
