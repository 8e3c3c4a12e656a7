/**
 * The full-text index and the queries that search it. A parsed query (search-query.ts) becomes one
 * statement: its text terms one full-text expression where they can be (search-text.ts), its column filters plain
 * conditions on `messages`, which its indexes serve. Every statement filters by workspace.
 */
import { sql, type Expression, type ExpressionBuilder, type SelectQueryBuilder, type SqlBool } from 'kysely';
import type { DialectInfo } from '../../db/dialect.js';
import type { Work } from '../../db/tables.js';
import { bodySource, FIELD_PREFIX, holdsPhrase, searchTokens, taggedDocument, workspaceTag, type SearchDocument } from '../../lib/mail-text.js';
import { SEARCH_TOTAL_CAP } from '../messages/message.types.js';
import { containsText, someTextTerm, type FilterNode, type SearchNode } from '../messages/search-query.js';
import { bound, DELIVERY_COLUMNS, filtered, mailDb, PAGE_COLUMNS, threadRows, type BoundFilter, type DeliveryColumns, type MailDb, type MessageFilter, type MessagePageRow, type ThreadIdQuery, type ThreadRow } from './message.store.js';
import { fts5Syntax, TSQUERY_SYNTAX, type TextSyntax } from './search-text.js';

/** The statement every search starts from: the workspace's messages with their mailbox and delivery state. */
type MessageQuery = ReturnType<typeof filtered>;
type Eb = MessageQuery extends SelectQueryBuilder<infer DB, infer TB, infer _O> ? ExpressionBuilder<DB, TB> : never;
type Cond = (eb: Eb) => Expression<SqlBool>;

/**
 * A query, compiled: results match `text` (a full-text expression), none of `without` (kept apart because FTS5 has
 * no NOT on its own), and every condition. All empty: every message matches.
 */
interface Compiled {
  text: string | null;
  without: string[];
  conds: Cond[];
}

const ALL: Compiled = { text: null, without: [], conds: [] };
const isAll = (c: Compiled): boolean => c.text === null && c.without.length === 0 && c.conds.length === 0;
const isText = (c: Compiled): boolean => c.text !== null && c.without.length === 0 && c.conds.length === 0;

/**
 * A column filter as a condition on the message row (Gmail's dates are the day the message arrived, UTC). With
 * `unindexedDates` a date compares `+created_at`, which SQLite cannot serve from an index (see `plan`).
 */
function filterCond(node: FilterNode, workspaceId: string, unindexedDates: boolean): Cond {
  const createdAt = (eb: Eb) => (unindexedDates ? sql<number>`+${eb.ref('messages.created_at')}` : eb.ref('messages.created_at'));
  switch (node.filter) {
    case 'folder':
      return (eb) => eb('messages.folder', '=', node.value);
    case 'read':
      return (eb) => eb('messages.read', '=', node.value ? 1 : 0);
    case 'label':
      return (eb) =>
        eb.exists(eb.selectFrom('message_labels').select(sql<number>`1`.as('one')).whereRef('message_labels.message_id', '=', 'messages.id').where('message_labels.label', '=', node.value));
    case 'from_address':
      return (eb) => eb('messages.from_address', '=', node.value);
    case 'mailbox':
      return (eb) => eb('messages.mailbox_id', 'in', eb.selectFrom('mailboxes').select('mailboxes.id').where('mailboxes.workspace_id', '=', workspaceId).where('mailboxes.address', '=', node.value));
    case 'after':
      return (eb) => eb(createdAt(eb), '>=', Date.parse(node.value));
    case 'before':
      return (eb) => eb(createdAt(eb), '<', Date.parse(node.value));
    default:
      return (eb) => eb('messages.attachments_json', '!=', '[]');
  }
}

class Compiler {
  constructor(
    private readonly syntax: TextSyntax,
    private readonly match: (expr: string) => Cond,
    private readonly workspaceId: string,
    private readonly unindexedDates = false,
  ) {}

  compile(node: SearchNode): Compiled {
    switch (node.kind) {
      case 'text':
      case 'phrase':
      case 'prefix': {
        const term = this.syntax.term(node);
        return term === null ? ALL : { text: term, without: [], conds: [] };
      }
      case 'filter':
        return { text: null, without: [], conds: [filterCond(node, this.workspaceId, this.unindexedDates)] };
      case 'not':
        return this.negate(this.compile(node.child));
      case 'and':
        return this.and(node.children.map((c) => this.compile(c)));
      default:
        return this.or(node.children.map((c) => this.compile(c)));
    }
  }

  /** The whole of `c` as one condition on the message row. */
  cond(c: Compiled): Cond {
    const conds = [...c.conds];
    const text = this.textOf(c);
    if (text !== null) conds.unshift(this.match(text));
    else if (c.without.length > 0) conds.unshift((eb) => eb.not(this.match(this.syntax.or(c.without))(eb)));
    return (eb) => (conds.length === 0 ? sql<SqlBool>`1 = 1` : eb.and(conds.map((f) => f(eb))));
  }

