import type { LightMyRequestResponse } from 'fastify';
import type Mail from 'nodemailer/lib/mailer/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, errorOf, login, session, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';

interface FolderThread {
  thread_id: string;
  message_count: number;
  unread_count: number;
  in_folder: { folder: string; message_count: number; unread_count: number; senders: Array<{ name: string; address: string }>; message_id: string; last_message_at: string; snippet: string };
}
interface Page {
  threads: FolderThread[];
  total: number;
}

describe(`threads of a folder (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let acme: Tenant;
  let other: Tenant;
  let token: string;
  const BOX = 'desk@mailroom.localhost';
  const OTHER = 'other-desk@mailroom.localhost';

  const get = (url: string, t: Tenant | string): Promise<LightMyRequestResponse> =>
    h.app.inject({ method: 'GET', url: typeof t === 'string' ? `/app/api${url}` : url, headers: typeof t === 'string' ? session(t) : bearer(t.apiKey) });
  const page = async (url: string, t: Tenant | string): Promise<Page> => {
    const res = await get(url, t);
    expect(res.statusCode, res.body).toBe(200);
    return res.json<Page>();
  };
  const deliver = async (message: Mail.Options): Promise<string> => {
    h.clock.advance(1000);
    return /Stored as (msg_\w+)/.exec((await h.send(message)).response)![1]!;
  };
  const move = async (id: string, folder: string) =>
    expect((await h.app.inject({ method: 'POST', url: `/messages/${id}/move`, headers: bearer(acme.apiKey), payload: { folder } })).statusCode).toBe(200);
  const inbox = (box = BOX, t: Tenant | string = acme) => page(`/threads?mailbox=${box}&folder=inbox`, t);

  const ids: Record<string, string> = {};
  beforeAll(async () => {
    h = await startMailHarness();
    acme = await createTenant(h, 'Acme');
    other = await createTenant(h, 'Other');
    token = await login(h, acme.ownerEmail, acme.password);
    for (const [t, address] of [[acme, BOX], [other, OTHER]] as const) {
      expect((await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(t.apiKey), payload: { address } })).statusCode).toBe(201);
    }
    ids.order1 = await deliver({ from: 'Alice Example <alice@sender.test>', to: BOX, subject: 'Order 1234', text: 'where is it', messageId: '<o1@sender.test>' });
    ids.lunch = await deliver({ from: 'bob@sender.test', to: BOX, subject: 'Lunch', text: 'noon?' });
    ids.order2 = await deliver({ from: 'Carol <carol@sender.test>', to: BOX, subject: 'Re: Order 1234', text: 'the receipt', messageId: '<o2@sender.test>', inReplyTo: '<o1@sender.test>' });
    ids.foreign = await deliver({ from: 'alice@sender.test', to: OTHER, subject: 'Order 1234', text: 'elsewhere' });
  });
  afterAll(async () => h.close());

  it('lists one row per thread, by its newest message in the folder, with that folder\'s share', async () => {
    for (const credential of [acme, token] as const) {
      const p = await inbox(BOX, credential);
      expect(p.total).toBe(2);
      expect(p.threads.map((t) => t.in_folder.snippet)).toEqual(['the receipt', 'noon?']);
      const order = p.threads[0]!;
      expect(order.in_folder).toMatchObject({ folder: 'inbox', message_count: 2, unread_count: 2, message_id: ids.order2 });
      expect(order.in_folder.senders).toEqual([{ name: 'Alice Example', address: 'alice@sender.test' }, { name: 'Carol', address: 'carol@sender.test' }]);
    }
    expect((await page(`/threads?mailbox=${BOX}`, acme)).threads.every((t) => !('in_folder' in t))).toBe(true);
  });

  it('follows a message that moves: its thread shows in both folders, each with its own share', async () => {
    await move(ids.order2!, 'archive');
    const p = await inbox();
    // The order thread's newest inbox message is now the first one, older than lunch.
    expect(p.threads.map((t) => [t.in_folder.message_id, t.in_folder.message_count])).toEqual([[ids.lunch, 1], [ids.order1, 1]]);
    expect(p.threads[1]!.message_count).toBe(2);
    const archive = await page(`/threads?mailbox=${BOX}&folder=archive`, token);
    expect(archive.total).toBe(1);
    expect(archive.threads[0]!.in_folder).toMatchObject({ message_id: ids.order2, message_count: 1, snippet: 'the receipt' });
    await move(ids.order2!, 'inbox');
    expect((await inbox()).threads.map((t) => t.in_folder.message_count)).toEqual([2, 1]);
    expect((await page(`/threads?mailbox=${BOX}&folder=archive`, acme)).total).toBe(0);
  });

  it('counts unread messages of the folder only', async () => {
    expect((await h.app.inject({ method: 'POST', url: `/messages/${ids.order1}/read`, headers: bearer(acme.apiKey), payload: { read: true } })).statusCode).toBe(200);
    expect((await inbox()).threads[0]!.in_folder.unread_count).toBe(1);
  });

  it('pages by limit and offset', async () => {
    const first = await page(`/threads?mailbox=${BOX}&folder=inbox&limit=1`, acme);
    const second = await page(`/threads?mailbox=${BOX}&folder=inbox&limit=1&offset=1`, acme);
    expect([first.total, second.total]).toEqual([2, 2]);
    expect([...first.threads, ...second.threads].map((t) => t.in_folder.message_id)).toEqual([ids.order2, ids.lunch]);
  });

  it("never shows another workspace's threads", async () => {
    const all = await page('/threads?folder=inbox', acme);
    expect(all.threads.map((t) => t.in_folder.message_id)).not.toContain(ids.foreign);
    expect(all.total).toBe(2);
    expect(errorOf(await get(`/threads?mailbox=${OTHER}&folder=inbox`, acme))).toMatchObject({ status: 404, error: 'mailbox_not_found' });
    expect(errorOf(await get(`/threads?mailbox=${OTHER}&folder=inbox`, token))).toMatchObject({ status: 404, error: 'mailbox_not_found' });
    const theirs = await inbox(OTHER, other);
    expect(theirs.threads.map((t) => t.in_folder.message_id)).toEqual([ids.foreign]);
  });

  it('refuses an unknown folder, and folder with q or label', async () => {
    expect(errorOf(await get(`/threads?mailbox=${BOX}&folder=nope`, token))).toMatchObject({ status: 400, error: 'invalid_folder' });
    for (const query of ['folder=inbox&q=order', 'folder=inbox&label=x']) {
      expect(errorOf(await get(`/threads?mailbox=${BOX}&${query}`, token)), query).toMatchObject({ status: 400, error: 'invalid_request' });
    }
  });
});
