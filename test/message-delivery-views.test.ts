import { beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, login, session, type Tenant } from './helpers/harness.js';
import type { MailHarness } from './helpers/mail.js';
import type { SmtpPeer } from './helpers/smtp-peer.js';
import { messageOfReturnPath } from './helpers/reports.js';
import { mailWorld } from './helpers/world.js';

interface View {
  message_id: string;
  direction: string;
  thread_id: string;
  status?: string;
  events?: Array<{ at: string; mx: string | null; recipients: string[]; outcome: string; response: string }>;
}

const SUPPORT = 'helpdesk@mailroom.localhost';
const CUSTOMER = 'customer@peer.test';

/**
 * Outbound messages add `status` and `events` (docs/api.md) in every message view: the single ones, the pages
 * (written by their response schema, some of them kept in the page cache) and the threads' messages; inbound ones have neither.
 */
describe(`delivery status and events in every message view (${TEST_DIALECT})`, () => {
  // No worker at first: the reply stays queued until a test starts one.
  const world = mailWorld({ worker: false });
  let h: MailHarness;
  let peer: SmtpPeer;
  let acme: Tenant;
  let token: string;
  let inboundId: string;
  let sentId: string;
  let threadId: string;

  beforeAll(async () => {
    ({ h, peer } = world);
    acme = await world.tenant('Acme');
    token = await login(h, acme.ownerEmail, acme.password);
    expect((await h.app.inject({ method: 'POST', url: `/mailboxes?address=${SUPPORT}`, headers: bearer(acme.apiKey) })).statusCode).toBe(201);
    inboundId = (await h.send({ from: CUSTOMER, to: SUPPORT, subject: 'Where is my order?', text: 'Order 1234' })).response.match(/msg_[0-9a-z]{26}/)![0];
    // No worker yet: the reply stays queued until the test starts one.
    const sent = await h.app.inject({ method: 'POST', url: '/send', headers: bearer(acme.apiKey), payload: { from_mailbox: SUPPORT, to: CUSTOMER, subject: 'Re: Where is my order?', body: 'It ships today.' } });
    expect(sent.statusCode, sent.body).toBe(202);
    sentId = sent.json<{ message_id: string }>().message_id;
  });

  const get = async <T>(url: string): Promise<T> => {
    const headers = url.startsWith('/app/api/') ? session(token) : bearer(acme.apiKey);
    const res = await h.app.inject({ method: 'GET', url, headers });
    expect(res.statusCode, `${url}: ${res.body}`).toBe(200);
    return res.json<T>();
  };
  const inPage = async (url: string, id: string): Promise<View> => {
    const found = (await get<{ messages: View[] }>(url)).messages.find((m) => m.message_id === id);
    expect(found, `${id} in ${url}`).toBeDefined();
    return found!;
  };

  /** Every view of message `id` there is, by name (`folder`: the folder it is in). */
  async function views(id: string, folder: string): Promise<Array<[string, View]>> {
    return [
      ['GET /messages/{id}', await get<View>(`/messages/${id}`)],
      ['GET /app/api/messages/{id}', await get<View>(`/app/api/messages/${id}`)],
      ['GET /inbox?mailbox= (kept pages)', await inPage(`/inbox?mailbox=${SUPPORT}&folder=${folder}`, id)],
      ['GET /inbox (no mailbox)', await inPage(`/inbox?folder=${folder}`, id)],
      ['GET /app/api/messages?mailbox= (kept pages)', await inPage(`/app/api/messages?mailbox=${SUPPORT}`, id)],
      ['GET /app/api/messages', await inPage('/app/api/messages', id)],
      ['GET /app/api/messages?thread_id=', await inPage(`/app/api/messages?thread_id=${threadId}`, id)],
      ['GET /app/api/messages/{id}/thread', (await get<{ messages: View[] }>(`/app/api/messages/${id}/thread`)).messages.find((m) => m.message_id === id)!],
      ['GET /threads/{id}', (await get<{ messages: View[] }>(`/threads/${threadId}`)).messages.find((m) => m.message_id === id)!],
      ['GET /app/api/threads/{id}', (await get<{ messages: View[] }>(`/app/api/threads/${threadId}`)).messages.find((m) => m.message_id === id)!],
    ];
  }

  it('a queued message shows status queued and no events yet; the message it answers shows neither field', async () => {
    threadId = (await get<View>(`/messages/${sentId}`)).thread_id;
    expect((await get<View>(`/messages/${inboundId}`)).thread_id).toBe(threadId);
    for (const [name, view] of await views(sentId, 'sent')) {
      expect(view, name).toMatchObject({ message_id: sentId, direction: 'outbound', status: 'queued', events: [] });
    }
    // Twice: a page read again while its mailbox is unchanged may come from the page cache.
    for (const [name, view] of await views(sentId, 'sent')) expect(view.status, name).toBe('queued');
    for (const [name, view] of await views(inboundId, 'inbox')) {
      expect(view.direction, name).toBe('inbound');
      expect(Object.keys(view), name).not.toContain('status');
      expect(Object.keys(view), name).not.toContain('events');
    }
  });

  it('once the peer accepted it, every view says accepted and shows the attempt', async () => {
    world.startWorker();
    const deadline = Date.now() + 15_000;
    while ((await get<View>(`/messages/${sentId}`)).status !== 'accepted') {
      if (Date.now() > deadline) throw new Error(`not delivered: ${JSON.stringify(await get<View>(`/messages/${sentId}`))}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(peer.accepted.filter((m) => messageOfReturnPath(h, m.mailFrom) === sentId)).toHaveLength(1);
    for (const [name, view] of await views(sentId, 'sent')) {
      expect(view.status, name).toBe('accepted');
      expect(view.events, name).toEqual([
        { at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) as unknown, mx: expect.stringContaining('mx1.peer.test') as unknown, recipients: [CUSTOMER], outcome: 'sent', response: expect.stringMatching(/^250 /) as unknown, tls: null, mta_sts: null },
      ]);
    }
    // The same events as the sent list's attempts.
    const listed = await inPage('/app/api/sent', sentId);
    expect(listed).toMatchObject({ status: 'accepted', events: (listed as View & { attempts: unknown[] }).attempts });
    for (const [name, view] of await views(inboundId, 'inbox')) expect(Object.keys(view).filter((k) => k === 'status' || k === 'events'), name).toEqual([]);
  });
});