  /** `text` without `without`, as one full-text expression when the syntax can say it. */
  textOf(c: Compiled): string | null {
    if (c.without.length === 0) return c.text;
    return this.syntax.andNot(c.text, this.syntax.or(c.without));
  }

  private negate(c: Compiled): Compiled {
    if (isText(c)) return { text: null, without: [c.text!], conds: [] };
    if (isAll(c)) return { text: null, without: [], conds: [() => sql<SqlBool>`1 = 0`] };
    const inner = this.cond(c);
    return { text: null, without: [], conds: [(eb) => eb.not(inner(eb))] };
  }

  private and(parts: Compiled[]): Compiled {
    const texts = parts.flatMap((p) => (p.text === null ? [] : [p.text]));
    return {
      text: texts.length === 0 ? null : texts.length === 1 ? texts[0]! : this.syntax.and(texts),
      without: parts.flatMap((p) => p.without),
      conds: parts.flatMap((p) => p.conds),
    };
  }

  private or(parts: Compiled[]): Compiled {
    if (parts.some(isAll)) return ALL;
    if (parts.every(isText)) return { text: this.syntax.or(parts.map((p) => p.text!)), without: [], conds: [] };
    const conds = parts.map((p) => this.cond(p));
    return { text: null, without: [], conds: [(eb) => eb.or(conds.map((f) => f(eb)))] };
  }
}

/** SQLite: the messages whose FTS5 row matches, as a membership condition. */
const ftsMatch =
  (expr: string): Cond =>
  (eb) =>
    eb(
      'messages.id',
      'in',
      eb
        .selectFrom('message_fts_keys')
        .select('message_fts_keys.message_id')
        .where('message_fts_keys.id', 'in', eb.selectFrom('message_fts').select('message_fts.rowid').where(sql.table('message_fts'), 'match', expr)),
    );

/** PostgreSQL: the message's tsvector (the statement joins `message_contents`) matches. */
const tsMatch =
  (expr: string): Cond =>
  () =>
    sql<SqlBool>`${sql.ref('message_contents.search_document')} @@ cast(${expr} as tsquery)`;

/** The statement's rows and their order: from the index newest first (SQLite, positive text), or from `messages`. */
interface Plan {
  query: MessageQuery;
  order: (q: MessageQuery) => MessageQuery;
}

function plan(db: MailDb, dialect: DialectInfo, workspaceId: string, filter: BoundFilter, node: SearchNode): Plan {
  const fts = dialect.fullText === 'fts5';
  const ftsSyntax = fts ? fts5Syntax(workspaceTag(workspaceId)) : null;
  const compiler = new Compiler(ftsSyntax ?? TSQUERY_SYNTAX, fts ? ftsMatch : tsMatch, workspaceId);
  const compiled = compiler.compile(node);
  const query = filtered(db, workspaceId, filter);
  const newest = (q: MessageQuery) => q.orderBy('messages.created_at', 'desc').orderBy('messages.id', 'desc');
  const text = fts ? compiler.textOf(compiled) : null;
  if (!fts || text === null) {
    // PostgreSQL's conditions read the tsvector beside the bodies (joined only when there is text to match).
    const joined = fts || !containsText(node) ? query : (query.innerJoin('message_contents', 'message_contents.message_id', 'messages.id') as unknown as MessageQuery);
    return { query: joined.where(compiler.cond(compiled)), order: newest };
  }
  // A positive text expression drives the statement: FTS5 walks its matches newest first (keys are in arrival
  // order) and the statement stops at the page, where starting from `messages` would collect every match first.
  // Its dates are compared unindexed: given a range on `created_at`, SQLite walked that range of `messages` and ran
  // the whole MATCH once per message (seconds at 20,000 messages for `word after:…`), as FTS5 prices a MATCH
  // with a rowid as cheap.
  const driven = query
    .innerJoin('message_fts_keys', 'message_fts_keys.message_id', 'messages.id')
    .innerJoin('message_fts', 'message_fts.rowid', 'message_fts_keys.id')
    .where(sql.table('message_fts'), 'match', text) as unknown as MessageQuery;
  const unindexed = new Compiler(ftsSyntax!, ftsMatch, workspaceId, true);
  return { query: driven.where(unindexed.cond({ ...unindexed.compile(node), text: null, without: [] })), order: (q) => q.orderBy(sql.ref('message_fts.rowid'), 'desc') };
}

export type SearchPageRow = MessagePageRow & DeliveryColumns;

