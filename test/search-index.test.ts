import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import type Mail from 'nodemailer/lib/mailer/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMigrator } from '../src/db/migrator.js';
import { workspaceTag } from '../src/lib/mail-text.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, errorOf, login, session, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';

interface Page {
  messages: Array<{ message_id: string; subject: string; thread_id: string }>;
  total: number;
  total_capped?: boolean;
}

const ALPHA = 'alpha@mailroom.localhost';
const BETA = 'beta@mailroom.localhost';
const FOREIGN = 'foreign@mailroom.localhost';
const day = (d: number) => Date.UTC(2026, 10, d, 12, 0, 0);

/**
 * The full-text index and the search endpoints, through real SMTP: every operator of the
 * query language against a small corpus whose expected answers are written out by hand, then deletes, moves and a
 * mailbox cascade, which must keep the index true, and another workspace's mail, which must never show.
 */
describe(`search (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let acme: Tenant;
  let other: Tenant;
  let token: string;
  const ids: Record<string, string> = {};

  const get = (url: string, headers: Record<string, string>): Promise<LightMyRequestResponse> => h.app.inject({ method: 'GET', url, headers });
  const post = (url: string, payload: object) => h.app.inject({ method: 'POST', url, headers: bearer(acme.apiKey), payload });
  /** The names of the messages a session search finds, in the order of the answer. */
  const found = async (q: string, extra = ''): Promise<string[]> => {
    const res = await get(`/app/api/messages?q=${encodeURIComponent(q)}${extra}`, session(token));
    expect(res.statusCode, `${q}: ${res.body}`).toBe(200);
    const page = res.json<Page>();
    expect(page.total, q).toBe(page.messages.length);
    expect(page.total_capped).toBe(false);
    const names = Object.fromEntries(Object.entries(ids).map(([name, id]) => [id, name]));
    return page.messages.map((m) => names[m.message_id] ?? `unknown ${m.subject}`);
  };

  const deliver = async (name: string, at: number, message: Mail.Options): Promise<void> => {
    h.clock.set(at);
    const info = await h.send(message);
    ids[name] = /Stored as (.+)$/.exec(info.response)![1]!;
  };

  beforeAll(async () => {
    h = await startMailHarness();
    acme = await createTenant(h, 'Acme');
    other = await createTenant(h, 'Other');
    token = await login(h, acme.ownerEmail, acme.password);
    for (const address of [ALPHA, BETA]) expect((await post('/mailboxes', { address })).statusCode).toBe(201);
    const foreign = await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(other.apiKey), payload: { address: FOREIGN } });
    expect(foreign.statusCode).toBe(201);

    await deliver('report', day(1), {
      from: 'Zoë Müller <zoe@sender.test>',
      to: ALPHA,
      subject: 'Quarterly report 2026',
      text: 'Please find the quarterly report attached. Invoice INV-2024-17 is overdue.',
      attachments: [{ filename: 'report-q3.pdf', content: Buffer.from('%PDF-1.4 fake'), contentType: 'application/pdf' }],
    });
    await deliver('lunch', day(2), {
      from: 'Bob <bob@example.org>',
      to: ALPHA,
      cc: 'Carol <carol@example.net>',
      subject: 'Lunch tomorrow?',
      html: '<style>.invoice { color: red }</style><p>Shall we meet at the <b>café</b>?</p>',
    });
    await deliver('reply', day(3), { from: 'alice@sender.test', to: BETA, subject: 'Re: Quarterly report 2026', text: 'The report looks fine. Invoicing starts Monday.' });
    await deliver('cruise', day(4), { from: 'win@spam.test', to: ALPHA, subject: 'Win a free cruise', text: 'Click now' });
    h.clock.set(day(5));
    const theirs = await h.send({ from: 'x@sender.test', to: FOREIGN, subject: 'Quarterly report', text: 'invoice report quarterly' });
    ids.foreign = /Stored as (.+)$/.exec(theirs.response)![1]!;

    expect((await post(`/messages/${ids.reply}/labels`, { add: ['billing'] })).statusCode).toBe(200);
    expect((await post(`/messages/${ids.reply}/read`, {})).statusCode).toBe(200);
    expect((await post(`/messages/${ids.cruise}/spam`, {})).statusCode).toBe(200);
  }, 60_000);

  afterAll(async () => {
    await h?.close();
  });

  // Each row: a query and the messages it finds, newest first.
  const cases: Array<[string, string[]]> = [
    ['quarterly', ['reply', 'report']],
    ['QUARTERLY', ['reply', 'report']],
    ['"quarterly report"', ['reply', 'report']],
    ['"report quarterly"', []],
    ['invoice', ['report']],
    ['invo*', ['reply', 'report']],
    ['inv-2024-17', ['report']],
    ['"INV 2024"', ['report']],
    ['from:zoe', ['report']],
    ['from:muller', ['report']],
    ['from:müller', ['report']],
    ['from:sender.test', ['reply', 'report']],
    ['from:zoe@sender.test', ['report']],
    ['from:ali*', ['reply']],
    ['to:beta', ['reply']],
    ['to:carol', []],
    ['cc:carol', ['lunch']],
    ['cc:"carol example"', ['lunch']],
    ['cc:"example carol"', []],
    ['subject:lunch', ['lunch']],
    ['subject:invoice', []],
    ['subject:"re quarterly"', ['reply']],
    ['cafe', ['lunch']],
    ['café', ['lunch']],
    ['color', []],
    ['filename:report', ['report']],
    ['filename:pdf', ['report']],
    ['filename:invoice', []],
    ['has:attachment', ['report']],
    ['is:read', ['reply']],
    ['is:unread quarterly', ['report']],
    ['label:billing', ['reply']],
    ['label:billing invoice', []],
    ['in:spam', ['cruise']],
    ['in:inbox', ['reply', 'lunch', 'report']],
    ['-in:spam cruise', []],
    [`mailbox:${BETA}`, ['reply']],
    [`mailbox:${BETA.toUpperCase()}`, ['reply']],
    ['after:2026-11-02 before:2026-11-03', ['lunch']],
    ['after:2026/11/3', ['cruise', 'reply']],
    ['before:2026-11-02', ['report']],
    ['-quarterly', ['cruise', 'lunch']],
    ['quarterly -invoice', ['reply']],
    ['-invoice -cruise', ['reply', 'lunch']],
    ['quarterly OR lunch', ['reply', 'lunch', 'report']],
    ['(from:bob OR label:billing) -cruise', ['reply', 'lunch']],
    ['-(quarterly OR lunch)', ['cruise']],
    ['lunch OR in:spam', ['cruise', 'lunch']],
    ['quarterly -label:billing', ['report']],
    ['-from:zoe report', ['reply']],
    ['nothing-like-this', []],
    ['!!!', ['cruise', 'reply', 'lunch', 'report']],
  ];

  it.each(cases)('%s', async (q, expected) => {
    expect(await found(q)).toEqual(expected);
  });

  it('combines q with the list filters, and /inbox searches every folder unless given one', async () => {
    expect(await found('quarterly', `&mailbox=${ALPHA}`)).toEqual(['report']);
    expect(await found('quarterly', '&label=billing')).toEqual(['reply']);
    expect(await found('quarterly', '&unread=true')).toEqual(['report']);
    const inbox = await get(`/inbox?q=cruise`, bearer(acme.apiKey));
    expect(inbox.json<Page>().messages.map((m) => m.message_id)).toEqual([ids.cruise]);
    const inInbox = await get(`/inbox?q=cruise&folder=inbox`, bearer(acme.apiKey));
    expect(inInbox.json<Page>().messages).toEqual([]);
  });

  it('pages a search like any list', async () => {
    const res = await get(`/app/api/messages?q=quarterly&limit=1&offset=1`, session(token));
    const page = res.json<Page & { limit: number; offset: number }>();
    expect(page).toMatchObject({ total: 2, limit: 1, offset: 1, total_capped: false });
    expect(page.messages.map((m) => m.message_id)).toEqual([ids.report]);
  });

  it('finds threads with a matching message, on both surfaces', async () => {
    const threadOf = async (name: string) => (await get(`/messages/${ids[name]}`, bearer(acme.apiKey))).json<{ thread_id: string }>().thread_id;
    const res = await get(`/app/api/threads?q=${encodeURIComponent('from:bob')}`, session(token));
    expect(res.json<{ threads: Array<{ thread_id: string }>; total: number }>()).toMatchObject({ total: 1, threads: [{ thread_id: await threadOf('lunch') }] });
    const byKey = await get(`/threads?q=quarterly&mailbox=${BETA}`, bearer(acme.apiKey));
    expect(byKey.json<{ threads: Array<{ thread_id: string }> }>().threads.map((t) => t.thread_id)).toEqual([await threadOf('reply')]);
  });

  it("never shows another workspace's mail, and theirs never shows ours", async () => {
    expect(await found('quarterly OR invoice OR report')).not.toContain('foreign');
    const theirs = await get(`/inbox?q=quarterly`, bearer(other.apiKey));
    expect(theirs.json<Page>().messages.map((m) => m.message_id)).toEqual([ids.foreign]);
    const threads = await get(`/threads?q=quarterly`, bearer(other.apiKey));
    expect(threads.json<{ total: number }>().total).toBe(1);
  });

  it('takes from: with a whole address as the sender, compared whole and without case', async () => {
    const sent: Record<string, string> = {};
    for (const [name, from] of [['exact', 'Alice <Alice@Sender.Test>'], ['longer', 'bob.alice@sender.test'], ['spoof', '"alice@sender.test" <mallory@spam.test>']] as const) {
      const info = await h.send({ from, to: FOREIGN, subject: `Sender ${name}`, text: 'who sent this' });
      sent[/Stored as (.+)$/.exec(info.response)![1]!] = name;
    }
    const theirs = async (q: string): Promise<string[]> => {
      const res = await get(`/inbox?q=${encodeURIComponent(q)}`, bearer(other.apiKey));
      expect(res.statusCode, `${q}: ${res.body}`).toBe(200);
      return res.json<Page>().messages.map((m) => sent[m.message_id] ?? m.subject).sort();
    };
    expect(await theirs('from:alice@sender.test')).toEqual(['exact']);
    expect(await theirs('FROM:ALICE@sender.TEST')).toEqual(['exact']);
    expect(await theirs('from:"alice@sender.test" who')).toEqual(['exact']);
    expect(await theirs('-from:alice@sender.test who')).toEqual(['longer', 'spoof']);
    expect(await theirs('from:alice@sender.test OR from:mallory@spam.test')).toEqual(['exact', 'spoof']);
    // Anything else after from: is words, of the names and the addresses.
    expect(await theirs('from:alice who')).toEqual(['exact', 'longer', 'spoof']);
    expect(await theirs('from:sender.test who')).toEqual(['exact', 'longer', 'spoof']);
    expect(await theirs('from:alice@sender who')).toEqual(['exact', 'longer', 'spoof']);
    expect(await theirs('from:alice@sen*')).toEqual(['exact', 'longer', 'spoof']);
    // Another workspace's sender with the same address is not theirs to find, nor theirs ours.
    expect(await found('from:x@sender.test')).toEqual([]);
    expect(await theirs('from:zoe@sender.test')).toEqual([]);
  });

  it('answers a malformed query with 400 invalid_query and the position of the problem', async () => {
    for (const [q, position] of [['from:', 0], ['a "open', 2], ['(a', 0], ['a OR', 2], ['in:nowhere', 3], ['before:2026-13-01', 7]] as const) {
      const res = await get(`/app/api/messages?q=${encodeURIComponent(q)}`, session(token));
      expect(errorOf(res), q).toMatchObject({ status: 400, error: 'invalid_query' });
      expect(res.json<{ position: number }>().position, q).toBe(position);
    }
    const inbox = await get(`/inbox?q=${encodeURIComponent('-')}`, bearer(acme.apiKey));
    expect(errorOf(inbox)).toMatchObject({ status: 400, error: 'invalid_query' });
    const threads = await get(`/app/api/threads?q=${encodeURIComponent('a AND')}`, session(token));
    expect(errorOf(threads)).toMatchObject({ status: 400, error: 'invalid_query' });
  });

  it('never answers a 5xx to a hostile query', async () => {
    const pieces = ['a', '"', '(', ')', '-', '*', ' OR ', ' AND ', 'from:', 'NOT', 'NEAR', '{body}', ':', "'", '\\', '!', '&', '|', '<->', 'é', '𝔘', '\u0301', 'in:inbox', '^', '"x" *'];
    let seed = 7;
    const next = () => (seed = (seed * 48271) % 2147483647);
    for (let i = 0; i < 300; i++) {
      const q = Array.from({ length: 1 + (next() % 8) }, () => pieces[next() % pieces.length]).join(next() % 2 ? ' ' : '');
      const res = await get(`/app/api/messages?q=${encodeURIComponent(q)}`, session(token));
      expect([200, 400], `${q}: ${res.body}`).toContain(res.statusCode);
    }
  });

  it('keeps the index true through moves, deletes and a mailbox cascade', async () => {
    expect((await post(`/messages/${ids.reply}/move`, { folder: 'trash' })).statusCode).toBe(200);
    expect(await found('in:trash quarterly')).toEqual(['reply']);
    const removed = await h.app.inject({ method: 'DELETE', url: `/messages/${ids.report}`, headers: bearer(acme.apiKey) });
    expect(removed.statusCode).toBe(200);
    expect(await found('invoice')).toEqual([]);
    expect(await found('quarterly')).toEqual(['reply']);
    const gone = await h.app.inject({ method: 'DELETE', url: `/mailboxes/${BETA}`, headers: bearer(acme.apiKey) });
    expect(gone.statusCode).toBe(200);
    expect(await found('quarterly')).toEqual([]);
    // The index itself holds nothing of the deleted mail, not only the joins that read it.
    const db = h.services.database.db;
    if (TEST_DIALECT === 'sqlite') {
      const { rows } = await sql<{ rowid: number }>`select rowid from message_fts where message_fts match ${workspaceTag(other.workspaceId) + 'quarterly'}`.execute(db);
      expect(rows).toHaveLength(1); // the other workspace's
      const ours = await sql<{ rowid: number }>`select rowid from message_fts where message_fts match ${workspaceTag(acme.workspaceId) + 'quarterly'}`.execute(db);
      expect(ours.rows).toHaveLength(0);
      const keys = await db.selectFrom('message_fts_keys').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      const messages = await db.selectFrom('messages').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      expect(Number(keys.n)).toBe(Number(messages.n));
    } else {
      const { rows } = await sql<{ n: string }>`select count(*) as n from message_contents where search_document @@ 'quarterly'::tsquery`.execute(db);
      expect(Number(rows[0]!.n)).toBe(1);
    }
  });
});

describe(`search index of mail stored before it existed (${TEST_DIALECT})`, () => {
  let h: MailHarness;

  beforeAll(async () => {
    h = await startMailHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('is built by the migration that adds it', async () => {
    const acme = await createTenant(h, 'Acme');
    const post = (url: string, payload: object) => h.app.inject({ method: 'POST', url, headers: bearer(acme.apiKey), payload });
    expect((await post('/mailboxes', { address: ALPHA })).statusCode).toBe(201);
    const info = await h.send({ from: 'Zoë <zoe@sender.test>', to: ALPHA, subject: 'Before the index', text: 'An old invoice', attachments: [{ filename: 'old.csv', content: 'a,b' }] });
    const id = /Stored as (.+)$/.exec(info.response)![1]!;
    const migrator = createMigrator(h.services.database.db);
    const down = await migrator.migrateTo('20261126235000_event_order');
    expect(down.error).toBeUndefined();
    expect(down.results?.map((r) => r.migrationName)).toContain('20261127000100_message_search');
    const up = await migrator.migrateToLatest();
    expect(up.error).toBeUndefined();
    expect(up.results?.map((r) => r.migrationName)).toContain('20261127000100_message_search');
    for (const q of ['invoice', 'from:zoe', 'subject:before', 'filename:csv']) {
      const res = await h.app.inject({ method: 'GET', url: `/inbox?q=${encodeURIComponent(q)}`, headers: bearer(acme.apiKey) });
      expect(res.json<Page>().messages.map((m) => m.message_id), q).toEqual([id]);
    }
  });
  it('gives mail stored before it its sender address, folded as a query folds it', async () => {
    const acme = await createTenant(h, 'Senders');
    const address = 'senders@mailroom.localhost';
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(acme.apiKey), payload: { address } })).statusCode).toBe(201);
    const stored = async (from: string) => /Stored as (.+)$/.exec((await h.send({ from, to: address, subject: 'Before', text: 'x' })).response)![1]!;
    const [plain, accented, none] = [await stored('Ann <Ann@Sender.Test>'), await stored('zoe@sender.test'), await stored('nobody@sender.test')];
    const migrator = createMigrator(h.services.database.db);
    const db = h.services.database.db;
    const down = await migrator.migrateTo('20261213000600_label_definitions');
    expect(down.error).toBeUndefined();
    expect(down.results?.map((r) => r.migrationName).at(-1)).toBe('20261213000900_messages_from_address');
    // An address past ASCII (as SMTPUTF8 mail has) and a message without From, written into the rows directly.
    await db.updateTable('messages').set({ from_json: JSON.stringify({ name: 'Zoë', address: 'ZOË@Sender.Test' }) }).where('id', '=', accented).execute();
    await db.updateTable('messages').set({ from_json: 'null' }).where('id', '=', none).execute();
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    for (const [q, id] of [['from:ann@sender.test', plain], ['from:zoë@sender.test', accented], ['from:ZOË@SENDER.TEST', accented], ['from:nobody@sender.test', null]] as const) {
      const res = await h.app.inject({ method: 'GET', url: `/inbox?q=${encodeURIComponent(q)}`, headers: bearer(acme.apiKey) });
      expect(res.json<Page>().messages.map((m) => m.message_id), q).toEqual(id === null ? [] : [id]);
    }
    const rows = await db.selectFrom('messages').select(['id', 'from_address']).where('id', 'in', [plain, accented, none]).execute();
    expect(Object.fromEntries(rows.map((r) => [r.id, r.from_address]))).toEqual({ [plain]: 'ann@sender.test', [accented]: 'zoë@sender.test', [none]: '' });
  });

  it("is rebuilt with each word behind its workspace's tag by the migration that adds the tags", async () => {
    const acme = await createTenant(h, 'Tagged');
    const address = 'tagged@mailroom.localhost';
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(acme.apiKey), payload: { address } })).statusCode).toBe(201);
    const info = await h.send({ from: 'ann@sender.test', to: address, subject: 'Untagged words', text: 'a parcel of zucchini' });
    const id = /Stored as (.+)$/.exec(info.response)![1]!;
    const migrator = createMigrator(h.services.database.db);
    const db = h.services.database.db;
    // Down to the migration before the tags (undoing every later one too, newest first).
    const down = await migrator.migrateTo('20261201003470_login_failures_client');
    expect(down.error).toBeUndefined();
    expect(down.results?.map((r) => r.migrationName).at(-1)).toBe('20261201003700_search_workspace_tags');
    if (TEST_DIALECT === 'sqlite') {
      const bare = await sql<{ rowid: number }>`select rowid from message_fts where message_fts match 'zucchini'`.execute(db);
      expect(bare.rows).toHaveLength(1);
    }
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    if (TEST_DIALECT === 'sqlite') {
      const bare = await sql<{ rowid: number }>`select rowid from message_fts where message_fts match 'zucchini'`.execute(db);
      expect(bare.rows).toHaveLength(0);
    }
    for (const q of ['zucchini', 'zucc*', 'from:ann', 'subject:untagged']) {
      const res = await h.app.inject({ method: 'GET', url: `/inbox?q=${encodeURIComponent(q)}`, headers: bearer(acme.apiKey) });
      expect(res.json<Page>().messages.map((m) => m.message_id), q).toEqual([id]);
    }
  });
});
