import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, errorOf, login, session, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';

interface LabelRow { name: string; colour: string | null; defined: boolean; messages: number; unread: number }
interface LabelList { labels: LabelRow[]; count_cap: number; unread_capped: boolean }
interface Page { messages: Array<{ message_id: string; mailbox: string; labels: string[]; flagged: boolean }>; total: number }
type Credential = { key: string } | { token: string };

describe(`labels, starred and every inbox (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let acme: Tenant;
  let other: Tenant;
  let token: string;
  const BOX = 'labels@mailroom.localhost';
  const BOX2 = 'labels-two@mailroom.localhost';
  const OTHER_BOX = 'labels-other@mailroom.localhost';

  const call = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, credential: Credential, payload?: object): Promise<LightMyRequestResponse> =>
    h.app.inject({
      method,
      url: 'key' in credential ? url : `/app/api${url}`,
      headers: 'key' in credential ? bearer(credential.key) : session(credential.token),
      ...(payload ? { payload } : {}),
    });
  const key = (): Credential => ({ key: acme.apiKey });
  const ses = (): Credential => ({ token });
  const ok = async <T>(res: Promise<LightMyRequestResponse>): Promise<T> => {
    const r = await res;
    expect(r.statusCode, r.body).toBe(200);
    return r.json<T>();
  };
  const labels = (credential: Credential = ses()) => ok<LabelList>(call('GET', '/labels', credential));
  const deliver = async (to: string, subject: string): Promise<string> => {
    h.clock.advance(1000);
    const info = await h.send({ from: 'sender@sender.test', to, subject, text: `body of ${subject}` });
    return /Stored as (.+)$/.exec(info.response)![1]!;
  };
  const label = (id: string, add: string[], credential: Credential = key()) => ok(call('POST', `/messages/${id}/labels`, credential, { add }));

  beforeAll(async () => {
    h = await startMailHarness();
    acme = await createTenant(h, 'Acme');
    other = await createTenant(h, 'Other');
    token = await login(h, acme.ownerEmail, acme.password);
    for (const box of [BOX, BOX2]) expect((await call('POST', `/mailboxes?address=${box}`, key())).statusCode).toBe(201);
    expect((await call('POST', `/mailboxes?address=${OTHER_BOX}`, { key: other.apiKey })).statusCode).toBe(201);
  });
  afterAll(async () => h.close());

  it('lists labels in use with message and unread counts, which follow reads; defined ones show with their colour', async () => {
    const a = await deliver(BOX, 'one');
    const b = await deliver(BOX2, 'two');
    await label(a, ['work', 'urgent']);
    await label(b, ['work']);
    const foreign = await deliver(OTHER_BOX, 'foreign');
    await label(foreign, ['secret'], { key: other.apiKey });

    let list = await labels();
    expect(list.labels).toEqual([
      { name: 'urgent', colour: null, defined: false, messages: 1, unread: 1 },
      { name: 'work', colour: null, defined: false, messages: 2, unread: 2 },
    ]);
    expect(list.unread_capped).toBe(false);
    expect((await labels(key())).labels.map((l) => l.name)).toEqual(['urgent', 'work']);

    await ok(call('POST', `/messages/${b}/read`, ses(), { read: true }));
    list = await labels();
    expect(list.labels.find((l) => l.name === 'work')).toMatchObject({ messages: 2, unread: 1 });

    // Trash does not count as unread (as the folder counts of the sidebar do not).
    await ok(call('POST', `/messages/${a}/move`, ses(), { folder: 'trash' }));
    expect((await labels()).labels.find((l) => l.name === 'urgent')).toMatchObject({ messages: 1, unread: 0 });
    await ok(call('POST', `/messages/${a}/move`, ses(), { folder: 'inbox' }));

    expect(await ok(call('PUT', '/labels/work', ses(), { colour: '#FF8800' }))).toEqual({ name: 'work', colour: '#ff8800' });
    expect(await ok(call('PUT', '/labels/someday', key(), { colour: '#00aa00' }))).toEqual({ name: 'someday', colour: '#00aa00' });
    list = await labels();
    expect(list.labels).toEqual([
      { name: 'someday', colour: '#00aa00', defined: true, messages: 0, unread: 0 },
      { name: 'urgent', colour: null, defined: false, messages: 1, unread: 1 },
      { name: 'work', colour: '#ff8800', defined: true, messages: 2, unread: 1 },
    ]);
    // The other workspace sees neither these labels nor their colours.
    expect((await labels({ key: other.apiKey })).labels).toEqual([{ name: 'secret', colour: null, defined: false, messages: 1, unread: 1 }]);
  });

  it('deletes a label: its colour, and the label off its messages; another workspace\'s label is 404', async () => {
    const c = await deliver(BOX, 'three');
    await label(c, ['gone']);
    await ok(call('PUT', '/labels/gone', ses(), { colour: '#123456' }));
    expect(await ok(call('DELETE', '/labels/gone', ses()))).toEqual({ name: 'gone', removed: 1, remaining: false });
    expect((await ok<{ labels: string[] }>(call('GET', `/messages/${c}`, key()))).labels).toEqual([]);
    expect((await labels()).labels.map((l) => l.name)).not.toContain('gone');

    const missing = await call('DELETE', '/labels/gone', ses());
    expect(missing.statusCode).toBe(404);
    expect(errorOf(missing).error).toBe('label_not_found');
    const foreign = await call('DELETE', '/labels/secret', key());
    expect(foreign.statusCode).toBe(404);
    expect((await labels({ key: other.apiKey })).labels.map((l) => l.name)).toEqual(['secret']);
  });

  it('refuses bad names and colours with 400', async () => {
    for (const [url, body] of [
      ['/labels/Bad%20Name', { colour: '#000000' }],
      ['/labels/ok', { colour: 'red' }],
      ['/labels/ok', { colour: '#00000g' }],
      ['/labels/ok', {}],
      ['/labels/ok', { colour: '#000000', extra: 1 }],
    ] as const) {
      const res = await call('PUT', url, ses(), body);
      expect(res.statusCode, `${url} ${JSON.stringify(body)}`).toBe(400);
    }
    expect((await call('DELETE', `/labels/${'x'.repeat(65)}`, ses())).statusCode).toBe(400);
    expect((await call('GET', '/labels?x=1', ses())).statusCode).toBe(400);
  });

  it('lists starred messages of every mailbox, and every mailbox\'s inbox in one page, each row with its mailbox', async () => {
    const s1 = await deliver(BOX, 'starred one');
    const s2 = await deliver(BOX2, 'starred two');
    await deliver(OTHER_BOX, 'foreign starred');
    for (const id of [s1, s2]) await ok(call('POST', `/messages/${id}/flags`, ses(), { flagged: true }));
    const starred = await ok<Page>(call('GET', '/messages?flagged=true', ses()));
    expect(starred.messages.map((m) => m.message_id)).toEqual([s2, s1]);
    expect(starred.total).toBe(2);
    expect(starred.messages.every((m) => m.flagged)).toBe(true);
    const inBox2 = await ok<Page>(call('GET', `/messages?flagged=true&mailbox=${BOX2}`, ses()));
    expect(inBox2.messages.map((m) => m.message_id)).toEqual([s2]);
    expect((await call('GET', '/messages?flagged=maybe', ses())).statusCode).toBe(400);

    const inboxes = await ok<Page>(call('GET', '/messages?folder=inbox&limit=2', ses()));
    expect(inboxes.messages.map((m) => [m.message_id, m.mailbox])).toEqual([[s2, BOX2], [s1, BOX]]);
    const all = await ok<Page>(call('GET', '/messages?folder=inbox', ses()));
    expect(new Set(all.messages.map((m) => m.mailbox))).toEqual(new Set([BOX, BOX2]));
  });
});
