import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, errorOf, memberSession, session, type Tenant } from './helpers/harness.js';
import type { MailHarness } from './helpers/mail.js';
import { arf, dsn } from './helpers/reports.js';
import type { SmtpPeer } from './helpers/smtp-peer.js';
import { mailWorld } from './helpers/world.js';

const FROM = 'sender@mailroom.localhost';

interface Suppression {
  address: string;
  reason: string;
  detail: string | null;
  status_code: string | null;
  message_id: string | null;
  created_at: string;
}

describe(`suppressions (${TEST_DIALECT})`, () => {
  const world = mailWorld({ mx: [], a: ['peer.test'] });
  let h: MailHarness;
  let peer: SmtpPeer;
  let acme: Tenant;
  let other: Tenant;
  let owner: string;
  let member: string;
  let otherOwner: string;

  beforeAll(async () => {
    ({ h, peer } = world);
    acme = await world.tenant('Acme');
    other = await world.tenant('Other');
    owner = (await memberSession(h, acme.workspaceId, 'owner')).token;
    member = (await memberSession(h, acme.workspaceId, 'member')).token;
    otherOwner = (await memberSession(h, other.workspaceId, 'owner')).token;
    await h.app.inject({ method: 'POST', url: `/mailboxes?address=${FROM}`, headers: bearer(acme.apiKey) });
    await h.app.inject({ method: 'POST', url: '/mailboxes?address=other@mailroom.localhost', headers: bearer(other.apiKey) });
  });
  beforeEach(() => {
    peer.behaviour = 'accept';
    peer.refuse.clear();
  });

  const send = (to: string | string[], apiKey = acme.apiKey, from = FROM) =>
    h.app.inject({ method: 'POST', url: '/send', headers: bearer(apiKey), payload: { from_mailbox: from, to, subject: 'Hi', body: 'hello' } });
  const app = (method: 'GET' | 'POST' | 'DELETE', url: string, token = member, payload?: Record<string, unknown>) =>
    h.app.inject({ method, url: `/app/api${url}`, headers: session(token), ...(payload ? { payload } : {}) });
  const suppression = (address: string, token = member) => app('GET', `/suppressions/${encodeURIComponent(address)}`, token);

  /** Wait until the worker settled the message (any final status). */
  async function settled(id: string): Promise<{ status: string; recipients: Array<{ address: string; status: string }> }> {
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const view = await world.message(acme, id);
      if (view?.status !== undefined && view.status !== 'queued' && view.status !== 'processing') return { status: view.status, recipients: view.recipients ?? [] };
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`message ${id} not settled`);
  }
  async function sendAndDeliver(to: string | string[]): Promise<string> {
    const res = await send(to);
    expect(res.statusCode).toBe(202);
    const id = res.json<{ message_id: string }>().message_id;
    await settled(id);
    return id;
  }
  const events = async (type: string, messageId: string) => Promise.resolve(world.events(type).filter((e) => e.data.message_id === messageId));

  describe('added automatically', () => {
    it('a DSN with a 5.x.x status suppresses its recipient; message.bounced says so, with the status', async () => {
      const id = await sendAndDeliver('lost@peer.test');
      const verp = h.services.returnPaths.address(id, 0);
      await h.sendRaw(dsn(verp, 'lost@peer.test'), { from: '', to: [verp] });
      const [bounced] = await events('message.bounced', id);
      expect(bounced).toMatchObject({ workspace_id: acme.workspaceId, data: { recipient: 'lost@peer.test', reason: 'smtp; 550 5.1.1 mailbox unavailable', status: '5.1.1', status_code: '5.1.1', suppressed: true, delivery_status: 'accepted' } });
      const found = await suppression('lost@peer.test');
      expect(found.statusCode).toBe(200);
      expect(found.json()).toEqual({ address: 'lost@peer.test', reason: 'hard_bounce', detail: 'smtp; 550 5.1.1 mailbox unavailable', status_code: '5.1.1', message_id: id, created_at: expect.any(String) as unknown });
    });

    it('a 4.x.x DSN (a soft bounce) is a message.bounced that suppresses nothing', async () => {
      const id = await sendAndDeliver('full@peer.test');
      const verp = h.services.returnPaths.address(id, 0);
      await h.sendRaw(dsn(verp, 'full@peer.test', '4.2.2', 'smtp; 452 4.2.2 mailbox full'), { from: '', to: [verp] });
      const [bounced] = await events('message.bounced', id);
      expect(bounced!.data).toMatchObject({ recipient: 'full@peer.test', status: '4.2.2', suppressed: false });
      expect(errorOf(await suppression('full@peer.test'))).toMatchObject({ status: 404, error: 'suppression_not_found' });
      expect((await send('full@peer.test')).statusCode).toBe(202);
    });

    it('an ARF complaint suppresses the complainer', async () => {
      const id = await sendAndDeliver('annoyed@peer.test');
      const verp = h.services.returnPaths.address(id, 0);
      await h.sendRaw(arf(verp, 'annoyed@peer.test'), { from: 'feedback@isp.test', to: [verp] });
      const [complained] = await events('message.complained', id);
      expect(complained!.data).toMatchObject({ recipient: 'annoyed@peer.test', reason: 'abuse', status: null, suppressed: true, delivery_status: 'accepted' });
      expect((await suppression('annoyed@peer.test')).json()).toMatchObject({ reason: 'complaint', detail: 'abuse', status_code: null, message_id: id });
    });

    it('a 550 at RCPT TO suppresses the refused recipient, with message.failed and message.bounced; the others get the message', async () => {
      peer.refuse.add('gone@peer.test');
      const id = await sendAndDeliver(['gone@peer.test', 'here@peer.test']);
      const outcome = await settled(id);
      expect(outcome.recipients).toEqual([expect.objectContaining({ address: 'gone@peer.test', status: 'failed' }), expect.objectContaining({ address: 'here@peer.test', status: 'accepted' })]);
      expect((await events('message.failed', id)).map((e) => e.data.recipient)).toEqual(['gone@peer.test']);
      const [bounced] = await events('message.bounced', id);
      expect(bounced!.data).toMatchObject({ recipient: 'gone@peer.test', status: '5.1.1', status_code: '5.1.1', suppressed: true, delivery_status: 'accepted' });
      expect(bounced!.data.reason).toMatch(/^550 5\.1\.1 /);
      expect((await suppression('gone@peer.test')).json()).toMatchObject({ reason: 'hard_bounce', status_code: '5.1.1', message_id: id, detail: expect.stringMatching(/^550 5\.1\.1 /) as unknown });
      expect(errorOf(await suppression('here@peer.test'))).toMatchObject({ status: 404 });
    });

    it('a 550 at RCPT TO of the only recipient (the whole transaction refused) suppresses it too', async () => {
      peer.refuse.add('alone@peer.test');
      const id = await sendAndDeliver('alone@peer.test');
      expect((await settled(id)).status).toBe('failed');
      expect((await suppression('alone@peer.test')).json()).toMatchObject({ reason: 'hard_bounce', message_id: id });
    });

    it('a 5xx to the message itself (after DATA) fails it but suppresses nobody (decision 331)', async () => {
      peer.behaviour = 'reject-data';
      const id = await sendAndDeliver('content@peer.test');
      expect((await settled(id)).status).toBe('failed');
      expect(await events('message.bounced', id)).toHaveLength(0);
      expect(errorOf(await suppression('content@peer.test'))).toMatchObject({ status: 404 });
    });
  });

  describe('applied to sends', () => {
    beforeAll(async () => {
      expect((await app('POST', '/suppressions', owner, { address: 'blocked@peer.test', detail: 'asked us to stop' })).statusCode).toBe(201);
    });

    it('a send to a suppressed address answers 422 recipient_suppressed naming it, and stores nothing', async () => {
      const before = peer.received.length;
      const res = await send('Blocked@Peer.test');
      expect(errorOf(res)).toMatchObject({ status: 422, error: 'recipient_suppressed' });
      expect(res.json<{ detail: string; suppressed: string[] }>()).toMatchObject({ detail: expect.stringContaining('blocked@peer.test') as unknown, suppressed: ['blocked@peer.test'] });
      const session422 = await app('POST', '/send', member, { from_mailbox: FROM, to: 'blocked@peer.test', subject: 'Hi', body: 'x' });
      expect(errorOf(session422)).toMatchObject({ status: 422, error: 'recipient_suppressed' });
      const stored = (await world.sentMessages(acme)).filter((m) => JSON.stringify(m.to).includes('blocked@peer.test'));
      expect(stored).toHaveLength(0);
      expect(peer.received.length).toBe(before);
    });

    it('among several recipients, a suppressed one is left out and the 202 says so; the peer gets only the others', async () => {
      const res = await send(['blocked@peer.test', 'friend@peer.test']);
      expect(res.statusCode).toBe(202);
      const body = res.json<{ message_id: string; status: string; suppressed: string[] }>();
      expect(body).toEqual({ message_id: expect.any(String) as unknown, status: 'queued', suppressed: ['blocked@peer.test'] });
      const outcome = await settled(body.message_id);
      expect(outcome.recipients.map((r) => r.address)).toEqual(['friend@peer.test']);
      const received = peer.accepted.filter((m) => m.raw.toString().includes(body.message_id));
      expect(received.map((m) => m.recipients)).toEqual([['friend@peer.test']]);
      // The headers keep what the sender wrote (decision 333).
      expect(received[0]!.raw.toString()).toMatch(/^To: .*blocked@peer\.test/m);
      const clean = await send('friend@peer.test');
      expect(clean.json()).not.toHaveProperty('suppressed');
    });

    it('a draft to a suppressed address is refused and kept', async () => {
      const draft = (await app('POST', '/drafts', member, { mailbox: FROM, to: 'blocked@peer.test', subject: 'Draft', body: 'x' })).json<{ draft_id: string }>();
      expect(errorOf(await app('POST', `/drafts/${draft.draft_id}/send`))).toMatchObject({ status: 422, error: 'recipient_suppressed' });
      expect((await app('GET', `/drafts/${draft.draft_id}`)).statusCode).toBe(200);
      const mixed = (await app('POST', '/drafts', member, { mailbox: FROM, to: 'blocked@peer.test, pal@peer.test', subject: 'Draft', body: 'x' })).json<{ draft_id: string }>();
      const sent = await app('POST', `/drafts/${mixed.draft_id}/send`);
      expect(sent.statusCode).toBe(202);
      expect(sent.json()).toMatchObject({ suppressed: ['blocked@peer.test'] });
    });

    it('transactional: all suppressed is 422 and leaves the Idempotency-Key free; some suppressed is a 202 that says so, replayed alike', async () => {
      const created = (await app('POST', '/sending-domains', owner, { domain: 'acme.test' })).json<{ domain_id: string; verification: { record_name: string; record_value: string } }>();
      h.dns.set(created.verification.record_name, { TXT: [created.verification.record_value] });
      expect((await app('POST', `/sending-domains/${created.domain_id}/verify`, owner)).json()).toMatchObject({ status: 'verified' });
      expect((await app('POST', '/mailboxes', owner, { address: 'auth@acme.test' })).statusCode).toBe(201);
      const token = (await app('POST', '/service-tokens', owner, { name: 'codes', domain_id: created.domain_id, mailbox: 'auth@acme.test' })).json<{ token: string }>().token;
      const post = (key: string, to: string | string[]) =>
        h.app.inject({ method: 'POST', url: '/v1/transactional/messages', headers: { ...bearer(token), 'idempotency-key': key }, payload: { from_mailbox: 'auth@acme.test', to, subject: 'Code', body: '123456' } });
      expect(errorOf(await post('k-1', 'blocked@peer.test'))).toMatchObject({ status: 422, error: 'recipient_suppressed' });
      // The refused key was not claimed: the corrected request under the same key is a first answer, not a 409.
      const first = await post('k-1', ['blocked@peer.test', 'user@peer.test']);
      expect(first.statusCode).toBe(202);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      expect(first.json()).toMatchObject({ status: 'queued', suppressed: ['blocked@peer.test'] });
      const replay = await post('k-1', ['blocked@peer.test', 'user@peer.test']);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body).toBe(first.body);
    });

    it("another workspace's suppression is invisible (404) and not applied", async () => {
      expect(errorOf(await suppression('blocked@peer.test', otherOwner))).toMatchObject({ status: 404, error: 'suppression_not_found' });
      expect(errorOf(await app('DELETE', '/suppressions/blocked@peer.test', otherOwner))).toMatchObject({ status: 404, error: 'suppression_not_found' });
      expect((await app('GET', '/suppressions', otherOwner)).json()).toMatchObject({ suppressions: [], total: 0 });
      const theirs = await send('blocked@peer.test', other.apiKey, 'other@mailroom.localhost');
      expect(theirs.statusCode).toBe(202);
      expect(theirs.json()).not.toHaveProperty('suppressed');
      // And theirs do not apply here.
      expect((await app('POST', '/suppressions', otherOwner, { address: 'theirs@peer.test' })).statusCode).toBe(201);
      expect((await send('theirs@peer.test')).statusCode).toBe(202);
    });

    it('DELETE lifts a suppression: the address can be sent to again', async () => {
      expect((await app('POST', '/suppressions', member, { address: 'lifted@peer.test' })).statusCode).toBe(201);
      expect(errorOf(await send('lifted@peer.test'))).toMatchObject({ status: 422 });
      const removed = await app('DELETE', `/suppressions/${encodeURIComponent('Lifted@peer.test')}`);
      expect(removed.statusCode).toBe(200);
      expect(removed.json()).toEqual({ ok: true, address: 'lifted@peer.test' });
      expect((await send('lifted@peer.test')).statusCode).toBe(202);
      expect(errorOf(await app('DELETE', '/suppressions/lifted@peer.test'))).toMatchObject({ status: 404, error: 'suppression_not_found' });
    });
  });

  describe('managed by hand', () => {
    it('POST adds a manual entry (201); again, or for an address suppressed by a bounce, answers 200 with the entry unchanged', async () => {
      const created = await app('POST', '/suppressions', member, { address: ' Manual@Peer.test ', detail: 'unsubscribed by phone' });
      expect(created.statusCode).toBe(201);
      const entry = created.json<Suppression>();
      expect(entry).toEqual({ address: 'manual@peer.test', reason: 'manual', detail: 'unsubscribed by phone', status_code: null, message_id: null, created_at: new Date(h.clock.now()).toISOString() });
      h.clock.advance(1000);
      const again = await app('POST', '/suppressions', member, { address: 'manual@peer.test', detail: 'other note' });
      expect(again.statusCode).toBe(200);
      expect(again.json()).toEqual(entry);
      const bounced = await app('POST', '/suppressions', member, { address: 'lost@peer.test' });
      expect(bounced.statusCode).toBe(200);
      expect(bounced.json()).toMatchObject({ reason: 'hard_bounce', status_code: '5.1.1' });
    });

    it('lists newest first, filters by reason, pages', async () => {
      h.clock.advance(1000);
      await app('POST', '/suppressions', member, { address: 'newest@peer.test' });
      const all = (await app('GET', '/suppressions')).json<{ suppressions: Suppression[]; total: number }>();
      expect(all.suppressions[0]!.address).toBe('newest@peer.test');
      expect(all.total).toBe(all.suppressions.length);
      const times = all.suppressions.map((s) => s.created_at);
      expect([...times].sort().reverse()).toEqual(times);
      const complaints = (await app('GET', '/suppressions?reason=complaint')).json<{ suppressions: Suppression[]; total: number }>();
      expect(complaints.suppressions.map((s) => s.address)).toEqual(['annoyed@peer.test']);
      expect(complaints.total).toBe(1);
      const page = (await app('GET', '/suppressions?limit=1&offset=1')).json<{ suppressions: Suppression[]; limit: number; offset: number }>();
      expect(page).toMatchObject({ limit: 1, offset: 1, suppressions: [all.suppressions[1]] });
    });

    it('bad input is a 400 naming the field', async () => {
      expect(errorOf(await app('POST', '/suppressions', member, { address: 'not-an-address' }))).toMatchObject({ status: 400, error: 'invalid_address' });
      expect(errorOf(await app('POST', '/suppressions', member, { detail: 'x' }))).toMatchObject({ status: 400, detail: expect.stringContaining('address') as unknown });
      expect(errorOf(await app('POST', '/suppressions', member, { address: 'a@peer.test', detail: 'x'.repeat(501) }))).toMatchObject({ status: 400, detail: expect.stringContaining('detail') as unknown });
      expect(errorOf(await app('GET', '/suppressions?reason=bored'))).toMatchObject({ status: 400, detail: expect.stringContaining('reason') as unknown });
      // Not an address: no such entry, as the lists answer an entry that cannot exist.
      expect(errorOf(await app('GET', '/suppressions/nobody'))).toMatchObject({ status: 404, error: 'suppression_not_found' });
      expect(errorOf(await app('GET', '/suppressions', ''))).toMatchObject({ status: 401 });
    });
  });
});
