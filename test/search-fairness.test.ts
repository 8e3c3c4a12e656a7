import SQLite from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taggedDocument, workspaceTag } from '../src/lib/mail-text.js';
import { SEARCH_WAITING_PER_WORKSPACE } from '../src/modules/messages/search-runner.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';

const F_BOX = 'f@mailroom.localhost';
const G_BOX = 'g@mailroom.localhost';
/** What G searches for: sixteen one-letter prefixes, the costliest shape the query language allows per term. */
const EXPENSIVE = 'abcdefghiklmnopr'
  .split('')
  .map((c) => `${c}*`)
  .join(' OR ');
/** PostgreSQL: G's search also names a label, so that it waits while the test holds `message_labels` (see `stall`). */
const Q = TEST_DIALECT === 'sqlite' ? EXPENSIVE : `label:work (${EXPENSIVE})`;

/** Messages of G's own mail on SQLite: enough words that the search above holds its thread for a second or more. */
const G_MESSAGES = 15_000;
const WORDS_PER_MESSAGE = 200;

/** Made-up words of 3 to 9 letters (a seeded generator: every run builds the same corpus). */
function words(count: number, seed: number): string[] {
  let state = seed;
  const next = () => (state = (state * 48271) % 2147483647);
  const letters = 'abcdefghiklmnoprstuvz';
  return Array.from({ length: count }, () => Array.from({ length: 3 + (next() % 7) }, () => letters[next() % letters.length]).join(''));
}

/**
 * SQLite: G's mailbox grows to G_MESSAGES messages, each a copy of one G received through SMTP with words of its own
 * in the index. Written straight into the database file: sending them through SMTP would take minutes.
 */
function growSqliteCorpus(h: MailHarness, g: Tenant, templateId: string, messages: number): void {
  const db = new SQLite(h.database.url.slice('sqlite:'.length));
  try {
    db.pragma('busy_timeout = 10000');
    const columns = db
      .prepare('select name from pragma_table_info(?)')
      .pluck()
      .all('messages')
      .filter((c) => c !== 'id' && c !== 'internet_message_id' && c !== 'uid') as string[];
    const list = columns.join(', ');
    const vocabulary = words(40_000, 7);
    let seed = 11;
    const pickWord = () => vocabulary[(seed = (seed * 48271) % 2147483647) % vocabulary.length]!;
    const tag = workspaceTag(g.workspaceId);
    db.transaction(() => {
      // Each copy takes the folder's next UID, as a stored message does (UIDs are unique per folder).
      db.prepare(
        `with recursive n(i) as (select 1 union all select i + 1 from n where i < ?)
         insert into messages (id, uid, ${list})
         select 'bulk' || printf('%08d', i), f.uidnext + i - 1, ${list.replace(/(^|, )/g, '$1messages.')}
         from messages join folder_counts f on f.mailbox_id = messages.mailbox_id and f.folder = messages.folder, n where messages.id = ?`,
      ).run(messages, templateId);
      db.prepare(`update folder_counts set uidnext = uidnext + ? where (mailbox_id, folder) = (select mailbox_id, folder from messages where id = ?)`).run(messages, templateId);
      const keys = db.prepare(`insert into message_fts_keys (message_id, workspace_id) select id, workspace_id from messages where id like 'bulk%' returning id`).all() as Array<{ id: number }>;
      const index = db.prepare('insert into message_fts (rowid, subject, "from", "to", cc, filename, body) values (?, ?, ?, ?, ?, ?, ?)');
      for (const { id } of keys) {
        const body = Array.from({ length: WORDS_PER_MESSAGE }, pickWord).join(' ');
        const doc = taggedDocument({ subject: 'bulk', from: 'bulk sender test', to: 'g mailroom localhost', cc: '', filename: '', body }, tag);
        index.run(id, doc.subject, doc.from, doc.to, doc.cc, doc.filename, doc.body);
      }
    })();
  } finally {
    db.close();
  }
}

/**
 * What keeps G's search running while the test looks at the others. SQLite: its own large mailbox (the search
 * holds a reader thread for as long as it takes). PostgreSQL, where the same search takes milliseconds: the test
 * holds a lock on `message_labels`, which G's search reads and which nothing else here writes.
 */
interface Stall {
  start(): Promise<void>;
  /** Resolves once G's search is under way (PostgreSQL: waiting for the lock). */
  running(): Promise<void>;
  /** Whether a search statement is still running or waiting in the database (PostgreSQL). */
  waitingStatements(): Promise<number>;
  end(): Promise<void>;
}

function stallFor(h: MailHarness): Stall {
  if (TEST_DIALECT === 'sqlite') {
    const none = async () => undefined;
    return { start: none, running: () => new Promise((resolve) => setTimeout(resolve, 50)), waitingStatements: async () => 0, end: none };
  }
  let holder: pg.Client | null = null;
  const waiting = async () => {
    const watcher = new pg.Client({ connectionString: h.database.url });
    await watcher.connect();
    try {
      const { rows } = await watcher.query<{ n: string }>(`select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like '%message_labels%'`);
      return Number(rows[0]!.n);
    } finally {
      await watcher.end();
    }
  };
  return {
    async start() {
      holder = new pg.Client({ connectionString: h.database.url });
      await holder.connect();
      await holder.query('begin');
      await holder.query('lock table message_labels in access exclusive mode');
    },
    async running() {
      for (let i = 0; i < 200 && (await waiting()) === 0; i++) await new Promise((resolve) => setTimeout(resolve, 25));
    },
    waitingStatements: waiting,
    async end() {
      await holder?.query('rollback');
      await holder?.end();
      holder = null;
    },
  };
}