/** Where a folder's text search looks: every indexed field and the body, the body alone, or one field. */
export type FolderTextField = 'text' | 'body' | 'subject' | 'from' | 'to' | 'cc';

/** A folder of one mailbox (IMAP's selected mailbox). */
export interface FolderScope {
  workspaceId: string;
  mailboxId: string;
  folder: string;
}

/** Candidates whose body text PostgreSQL confirms per statement (BODY). */
const CONFIRM_BATCH = 100;

function folderMessages(db: MailDb, scope: FolderScope) {
  return db
    .selectFrom('messages')
    .select('messages.uid')
    .where('messages.workspace_id', '=', scope.workspaceId)
    .where('messages.mailbox_id', '=', scope.mailboxId)
    .where('messages.folder', '=', scope.folder);
}

/**
 * SQLite: the folder's UIDs whose FTS5 row matches. The matches drive (key, then message by id, then the folder's
 * test): with the folder's rows outside, SQLite walked every message of the folder and looked each up in the matches.
 */
async function folderFtsUids(db: MailDb, scope: FolderScope, field: FolderTextField, words: readonly string[]): Promise<number[]> {
  const tag = workspaceTag(scope.workspaceId);
  const phrase = `"${words.map((w) => tag + w).join(' ')}" *`;
  const expr = field === 'text' ? phrase : `{${field}} : ${phrase}`;
  const rows = await db
    .selectFrom('message_fts')
    .innerJoin('message_fts_keys', 'message_fts_keys.id', 'message_fts.rowid')
    .innerJoin('messages', 'messages.id', 'message_fts_keys.message_id')
    .select('messages.uid')
    .where(sql.table('message_fts'), 'match', expr)
    .where('message_fts_keys.workspace_id', '=', scope.workspaceId)
    .where('messages.workspace_id', '=', scope.workspaceId)
    .where('messages.mailbox_id', '=', scope.mailboxId)
    .where('messages.folder', '=', scope.folder)
    .orderBy('messages.uid')
    .execute();
  return rows.map((r) => Number(r.uid));
}

/**
 * PostgreSQL: the folder's UIDs whose tsvector matches. Its bare words are the fields' and the body's together, so
 * BODY's candidates are confirmed on the body text the index read (keyset batches: memory follows the batch).
 */
async function folderTsUids(db: MailDb, scope: FolderScope, field: FolderTextField, words: readonly string[]): Promise<number[]> {
  const prefix = field === 'text' || field === 'body' ? '' : FIELD_PREFIX[field];
  const expr = words.map((w, i) => `'${prefix}${w}'${i === words.length - 1 ? ':*' : ''}`).join(' <-> ');
  const matching = folderMessages(db, scope)
    .innerJoin('message_contents', (join) => join.onRef('message_contents.message_id', '=', 'messages.id').onRef('message_contents.workspace_id', '=', 'messages.workspace_id'))
    .where(sql<SqlBool>`${sql.ref('message_contents.search_document')} @@ cast(${expr} as tsquery)`)
    .orderBy('messages.uid');
  if (field !== 'body') return (await matching.execute()).map((r) => Number(r.uid));
  const out: number[] = [];
  for (let after = 0; ; ) {
    const rows = await matching.select(['message_contents.text_body', 'message_contents.html_body']).where('messages.uid', '>', after).limit(CONFIRM_BATCH).execute();
    for (const r of rows) if (holdsPhrase(searchTokens(bodySource(r.text_body, r.html_body)), words)) out.push(Number(r.uid));
    if (rows.length < CONFIRM_BATCH) return out;
    after = Number(rows[rows.length - 1]!.uid);
  }
}

/**
 * SQLite: the message's FTS5 row, keyed by a new key, its words behind the workspace's tag (so that a query's
 * prefixes walk only this workspace's words). PostgreSQL keeps its tsvector in `message_contents`.
 */
export async function indexFts(db: MailDb, workspaceId: string, messageId: string, doc: SearchDocument): Promise<void> {
  const key = await db.insertInto('message_fts_keys').values({ message_id: messageId, workspace_id: workspaceId }).returning('id').executeTakeFirstOrThrow();
  await db.insertInto('message_fts').values({ rowid: key.id, ...taggedDocument(doc, workspaceTag(workspaceId)) }).execute();
}

/**
 * The matches among the newest `window` (+1: whether there are more) messages the filters select, each tested on its
 * own: a lateral join whose LIMIT keeps PostgreSQL from pulling it up into a join that scans every document (a
 * generic plan did, 1.1 s at 200,000 messages against 65 ms).
 */
