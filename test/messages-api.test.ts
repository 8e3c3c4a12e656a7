import type { LightMyRequestResponse } from 'fastify';
import type Mail from 'nodemailer/lib/mailer/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, errorOf, login, session, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';

const FOLDERS = ['inbox', 'archive', 'sent', 'spam', 'trash'] as const;

interface MessageBody {
  message_id: string;
  mailbox: string;
  folder: string;
  read: boolean;
  labels: string[];
  thread_id: string;
  subject: string;
  snippet: string;
  created_at: string;
  attachments: Array<{ attachment_id: string }>;
}
interface MessagePage {
  messages: MessageBody[];
  total: number;
  limit: number;
  offset: number;
}
interface ThreadBody {
  thread_id: string;
  mailbox: string;
  subject: string;
  labels: string[];
  message_count: number;
  unread_count: number;
  last_message_at: string;
  snippet: string;
}
interface ThreadPage {
  threads: ThreadBody[];
  total: number;
  limit: number;
  offset: number;
}
interface Stats {
  mailboxes: number;
  messages: number;
  unread: number;
  threads: number;
  folders: Record<string, { total: number; unread: number }>;
}

/** What the test knows each stored message should look like: the API must agree with it exactly. */
interface Known {
  id: string;
  mailbox: string;
  thread: string;
  folder: string;
  read: boolean;
  labels: Set<string>;
  /** Order of storage; newest first means highest first. */
  seq: number;
  created_at: string;
  snippet: string;
}

type Credential = { key: string } | { token: string };

