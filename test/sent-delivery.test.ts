import { beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, login, session, type Tenant } from './helpers/harness.js';
import type { MailHarness } from './helpers/mail.js';
import type { SmtpPeer } from './helpers/smtp-peer.js';
import { mailWorld } from './helpers/world.js';

interface Attempt {
  at: string;
  mx: string | null;
  recipients: string[];
  outcome: string;
  response: string;
}
interface Delivered {
  message_id: string;
  direction: string;
  status?: string;
  events?: Attempt[];
  recipients?: Array<{ address: string; status: string; response: string | null; mx: string | null }>;
  attempts?: Attempt[];
  last_error?: string | null;
}

const NEWS = 'newsletter@mailroom.localhost';
const ANY_DATE = expect.stringMatching(/^\d{4}-\d\d-\d\dT/) as unknown;
const PEER_MX = expect.stringContaining('mx1.peer.test') as unknown;

/**
 * An API key sees what became of its mail. `GET /sent` and the single message view carry the
 * status, each recipient's outcome and the attempts on the API-key surface as on the session one, read from one
 * delivery view; another workspace's sent message is a 404.
 */
describe(`delivery on the API-key surface: GET /sent and the message view (${TEST_DIALECT})`, () => {
  const world = mailWorld();
  let h: MailHarness;
  let peer: SmtpPeer;
  let acme: Tenant;
  let other: Tenant;
  let token: string;

  beforeAll(async () => {
    ({ h, peer } = world);
    peer.refuse.add('gone@peer.test');
    peer.refuse.add('nobody@peer.test');
    acme = await world.tenant('Acme');
    other = await world.tenant('Other');
    token = await login(h, acme.ownerEmail, acme.password);
    for (const [tenant, address] of [[acme, NEWS], [other, 'theirs@mailroom.localhost']] as const) {
      expect((await h.app.inject({ method: 'POST', url: `/mailboxes?address=${address}`, headers: bearer(tenant.apiKey) })).statusCode).toBe(201);
    }
  });

  const get = async <T>(url: string, headers: Record<string, string> = bearer(acme.apiKey)): Promise<T> => {
    const res = await h.app.inject({ method: 'GET', url, headers });
    expect(res.statusCode, `${url}: ${res.body}`).toBe(200);
    return res.json<T>();
  };
  const sentItem = async (id: string, url = '/sent', headers: Record<string, string> = bearer(acme.apiKey)): Promise<Delivered | undefined> =>
    (await get<{ messages: Delivered[] }>(url, headers)).messages.find((m) => m.message_id === id);

  /** Send through the API key and wait, reading GET /sent with the same key, until the delivery is final. */
  async function sendAndSettle(to: string[]): Promise<Delivered> {
    const res = await h.app.inject({ method: 'POST', url: '/send', headers: bearer(acme.apiKey), payload: { from_mailbox: NEWS, to, subject: 'Your order', body: 'It ships today.' } });
    expect(res.statusCode, res.body).toBe(202);
    const id = res.json<{ message_id: string }>().message_id;
    const deadline = Date.now() + 15_000;
    for (;;) {
      const item = await sentItem(id);
      if (item && item.status !== 'queued' && item.status !== 'processing') return item;
      if (Date.now() > deadline) throw new Error(`${id} not delivered: ${JSON.stringify(item)}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  it('GET /sent and GET /messages/{id} show the status, each recipient (a 550 with its reply) and the attempts', async () => {
    const item = await sendAndSettle(['gone@peer.test', 'here@peer.test']);
    const delivery = {
      status: 'accepted',
      recipients: [
        { address: 'gone@peer.test', status: 'failed', response: expect.stringMatching(/^550 /) as unknown, mx: PEER_MX },
        { address: 'here@peer.test', status: 'accepted', response: expect.stringMatching(/^250 /) as unknown, mx: PEER_MX },
      ],
      // One transaction per recipient (each has its own return path).
      attempts: [
        { at: ANY_DATE, mx: PEER_MX, recipients: ['gone@peer.test'], outcome: 'rejected', response: expect.stringMatching(/^550 /) as unknown },
        { at: ANY_DATE, mx: PEER_MX, recipients: ['here@peer.test'], outcome: 'sent', response: expect.stringMatching(/^250 /) as unknown },
      ],
      last_error: null,
    };
    expect(item).toMatchObject({ direction: 'outbound', ...delivery });
    expect(peer.accepted.filter((m) => m.recipients.includes('here@peer.test'))).toHaveLength(1);

    // The single view, on both surfaces, and the session's list say the same, in the same words.
    const views: Array<[string, Delivered | undefined]> = [
      ['GET /messages/{id}', await get<Delivered>(`/messages/${item.message_id}`)],
      ['GET /app/api/messages/{id}', await get<Delivered>(`/app/api/messages/${item.message_id}`, session(token))],
      ['GET /app/api/sent', await sentItem(item.message_id, '/app/api/sent', session(token))],
      ['GET /sent?mailbox=', await sentItem(item.message_id, `/sent?mailbox=${NEWS}`)],
    ];
    for (const [name, view] of views) {
      expect(view, name).toMatchObject(delivery);
      expect({ recipients: view?.recipients, attempts: view?.attempts, last_error: view?.last_error }, name).toEqual({ recipients: item.recipients, attempts: item.attempts, last_error: item.last_error });
      // `attempts` are the `events` every view of an outbound message has (decision 215).
      expect(view?.events, name).toEqual(item.attempts);
    }
  });

  it('a message whose every recipient was refused is failed, with the reply as its last error', async () => {
    const item = await sendAndSettle(['nobody@peer.test']);
    expect(item).toMatchObject({ status: 'failed', recipients: [{ address: 'nobody@peer.test', status: 'failed', response: expect.stringMatching(/^550 /) as unknown }] });
    expect(item.last_error).toMatch(/^550 /);
    expect(await get<Delivered>(`/messages/${item.message_id}`)).toMatchObject({ status: 'failed', last_error: item.last_error, recipients: item.recipients });
  });

  it('an inbound message has no delivery fields; another workspace sees none of it', async () => {
    const info = await h.send({ from: 'customer@peer.test', to: NEWS, subject: 'Where is it?', text: 'Order 1234' });
    const inbound = /msg_[0-9a-z]{26}/.exec(info.response)![0];
    const view = await get<Record<string, unknown>>(`/messages/${inbound}`);
    for (const field of ['status', 'events', 'recipients', 'attempts', 'last_error']) expect(Object.keys(view)).not.toContain(field);

    const ours = (await get<{ messages: Delivered[]; total: number }>('/sent')).messages;
    expect(ours.length).toBe(2);
    const theirs = await h.app.inject({ method: 'GET', url: `/messages/${ours[0]!.message_id}`, headers: bearer(other.apiKey) });
    expect(theirs.statusCode).toBe(404);
    expect(theirs.json()).toMatchObject({ error: 'message_not_found' });
    expect(await get<{ messages: unknown[]; total: number }>('/sent', bearer(other.apiKey))).toEqual({ messages: [], total: 0, limit: 50, offset: 0 });
    const foreignMailbox = await h.app.inject({ method: 'GET', url: '/sent?mailbox=theirs@mailroom.localhost', headers: bearer(acme.apiKey) });
    expect(foreignMailbox.statusCode).toBe(404);
    expect(foreignMailbox.json()).toMatchObject({ error: 'mailbox_not_found' });
  });

  it('GET /sent checks its query and its credential like every API-key route, and is in the OpenAPI document', async () => {
    const bad = await h.app.inject({ method: 'GET', url: '/sent?folder=inbox', headers: bearer(acme.apiKey) });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ error: 'invalid_request', detail: "querystring has an unknown field 'folder'" });
    expect((await h.app.inject({ method: 'GET', url: '/sent?limit=0', headers: bearer(acme.apiKey) })).statusCode).toBe(400);
    expect((await h.app.inject({ method: 'GET', url: '/sent' })).json()).toMatchObject({ error: 'missing_credential' });
    expect((await h.app.inject({ method: 'GET', url: '/sent', headers: session(token) })).statusCode).toBe(401);

    const doc = await get<{ paths: Record<string, Record<string, { operationId?: string; responses: Record<string, unknown> }>> }>('/openapi.json', {});
    expect(doc.paths['/sent']?.get?.operationId).toBe('listSent');
    expect(doc.paths['/app/api/sent']?.get?.operationId).toBe('appListSent');
    expect(Object.keys(doc.paths['/sent']?.get?.responses ?? {})).toContain('200');
  });
});