async function countNewest(db: MailDb, filters: BoundFilter, workspaceId: string, matching: MessageQuery, window: number): Promise<{ examined: number; n: number }> {
  const newest = filtered(db, workspaceId, filters).select('messages.id as newest_id').orderBy('messages.created_at', 'desc').orderBy('messages.id', 'desc').limit(sql.lit(window + 1));
  const row = await db
    .selectFrom(newest.as('newest'))
    .leftJoinLateral(
      () => matching.select(sql<number>`1`.as('one')).where('messages.id', '=', sql.ref<string>('newest.newest_id')).limit(sql.lit(1)).as('hit'),
      (join) => join.onTrue(),
    )
    .select((eb) => [eb.fn.countAll<number | string>().as('examined'), eb.fn.count<number | string>(sql.ref('hit.one')).as('n')])
    .executeTakeFirstOrThrow();
  return { examined: Number(row.examined), n: Number(row.n) };
}

/**
 * PostgreSQL: a query with words in a row (a phrase, an address) counts among the filters' newest PHRASE_COUNT_WINDOW
 * messages only. GIN keeps no positions, so the planner prices a phrase as all its words anywhere, and an exact count
 * checks documents one by one (~5 µs each): 1,001 matches of a phrase of two common words in 2 % of the mail were
 * ~40,000 documents, 0.3-0.5 s at any mailbox size. Asking the planner first (EXPLAIN) to spare rare words slowed the
 * searches after it by 15-25 ms on the bench (bench/HISTORY.md). The window's checks take ~25-50 ms.
 */
export const PHRASE_COUNT_WINDOW = 5000;

/** A search's page and its count up to SEARCH_TOTAL_CAP (+1: more); `partial`: counted among the newest only. */
export interface SearchPage {
  rows: SearchPageRow[];
  total: number;
  partial: boolean;
}

/** Words in a row: a phrase, or a term the index splits into several words (an address, `2024-11`). */
const inARow = (node: SearchNode): boolean => someTextTerm(node, (t) => searchTokens(t.value).length > 1);

/**
 * Searches: each runs on the handle it is given (the pool, a transaction with a time limit, or a reader thread's
 * own connection, see messages/search-runner.ts).
 */
export function createSearchStore({ dialect, phraseCountWindow = PHRASE_COUNT_WINDOW }: { dialect: DialectInfo; phraseCountWindow?: number }) {
  return {
    /**
     * A page of the messages that match, newest first, and their count. A page that ends before its limit ends the
     * matches, so it is its own count. On PostgreSQL a query with words in a row counts among the filters' newest
     * `phraseCountWindow` messages (`partial` when there are more).
     */
    async searchMessages(work: Work, workspaceId: string, filter: MessageFilter, node: SearchNode, limit: number, offset: number): Promise<SearchPage> {
      const db = mailDb(work);
      const filters = bound(filter);
      const { query, order } = plan(db, dialect, workspaceId, filters, node);
      const rows = (await order(query.select([...PAGE_COLUMNS, ...DELIVERY_COLUMNS])).limit(limit).offset(offset).execute()) as SearchPageRow[];
      if (rows.length < limit && (rows.length > 0 || offset === 0)) return { rows, total: offset + rows.length, partial: false };
      if (dialect.fullText === 'tsvector' && inARow(node)) {
        const { examined, n } = await countNewest(db, filters, workspaceId, query, phraseCountWindow);
        return { rows, total: n, partial: examined > phraseCountWindow };
      }
      const counted = await db
        .selectFrom(query.select(sql<number>`1`.as('one')).limit(SEARCH_TOTAL_CAP + 1).as('hits'))
        .select((eb) => eb.fn.countAll<number | string>().as('n'))
        .executeTakeFirstOrThrow();
      return { rows, total: Number(counted.n), partial: false };
    },

    /**
     * IMAP SEARCH's text keys: the UIDs of a folder's messages whose indexed words in `field` hold the words of
     * `value` in a row, the last as a prefix (`inv` finds `invoice`, `in 2024` finds `in 2024-11`), ascending; one
     * statement over the folder's rows and the index's matches. Null when `value` has no letter or digit: such a
     * string matches every message, as in the search API.
     */
    async folderTextUids(work: Work, scope: FolderScope, field: FolderTextField, value: string): Promise<number[] | null> {
      const words = searchTokens(value);
      if (words.length === 0) return null;
      const db = mailDb(work);
      return dialect.fullText === 'fts5' ? folderFtsUids(db, scope, field, words) : folderTsUids(db, scope, field, words);
    },

    /** A page of the threads with a message that matches, newest first, and their count. */
    searchThreads(work: Work, workspaceId: string, filter: { mailboxId?: string | undefined; label?: string | undefined }, node: SearchNode, limit: number, offset: number): Promise<{ rows: ThreadRow[]; total: number }> {
      const db = mailDb(work);
      const matching = plan(db, dialect, workspaceId, {}, node).query.select('messages.thread_id') as unknown as ThreadIdQuery;
      return threadRows(db, workspaceId, { ...filter, matching }, limit, offset);
    },
  };
}