describe(`messages and threads API (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let acme: Tenant;
  let other: Tenant;
  let acmeToken: string;
  const ALPHA = 'alpha@mailroom.localhost';
  const BETA = 'beta@mailroom.localhost';
  const FOREIGN = 'foreign@mailroom.localhost';
  const known = new Map<string, Known>();
  /** Thread ids in the order they were created (ids sort by creation). */
  const threadOrder: string[] = [];
  let seq = 0;
  const foreign = { message: '', thread: '', attachment: '' };
  const byName: Record<string, string> = {};

  const call = (method: 'GET' | 'POST' | 'DELETE', url: string, credential: Credential, payload?: object): Promise<LightMyRequestResponse> =>
    h.app.inject({
      method,
      url: 'key' in credential ? url : `/app/api${url}`,
      headers: 'key' in credential ? bearer(credential.key) : session(credential.token),
      ...(payload ? { payload } : {}),
    });
  const key = (): Credential => ({ key: acme.apiKey });
  const ses = (): Credential => ({ token: acmeToken });
  const ok = async <T>(res: Promise<LightMyRequestResponse>): Promise<T> => {
    const r = await res;
    expect(r.statusCode, r.body).toBe(200);
    return r.json<T>();
  };

  /** Deliver over real SMTP and record every stored copy in the model. */
  const deliver = async (name: string, message: Mail.Options, { tick = true } = {}): Promise<Known[]> => {
    if (tick) h.clock.advance(1000);
    const info = await h.send(message);
    const ids = /Stored as (.+)$/.exec(info.response)![1]!.split(', ');
    const stored: Known[] = [];
    for (const id of ids) {
      const view = await ok<MessageBody>(call('GET', `/messages/${id}`, key()));
      expect(view).toMatchObject({ folder: 'inbox', read: false, labels: [] });
      if (![...known.values()].some((k) => k.thread === view.thread_id)) threadOrder.push(view.thread_id);
      seq += 1;
      const k: Known = { id, mailbox: view.mailbox, thread: view.thread_id, folder: 'inbox', read: false, labels: new Set(), seq, created_at: view.created_at, snippet: view.snippet };
      known.set(id, k);
      stored.push(k);
    }
    byName[name] = stored[0]!.id;
    return stored;
  };
  const m = (name: string): Known => known.get(byName[name]!)!;

  const newestFirst = (list: Known[]) => [...list].sort((a, b) => b.seq - a.seq).map((k) => k.id);

  /** Compare every counter the API shows with the model: mailboxes, stats, threads, folder pages. */
  const verify = async (): Promise<void> => {
    const all = [...known.values()];
    for (const address of [ALPHA, BETA]) {
      const mine = all.filter((k) => k.mailbox === address);
      const mailbox = await ok<{ message_count: number; unread_count: number }>(call('GET', `/mailboxes/${address}`, key()));
      expect(mailbox, address).toMatchObject({ message_count: mine.length, unread_count: mine.filter((k) => !k.read).length });
    }
    const folders = Object.fromEntries(
      FOLDERS.map((f) => {
        const inFolder = all.filter((k) => k.folder === f);
        return [f, { total: inFolder.length, unread: inFolder.filter((k) => !k.read).length }];
      }),
    );
    const threads = [...new Set(all.map((k) => k.thread))];
    const expectedStats: Stats = { mailboxes: 2, messages: all.length, unread: all.filter((k) => !k.read).length, threads: threads.length, folders };
    expect(await ok<Stats>(call('GET', '/stats', key()))).toEqual(expectedStats);
    expect(await ok<Stats>(call('GET', '/stats', ses()))).toEqual(expectedStats);
    for (const thread of threads) {
      const members = all.filter((k) => k.thread === thread);
      const newest = members.reduce((a, b) => (b.seq > a.seq ? b : a));
      const view = await ok<ThreadBody & { messages: MessageBody[] }>(call('GET', `/threads/${thread}`, ses()));
      expect(view, thread).toMatchObject({
        thread_id: thread,
        message_count: members.length,
        unread_count: members.filter((k) => !k.read).length,
        labels: [...new Set(members.flatMap((k) => [...k.labels]))].sort(),
        last_message_at: newest.created_at,
        snippet: newest.snippet,
      });
      expect(view.messages.map((x) => x.message_id)).toEqual(newestFirst(members).reverse());
    }
    for (const folder of FOLDERS) {
      const page = await ok<MessagePage>(call('GET', `/messages?folder=${folder}&limit=500`, ses()));
      const expected = all.filter((k) => k.folder === folder);
      expect(page.total, folder).toBe(expected.length);
      expect(page.messages.map((x) => x.message_id), folder).toEqual(newestFirst(expected));
      for (const x of page.messages) {
        const k = known.get(x.message_id)!;
        expect(x, x.message_id).toMatchObject({ folder: k.folder, read: k.read, labels: [...k.labels].sort(), thread_id: k.thread, mailbox: k.mailbox });
      }
      for (const address of [ALPHA, BETA]) {
        const inbox = await ok<MessagePage>(call('GET', `/inbox?mailbox=${address}&folder=${folder}&limit=500`, key()));
        const mine = expected.filter((k) => k.mailbox === address);
        expect(inbox.total, `${address} ${folder}`).toBe(mine.length);
        expect(inbox.messages.map((x) => x.message_id)).toEqual(newestFirst(mine));
        // A mailbox's pages may be answered from the page cache: every field must follow every change.
        for (const x of inbox.messages) {
          const k = known.get(x.message_id)!;
          expect(x, `${address} ${folder} ${x.message_id}`).toMatchObject({ folder: k.folder, read: k.read, labels: [...k.labels].sort(), thread_id: k.thread, mailbox: k.mailbox });
        }
        const unread = await ok<MessagePage>(call('GET', `/messages?mailbox=${address}&folder=${folder}&unread=true&limit=500`, ses()));
        expect(unread.messages.map((x) => x.message_id), `${address} ${folder} unread`).toEqual(newestFirst(mine.filter((k) => !k.read)));
      }
    }
  };

  beforeAll(async () => {
    h = await startMailHarness();
    acme = await createTenant(h, 'Acme');
    other = await createTenant(h, 'Other');
    acmeToken = await login(h, acme.ownerEmail, acme.password);
    for (const address of [ALPHA, BETA]) expect((await call('POST', `/mailboxes?address=${address}`, key())).statusCode).toBe(201);
    expect((await call('POST', `/mailboxes?address=${FOREIGN}`, { key: other.apiKey })).statusCode).toBe(201);

    const info = await h.send({ from: 'spy@foreign.test', to: FOREIGN, subject: 'Secret', text: 'theirs', attachments: [{ filename: 'secret.txt', content: 'classified' }] });
    foreign.message = /Stored as (msg_\w+)/.exec(info.response)![1]!;
    const view = await ok<MessageBody>(call('GET', `/messages/${foreign.message}`, { key: other.apiKey }));
    foreign.thread = view.thread_id;
    foreign.attachment = view.attachments[0]!.attachment_id;

    // alpha: a three-message thread (by In-Reply-To), two singletons (one with an attachment).
    await deliver('q1', { from: 'ann@corp.test', to: ALPHA, subject: 'Quarterly report', text: 'numbers', messageId: '<q1@corp.test>' });
    await deliver('q2', { from: 'bob@corp.test', to: ALPHA, subject: 'Re: Quarterly report', text: 'thanks', messageId: '<q2@corp.test>', inReplyTo: '<q1@corp.test>', references: ['<q1@corp.test>'] });
    await deliver('lunch', { from: 'cat@food.test', to: ALPHA, subject: 'Lunch plans', text: 'pizza?' });
    await deliver('invoice', { from: 'billing@vendor.test', to: ALPHA, subject: 'Invoice 42', text: 'attached', attachments: [{ filename: 'invoice.pdf', content: Buffer.from('%PDF-1.4 fake') }] });
    await deliver('q3', { from: 'ann@corp.test', to: ALPHA, subject: 'Re: Quarterly report', text: 'final', messageId: '<q3@corp.test>', inReplyTo: '<q2@corp.test>', references: ['<q1@corp.test>', '<q2@corp.test>'] });
    // beta: a two-message thread joined by subject and a shared participant.
    await deliver('news1', { from: 'news@list.test', to: BETA, subject: 'Newsletter', text: 'issue 1' });
    await deliver('news2', { from: 'news@list.test', to: BETA, subject: 'Newsletter', text: 'issue 2' });
    // One transaction to both mailboxes: two copies, two threads (threads are per mailbox).
    const both = await deliver('both', { from: 'ceo@corp.test', to: [ALPHA, BETA], subject: 'All hands', text: 'friday' });
    expect(both.map((k) => k.mailbox).sort()).toEqual([ALPHA, BETA]);
    expect(both[0]!.thread).not.toBe(both[1]!.thread);
    byName.bothAlpha = both.find((k) => k.mailbox === ALPHA)!.id;
    byName.bothBeta = both.find((k) => k.mailbox === BETA)!.id;
  });
  afterAll(async () => h.close());

  it('threads the delivered mail as the model expects', async () => {
    expect(m('q2').thread).toBe(m('q1').thread);
    expect(m('q3').thread).toBe(m('q1').thread);
    expect(m('news2').thread).toBe(m('news1').thread);
    expect(new Set([m('q1').thread, m('lunch').thread, m('invoice').thread, m('news1').thread, m('bothAlpha').thread, m('bothBeta').thread]).size).toBe(6);
    await verify();
  });

  it('sets read and unread on both surfaces, in the query or a JSON body, and keeps every counter exact', async () => {
    const q1 = m('q1');
    expect(await ok(call('POST', `/messages/${q1.id}/read`, key()))).toEqual({ ok: true, message_id: q1.id, read: true });
    q1.read = true;
    await verify();
    // Setting it again changes nothing (counters are not decremented twice).
    expect(await ok(call('POST', `/messages/${q1.id}/read?read=true`, key()))).toEqual({ ok: true, message_id: q1.id, read: true });
    await verify();
    expect(await ok(call('POST', `/messages/${q1.id}/read?read=false`, key()))).toEqual({ ok: true, message_id: q1.id, read: false });
    q1.read = false;
    await verify();
    expect(await ok(call('POST', `/messages/${q1.id}/read?read=false`, key()))).toMatchObject({ read: false });
    await verify();

    const q2 = m('q2');
    expect(await ok(call('POST', `/messages/${q2.id}/read`, ses(), { read: true }))).toEqual({ ok: true, message_id: q2.id, read: true });
    q2.read = true;
    await verify();
    expect(await ok(call('POST', `/messages/${q2.id}/read`, ses(), { read: false }))).toMatchObject({ read: false });
    q2.read = false;
    await verify();
    // The body wins over the query; an empty body means read=true.
    expect(await ok(call('POST', `/messages/${q2.id}/read?read=true`, ses(), { read: false }))).toMatchObject({ read: false });
    await verify();
    expect(await ok(call('POST', `/messages/${q2.id}/read`, ses(), {}))).toMatchObject({ read: true });
    q2.read = true;
    await verify();
    expect(await ok(call('POST', `/messages/${q2.id}/read?read=false`, ses()))).toMatchObject({ read: false });
    q2.read = false;
    await verify();

    for (const [url, payload] of [
      [`/messages/${q2.id}/read?read=maybe`, undefined],
      [`/messages/${q2.id}/read`, { read: 'yes' }],
      [`/messages/${q2.id}/read`, { read: true, folder: 'inbox' }],
      [`/messages/${q2.id}/read?colour=red`, undefined],
    ] as const) {
      expect(errorOf(await call('POST', url, ses(), payload)), url).toMatchObject({ status: 400, error: 'invalid_request' });
    }
    await verify();
  });

  it('GET marks read only with mark_read=true, once', async () => {
    const lunch = m('lunch');
    for (const query of ['', '?mark_read=false']) {
      expect(await ok<MessageBody>(call('GET', `/messages/${lunch.id}${query}`, key()))).toMatchObject({ read: false });
    }
    await verify();
    const marked = await ok<MessageBody & { text: string; headers: unknown[] }>(call('GET', `/messages/${lunch.id}?mark_read=true`, ses()));
    expect(marked).toMatchObject({ message_id: lunch.id, read: true, text: 'pizza?\n' });
    lunch.read = true;
    await verify();
    expect(await ok<MessageBody>(call('GET', `/messages/${lunch.id}?mark_read=true`, key()))).toMatchObject({ read: true });
    await verify();
    expect(errorOf(await call('GET', `/messages/${lunch.id}?mark_read=perhaps`, key()))).toMatchObject({ status: 400, error: 'invalid_request' });
  });

  it('moves through every folder, refuses unknown folders, and answers spam / not-spam', async () => {
    const invoice = m('invoice'); // unread
    const lunch = m('lunch'); // read
    for (const folder of ['archive', 'sent', 'spam', 'trash', 'inbox'] as const) {
      expect(await ok(call('POST', `/messages/${invoice.id}/move?folder=${folder}`, key()))).toEqual({ ok: true, message_id: invoice.id, folder });
      invoice.folder = folder;
      expect(await ok(call('POST', `/messages/${lunch.id}/move`, ses(), { folder }))).toEqual({ ok: true, message_id: lunch.id, folder });
      lunch.folder = folder;
      await verify();
    }
    // Moving to the folder it is in changes nothing.
    expect(await ok(call('POST', `/messages/${invoice.id}/move?folder=inbox`, key()))).toMatchObject({ folder: 'inbox' });
    await verify();

    for (const folder of ['junk', 'INBOX', 'drafts', 'Archive']) {
      expect(errorOf(await call('POST', `/messages/${invoice.id}/move?folder=${folder}`, key())), folder).toMatchObject({ status: 400, error: 'invalid_folder' });
      expect(errorOf(await call('POST', `/messages/${invoice.id}/move`, ses(), { folder })), folder).toMatchObject({ status: 400, error: 'invalid_folder' });
    }
    expect(errorOf(await call('POST', `/messages/${invoice.id}/move`, key()))).toMatchObject({ status: 400, error: 'invalid_request' });
    expect(errorOf(await call('POST', `/messages/${invoice.id}/move`, ses(), { folder: 3 }))).toMatchObject({ status: 400, error: 'invalid_request' });
    await verify();

    expect(await ok(call('POST', `/messages/${invoice.id}/spam`, key()))).toEqual({ ok: true, message_id: invoice.id, folder: 'spam' });
    invoice.folder = 'spam';
    await verify();
    expect(await ok(call('POST', `/messages/${invoice.id}/not-spam`, ses()))).toEqual({ ok: true, message_id: invoice.id, folder: 'inbox' });
    invoice.folder = 'inbox';
    await verify();
    // not-spam brings a message back to the inbox from wherever it is.
    expect(await ok(call('POST', `/messages/${lunch.id}/move?folder=archive`, key()))).toMatchObject({ folder: 'archive' });
    lunch.folder = 'archive';
    expect(await ok(call('POST', `/messages/${lunch.id}/spam`, ses()))).toMatchObject({ ok: true, folder: 'spam' });
    lunch.folder = 'spam';
    await verify();
    expect(await ok(call('POST', `/messages/${lunch.id}/spam`, key()))).toMatchObject({ ok: true, folder: 'spam' });
    await verify();
    expect(await ok(call('POST', `/messages/${lunch.id}/not-spam`, key()))).toMatchObject({ ok: true, folder: 'inbox' });
    lunch.folder = 'inbox';
    await verify();
    // Read state travels with a moved message into its new folder's counters.
    expect(await ok(call('POST', `/messages/${lunch.id}/read?read=false`, key()))).toMatchObject({ read: false });
    lunch.read = false;
    expect(await ok(call('POST', `/messages/${lunch.id}/move?folder=trash`, key()))).toMatchObject({ folder: 'trash' });
    lunch.folder = 'trash';
    await verify();
    expect(await ok(call('POST', `/messages/${lunch.id}/read`, ses()))).toMatchObject({ read: true });
    lunch.read = true;
    await verify();
  });

  it('adds and removes labels on a message; a thread shows the union of its messages\' labels', async () => {
    const q1 = m('q1');
    const q2 = m('q2');
    expect(await ok(call('POST', `/messages/${q1.id}/labels`, key(), { add: ['work', 'finance', 'work'] }))).toEqual({ labels: ['finance', 'work'] });
    q1.labels = new Set(['finance', 'work']);
    await verify();
    expect(await ok(call('POST', `/messages/${q2.id}/labels`, ses(), { add: ['urgent', 'work'] }))).toEqual({ labels: ['urgent', 'work'] });
    q2.labels = new Set(['urgent', 'work']);
    await verify();
    // Removing a label from one message keeps it on the thread while another message has it.
    expect(await ok(call('POST', `/messages/${q1.id}/labels`, ses(), { remove: ['work', 'absent'] }))).toEqual({ labels: ['finance'] });
    q1.labels.delete('work');
    await verify();
    // Add and remove of one label: remove wins; an empty change answers the current labels.
    expect(await ok(call('POST', `/messages/${q1.id}/labels`, key(), { add: ['x:y.z_1-2', 'temp'], remove: ['temp'] }))).toEqual({ labels: ['finance', 'x:y.z_1-2'] });
    q1.labels.add('x:y.z_1-2');
    expect(await ok(call('POST', `/messages/${q1.id}/labels`, key(), {}))).toEqual({ labels: ['finance', 'x:y.z_1-2'] });
    expect(await ok<MessageBody>(call('GET', `/messages/${q1.id}`, ses()))).toMatchObject({ labels: ['finance', 'x:y.z_1-2'] });
    await verify();

    const bad: object[] = [
      { add: ['Work'] },
      { add: [''] },
      { add: ['a'.repeat(65)] },
      { add: ['has space'] },
      { add: ['emoji🙂'] },
      { remove: ['UPPER'] },
      { add: 'work' },
      { add: [1] },
      { labels: ['work'] },
    ];
    for (const payload of bad) {
      expect(errorOf(await call('POST', `/messages/${q1.id}/labels`, ses(), payload)), JSON.stringify(payload)).toMatchObject({ status: 400 });
      expect(errorOf(await call('POST', `/threads/${q1.thread}/labels`, key(), payload)), JSON.stringify(payload)).toMatchObject({ status: 400 });
    }
    expect(await ok(call('POST', `/messages/${q1.id}/labels`, key(), { add: ['a'.repeat(64)] }))).toMatchObject({ labels: ['a'.repeat(64), 'finance', 'x:y.z_1-2'] });
    expect(await ok(call('POST', `/messages/${q1.id}/labels`, key(), { remove: ['a'.repeat(64)] }))).toEqual({ labels: ['finance', 'x:y.z_1-2'] });
    await verify();
  });

  it('applies thread labels to every message of the thread', async () => {
    const thread = m('q1').thread;
    const members = [...known.values()].filter((k) => k.thread === thread);
    expect(members).toHaveLength(3);
    const added = await ok<{ labels: string[] }>(call('POST', `/threads/${thread}/labels`, ses(), { add: ['project'] }));
    for (const k of members) k.labels.add('project');
    expect(added.labels).toEqual([...new Set(members.flatMap((k) => [...k.labels]))].sort());
    for (const k of members) expect((await ok<MessageBody>(call('GET', `/messages/${k.id}`, key()))).labels).toContain('project');
    await verify();
    // Removing through the thread removes from every message, including labels set per message.
    expect(await ok(call('POST', `/threads/${thread}/labels`, key(), { remove: ['work', 'urgent'] }))).toEqual({ labels: ['finance', 'project', 'x:y.z_1-2'] });
    for (const k of members) {
      k.labels.delete('work');
      k.labels.delete('urgent');
    }
    await verify();
    // Other threads are untouched.
    expect((await ok<ThreadBody>(call('GET', `/threads/${m('lunch').thread}`, key()))).labels).toEqual([]);
    // Label the beta newsletter thread too, for the filters below.
    expect(await ok(call('POST', `/threads/${m('news1').thread}/labels`, key(), { add: ['project', 'news'] }))).toEqual({ labels: ['news', 'project'] });
    for (const k of [m('news1'), m('news2')]) {
      k.labels.add('project');
      k.labels.add('news');
    }
    await verify();
  });

  it('filters /app/api/messages by mailbox, folder, label, thread and unread, alone and combined, with exact totals', async () => {
    // Some variety: a read message, one archived, one in spam.
    expect((await call('POST', `/messages/${m('news1').id}/read`, key())).statusCode).toBe(200);
    m('news1').read = true;
    expect((await call('POST', `/messages/${m('q3').id}/move?folder=archive`, key())).statusCode).toBe(200);
    m('q3').folder = 'archive';
    expect((await call('POST', `/messages/${m('bothBeta').id}/spam`, key())).statusCode).toBe(200);
    m('bothBeta').folder = 'spam';
    await verify();

    const all = [...known.values()];
    const filters: Array<Record<string, string>> = [{}];
    for (const mailbox of [ALPHA, BETA, 'ALPHA@Mailroom.Localhost']) filters.push({ mailbox });
    for (const folder of ['inbox', 'archive', 'spam', 'trash']) filters.push({ folder });
    for (const label of ['project', 'finance', 'news', 'never-used']) filters.push({ label });
    for (const k of [m('q1'), m('news1'), m('lunch')]) filters.push({ thread_id: k.thread });
    for (const unread of ['true', 'false']) filters.push({ unread });
    filters.push(
      { mailbox: ALPHA, folder: 'inbox' },
      { mailbox: ALPHA, folder: 'archive' },
      { mailbox: BETA, folder: 'inbox', unread: 'true' },
      { mailbox: BETA, unread: 'false' },
      { mailbox: ALPHA, label: 'project' },
      { mailbox: BETA, label: 'project', unread: 'true' },
      { folder: 'inbox', label: 'project' },
      { folder: 'inbox', unread: 'false' },
      { folder: 'spam', unread: 'true' },
      { thread_id: m('q1').thread, folder: 'inbox' },
      { thread_id: m('q1').thread, unread: 'true' },
      { thread_id: m('q1').thread, mailbox: BETA },
      { thread_id: m('q1').thread, label: 'finance', folder: 'inbox', unread: 'true', mailbox: ALPHA },
      { label: 'project', unread: 'true' },
    );
    for (const filter of filters) {
      const expected = all.filter(
        (k) =>
          (filter.mailbox === undefined || k.mailbox === filter.mailbox.toLowerCase()) &&
          (filter.folder === undefined || k.folder === filter.folder) &&
          (filter.label === undefined || k.labels.has(filter.label)) &&
          (filter.thread_id === undefined || k.thread === filter.thread_id) &&
          (filter.unread === undefined || k.read === (filter.unread === 'false')),
      );
      const query = new URLSearchParams({ ...filter, limit: '500' }).toString();
      const page = await ok<MessagePage>(call('GET', `/messages?${query}`, ses()));
      expect({ total: page.total, ids: page.messages.map((x) => x.message_id) }, query).toEqual({ total: expected.length, ids: newestFirst(expected) });
      // A small page still reports the full total.
      const small = await ok<MessagePage>(call('GET', `/messages?${new URLSearchParams({ ...filter, limit: '1' }).toString()}`, ses()));
      expect(small.total, query).toBe(expected.length);
      expect(small.messages.map((x) => x.message_id), query).toEqual(newestFirst(expected).slice(0, 1));
    }
    // The sanity of the matrix: several filters really narrow down to a few messages.
    expect(all.filter((k) => k.labels.has('project') && !k.read)).toHaveLength(4);

    for (const [query, error] of [
      ['folder=junk', 'invalid_folder'],
      ['label=Project', 'invalid_request'],
      ['unread=perhaps', 'invalid_request'],
      ['colour=red', 'invalid_request'],
    ] as const) {
      expect(errorOf(await call('GET', `/messages?${query}`, ses())), query).toMatchObject({ status: 400, error });
    }
    expect(errorOf(await call('GET', '/messages?mailbox=nobody@mailroom.localhost', ses()))).toMatchObject({ status: 404, error: 'mailbox_not_found' });
    expect(errorOf(await call('GET', `/messages?mailbox=${FOREIGN}`, ses()))).toMatchObject({ status: 404, error: 'mailbox_not_found' });
    expect(await ok<MessagePage>(call('GET', `/messages?thread_id=${foreign.thread}`, ses()))).toEqual({ messages: [], total: 0, limit: 50, offset: 0 });
  });

  it('paginates newest first: limit and offset edges, pages never overlap and cover everything', async () => {
    // Five more messages stored within one clock tick: the id orders them.
    for (let i = 0; i < 5; i += 1) await deliver(`burst${i}`, { from: `burst${i}@bulk.test`, to: i % 2 === 0 ? ALPHA : BETA, subject: `Burst ${i}`, text: `${i}` }, { tick: i === 0 });
    await verify();
    const everything = newestFirst([...known.values()]);
    expect(everything.length).toBe(14);

    const page = (query: string) => ok<MessagePage>(call('GET', `/messages?${query}`, ses()));
    expect(await page('')).toMatchObject({ total: everything.length, limit: 50, offset: 0 });
    expect((await page('limit=500')).messages.map((x) => x.message_id)).toEqual(everything);
    const one: string[] = [];
    for (let offset = 0; offset < everything.length; offset += 1) {
      const p = await page(`limit=1&offset=${offset}`);
      expect(p).toMatchObject({ total: everything.length, limit: 1, offset });
      expect(p.messages).toHaveLength(1);
      one.push(p.messages[0]!.message_id);
    }
    expect(one).toEqual(everything);
    for (const size of [3, 5]) {
      const seen: string[] = [];
      for (let offset = 0; offset < everything.length; offset += size) seen.push(...(await page(`limit=${size}&offset=${offset}`)).messages.map((x) => x.message_id));
      expect(seen, `pages of ${size}`).toEqual(everything);
    }
    expect(await page(`offset=${everything.length}`)).toEqual({ messages: [], total: everything.length, limit: 50, offset: everything.length });
    expect(await page('offset=1000&limit=10')).toEqual({ messages: [], total: everything.length, limit: 10, offset: 1000 });
    expect(await page(`mailbox=${BETA}&offset=100`)).toMatchObject({ messages: [], total: [...known.values()].filter((k) => k.mailbox === BETA).length });
    expect(await page('label=project&offset=100')).toMatchObject({ messages: [], total: [...known.values()].filter((k) => k.labels.has('project')).length });

    for (const query of ['limit=0', 'limit=501', 'limit=-1', 'limit=abc', 'limit=1.5', 'offset=-1', 'offset=abc']) {
      expect(errorOf(await call('GET', `/messages?${query}`, ses())), query).toMatchObject({ status: 400, error: 'invalid_request' });
      expect(errorOf(await call('GET', `/inbox?${query}`, key())), query).toMatchObject({ status: 400, error: 'invalid_request' });
      expect(errorOf(await call('GET', `/threads?${query}`, ses())), query).toMatchObject({ status: 400, error: 'invalid_request' });
    }
  });

  it('lists threads with mailbox and label filters', async () => {
    const all = [...known.values()];
    const threadIds = [...new Set(all.map((k) => k.thread))];
    // Most recent activity first, then the newer thread.
    const last = (t: string) => Math.max(...all.filter((k) => k.thread === t).map((k) => k.seq));
    const order = (ids: string[]) => [...ids].sort((a, b) => last(b) - last(a) || threadOrder.indexOf(b) - threadOrder.indexOf(a));
    const cases: Array<[string, string[]]> = [
      ['', threadIds],
      [`mailbox=${ALPHA}`, threadIds.filter((t) => all.some((k) => k.thread === t && k.mailbox === ALPHA))],
      [`mailbox=${BETA}`, threadIds.filter((t) => all.some((k) => k.thread === t && k.mailbox === BETA))],
      ['label=project', threadIds.filter((t) => all.some((k) => k.thread === t && k.labels.has('project')))],
      ['label=finance', [m('q1').thread]],
      ['label=never-used', []],
      [`mailbox=${BETA}&label=project`, [m('news1').thread]],
      [`mailbox=${ALPHA}&label=news`, []],
    ];
    for (const [query, expected] of cases) {
      for (const credential of [ses(), key()]) {
        const page = await ok<ThreadPage>(call('GET', `/threads?${query}&limit=500`, credential));
        expect({ total: page.total, ids: page.threads.map((t) => t.thread_id) }, query).toEqual({ total: expected.length, ids: order(expected) });
      }
    }
    const page = await ok<ThreadPage>(call('GET', `/threads?mailbox=${ALPHA}&limit=2&offset=1`, ses()));
    expect(page.threads.map((t) => t.thread_id)).toEqual(order(cases[1]![1]).slice(1, 3));
    expect(page.total).toBe(cases[1]![1].length);
    const quarterly = (await ok<ThreadPage>(call('GET', '/threads?label=finance', ses()))).threads[0]!;
    expect(quarterly).toMatchObject({ mailbox: ALPHA, subject: 'Quarterly report', message_count: 3, labels: ['finance', 'project', 'x:y.z_1-2'] });
    expect(errorOf(await call('GET', `/threads?mailbox=${FOREIGN}`, ses()))).toMatchObject({ status: 404, error: 'mailbox_not_found' });
    expect(errorOf(await call('GET', '/threads?label=Bad', ses()))).toMatchObject({ status: 400 });
  });

  it('deletes a message for good: gone from every route, counters and threads follow', async () => {
    const invoice = m('invoice');
    const attachment = (await ok<MessageBody>(call('GET', `/messages/${invoice.id}`, key()))).attachments[0]!.attachment_id;
    expect((await call('GET', `/messages/${invoice.id}/attachments/${attachment}`, key())).statusCode).toBe(200);
    expect(await ok(call('DELETE', `/messages/${invoice.id}`, key()))).toEqual({ ok: true, message_id: invoice.id });
    known.delete(invoice.id);
    await verify();
    const gone = [
      ['GET', `/messages/${invoice.id}`],
      ['GET', `/messages/${invoice.id}/raw`],
      ['GET', `/messages/${invoice.id}/attachments`],
      ['GET', `/messages/${invoice.id}/attachments/${attachment}`],
      ['GET', `/messages/${invoice.id}/thread`],
      ['GET', `/threads/${invoice.thread}`],
      ['POST', `/messages/${invoice.id}/read`],
      ['POST', `/messages/${invoice.id}/spam`],
      ['DELETE', `/messages/${invoice.id}`],
    ] as const;
    for (const [method, url] of gone) {
      for (const credential of [key(), ses()]) expect((await call(method, url, credential)).statusCode, `${method} ${url}`).toBe(404);
    }
    // The attachment and content rows went with it.
    const db = h.services.database.db;
    expect(await db.selectFrom('attachments').select('id').where('message_id', '=', invoice.id).execute()).toEqual([]);
    expect(await db.selectFrom('message_contents').select('message_id').where('message_id', '=', invoice.id).execute()).toEqual([]);

    // Deleting from a thread of three: the thread keeps the other two, their unread count and labels.
    const q2 = m('q2');
    expect(await ok(call('POST', `/messages/${q2.id}/labels`, key(), { add: ['only-on-q2'] }))).toMatchObject({ labels: expect.arrayContaining(['only-on-q2']) as unknown });
    q2.labels.add('only-on-q2');
    await verify();
    expect(await ok(call('DELETE', `/messages/${q2.id}`, ses()))).toEqual({ ok: true, message_id: q2.id });
    known.delete(q2.id);
    await verify();
    expect((await ok<ThreadBody>(call('GET', `/threads/${q2.thread}`, key()))).labels).not.toContain('only-on-q2');
    expect(await ok<MessagePage>(call('GET', '/messages?label=only-on-q2', ses()))).toMatchObject({ total: 0, messages: [] });

    // A reply to the deleted message still joins its thread.
    const [reply] = await deliver('q4', { from: 'ann@corp.test', to: ALPHA, subject: 'Re: again', text: 'late', inReplyTo: '<q2@corp.test>', references: ['<q2@corp.test>'] });
    expect(reply!.thread).toBe(m('q1').thread);
    await verify();
    // Deleting the newest message of a thread: its snippet and time fall back to the one before.
    expect((await ok<ThreadBody>(call('GET', `/threads/${reply!.thread}`, key()))).snippet).toBe('late');
    expect((await call('DELETE', `/messages/${reply!.id}`, key())).statusCode).toBe(200);
    known.delete(reply!.id);
    await verify();
    expect(await ok<ThreadBody>(call('GET', `/threads/${reply!.thread}`, key()))).toMatchObject({ snippet: 'final', last_message_at: m('q3').created_at });

    // Deleting every message of a thread removes the thread.
    for (const k of [...known.values()].filter((x) => x.thread === m('news1').thread)) {
      expect((await call('DELETE', `/messages/${k.id}`, key())).statusCode).toBe(200);
      known.delete(k.id);
    }
    await verify();
  });

  it("answers 404 for another tenant's ids and for unknown ids on every message, thread, attachment and raw route", async () => {
    const mine = m('q1');
    const [withFile] = await deliver('withfile', { from: 'billing@vendor.test', to: ALPHA, subject: 'Invoice 43', text: 'again', attachments: [{ filename: 'invoice.pdf', content: 'pdf' }] });
    const unknownMessage = 'msg_01jzzzzzzzzzzzzzzzzzzzzzzz';
    const unknownThread = 'thr_01jzzzzzzzzzzzzzzzzzzzzzzz';
    const unknownAttachment = 'att_01jzzzzzzzzzzzzzzzzzzzzzzz';
    const routes = (message: string, thread: string, attachment: string) =>
      [
        ['GET', `/messages/${message}`, undefined],
        ['GET', `/messages/${message}?mark_read=true`, undefined],
        ['POST', `/messages/${message}/read`, undefined],
        ['POST', `/messages/${message}/read?read=false`, undefined],
        ['POST', `/messages/${message}/move?folder=trash`, undefined],
        ['POST', `/messages/${message}/spam`, undefined],
        ['POST', `/messages/${message}/not-spam`, undefined],
        ['POST', `/messages/${message}/labels`, { add: ['stolen'] }],
        ['GET', `/messages/${message}/thread`, undefined],
        ['GET', `/messages/${message}/attachments`, undefined],
        ['GET', `/messages/${message}/attachments/${attachment}`, undefined],
        ['GET', `/messages/${message}/raw`, undefined],
        ['GET', `/threads/${thread}`, undefined],
        ['POST', `/threads/${thread}/labels`, { add: ['stolen'] }],
        ['DELETE', `/messages/${message}`, undefined],
      ] as const;
    for (const [message, thread, attachment, what] of [
      [foreign.message, foreign.thread, foreign.attachment, "another tenant's"],
      [unknownMessage, unknownThread, unknownAttachment, 'unknown'],
      ['nonsense', 'nonsense', 'nonsense', 'malformed'],
    ] as const) {
      for (const [method, url, payload] of routes(message, thread, attachment)) {
        for (const credential of [key(), ses()]) {
          const res = await call(method, url, credential, payload);
          expect(res.statusCode, `${what}: ${method} ${url} ${'key' in credential ? 'api key' : 'session'}`).toBe(404);
          expect(res.body).not.toContain('classified');
        }
      }
    }
    // Mixed: my message with their attachment, their message with my attachment.
    const myAttachment = (await ok<MessageBody>(call('GET', `/messages/${withFile!.id}`, key()))).attachments[0]!.attachment_id;
    expect((await call('GET', `/messages/${withFile!.id}/attachments/${myAttachment}`, key())).body).toBe('pdf');
    expect((await call('GET', `/messages/${mine.id}/attachments/${foreign.attachment}`, key())).statusCode).toBe(404);
    expect((await call('GET', `/messages/${foreign.message}/attachments/${myAttachment}`, key())).statusCode).toBe(404);

    // Their message is untouched and still theirs.
    const theirs = { key: other.apiKey };
    expect(await ok<MessageBody>(call('GET', `/messages/${foreign.message}`, theirs))).toMatchObject({ folder: 'inbox', read: false, labels: [] });
    expect(await ok<ThreadBody>(call('GET', `/threads/${foreign.thread}`, theirs))).toMatchObject({ message_count: 1, unread_count: 1, labels: [] });
    expect((await call('GET', `/messages/${foreign.message}/attachments/${foreign.attachment}`, theirs)).body).toBe('classified');
    expect(await ok<Stats>(call('GET', '/stats', theirs))).toMatchObject({ mailboxes: 1, messages: 1, unread: 1, threads: 1 });
    // And the other way round: they cannot reach ours.
    for (const url of [`/messages/${mine.id}`, `/threads/${mine.thread}`, `/messages/${mine.id}/raw`]) {
      expect((await call('GET', url, theirs)).statusCode, url).toBe(404);
    }
    await verify();
  });
});