interface Setup {
  h: MailHarness;
  url: string;
  f: Tenant;
  g: Tenant;
  stall: Stall;
}

async function setUp(env: Record<string, string>, messages = G_MESSAGES): Promise<Setup> {
  const h = await startMailHarness(env);
  const f = await createTenant(h, 'F');
  const g = await createTenant(h, 'G');
  for (const [tenant, address] of [[f, F_BOX], [g, G_BOX]] as const) {
    const res = await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(tenant.apiKey), payload: { address } });
    expect(res.statusCode).toBe(201);
  }
  const sent = await h.send({ from: 'ann@sender.test', to: G_BOX, subject: 'Work plan', text: 'the plan for monday' });
  const templateId = /Stored as (.+)$/.exec(sent.response)![1]!;
  if (TEST_DIALECT === 'sqlite') growSqliteCorpus(h, g, templateId, messages);
  const url = await h.app.listen({ host: '127.0.0.1', port: 0 });
  return { h, url, f, g, stall: stallFor(h) };
}

const search = (s: Setup, tenant: Tenant, q: string): Promise<Response> => fetch(`${s.url}/inbox?q=${encodeURIComponent(q)}`, { headers: bearer(tenant.apiKey) });

/**
 * Search is a read whose cost the caller chooses. One workspace's searches must not stall the event loop that
 * answers every other workspace (SMTP, /health), must not hold every slot, and must not run without end.
 */
describe(`search beside the other tenants (${TEST_DIALECT})`, () => {
  let s: Setup;

  beforeAll(async () => {
    // Two reader threads: G may hold one (its share), F still finds the other.
    s = await setUp({ MAILROOM_SEARCH_TIMEOUT_MS: '120000', MAILROOM_SEARCH_THREADS: '2', MAILROOM_SEARCH_CONCURRENCY: '2', MAILROOM_SEARCH_CONCURRENCY_PER_WORKSPACE: '1' });
    // The reader threads start with the first search: started here, so that what follows times only searches.
    expect((await search(s, s.f, 'plan')).status).toBe(200);
  }, 180_000);

  afterAll(async () => {
    await s?.stall.end();
    await s?.h.close();
  });

  it("answers F's /health and takes F's mail while G's expensive search runs", async () => {
    const order: string[] = [];
    await s.stall.start();
    const expensive = search(s, s.g, Q).then(async (res) => {
      order.push('G search');
      return res;
    });
    await s.stall.running();
    const health = fetch(`${s.url}/health`).then((res) => {
      order.push('F health');
      return res.status;
    });
    const mail = s.h.send({ from: 'bob@sender.test', to: F_BOX, subject: 'Hello F', text: 'plain mail' }).then((info) => {
      order.push('F mail');
      return info.response;
    });
    expect(await health).toBe(200);
    expect(await mail).toMatch(/^250 /);
    await s.stall.end();
    expect((await expensive).status).toBe(200);
    expect(order.indexOf('G search')).toBe(2);
  }, 120_000);

  it("refuses G's searches past its share and its waiting room with 429 search_busy, while F's search is answered", async () => {
    await s.stall.start();
    const burst = Array.from({ length: 1 + SEARCH_WAITING_PER_WORKSPACE + 2 }, () => search(s, s.g, Q));
    await s.stall.running();
    expect((await search(s, s.f, 'plan')).status).toBe(200);
    await s.stall.end();
    const answers = await Promise.all(burst);
    const refused = answers.filter((res) => res.status === 429);
    expect(refused.length).toBeGreaterThanOrEqual(2);
    expect(answers.filter((res) => res.status === 200).length).toBe(1 + SEARCH_WAITING_PER_WORKSPACE);
    for (const res of refused) {
      expect(res.headers.get('retry-after')).toBe('1');
      expect(((await res.json()) as { error: string }).error).toBe('search_busy');
    }
  }, 180_000);

  it("keeps every search's answer in its own workspace", async () => {
    const theirs = (await (await search(s, s.f, 'plan OR work OR monday')).json()) as { messages: unknown[]; total: number };
    expect(theirs.total).toBe(0);
    const ours = (await (await search(s, s.g, 'monday')).json()) as { total: number };
    expect(ours.total).toBeGreaterThan(0);
  }, 60_000);
});

describe(`a search past its time budget (${TEST_DIALECT})`, () => {
  let s: Setup;

  beforeAll(async () => {
    // A fifth of the corpus still takes many times the budget.
    s = await setUp({ MAILROOM_SEARCH_TIMEOUT_MS: TEST_DIALECT === 'sqlite' ? '100' : '300' }, G_MESSAGES / 5);
    // The first search starts the reader threads (which may take longer than the budget itself).
    await search(s, s.f, 'plan');
  }, 180_000);

  afterAll(async () => {
    await s?.stall.end();
    await s?.h.close();
  });

  it('answers 503 search_timeout with Retry-After, and the database stops the statement (PostgreSQL)', async () => {
    await s.stall.start();
    const res = await search(s, s.g, Q);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    const body = (await res.json()) as { error: string; detail: string };
    expect(body.error).toBe('search_timeout');
    expect(body.detail).toMatch(/did not finish within/);
    // statement_timeout cancelled the statement while the lock is still held: nothing is left waiting for it.
    let waiting = await s.stall.waitingStatements();
    for (let i = 0; i < 100 && waiting > 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      waiting = await s.stall.waitingStatements();
    }
    expect(waiting).toBe(0);
    await s.stall.end();
  }, 120_000);
});
