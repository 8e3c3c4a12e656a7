import PostalMime from 'postal-mime';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { hashToken } from '../src/lib/secrets.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, errorOf, memberSession, session, type Tenant } from './helpers/harness.js';
import type { MailHarness } from './helpers/mail.js';
import type { SmtpPeer } from './helpers/smtp-peer.js';
import { mailWorld } from './helpers/world.js';

interface TokenView {
  token_id: string;
  name: string;
  scope: string;
  domain_id: string;
  mailbox: string;
  created_at: string;
  last_used_at: string | null;
  token?: string;
}

interface StatusView {
  message_id: string;
  status: string;
  idempotency_key: string;
  from_mailbox: string;
  to: string[];
  subject: string;
  attempts: Array<{ outcome: string }>;
  last_error: string | null;
  smtp_response: string | null;
}

describe(`transactional API: service tokens and exactly-once sending (${TEST_DIALECT})`, () => {
  const world = mailWorld();
  let h: MailHarness;
  let peer: SmtpPeer;
  let acme: Tenant;
  let other: Tenant;
  let owner: string;
  let member: string;
  let otherOwner: string;
  let domainId: string;
  let otherDomainId: string;
  let token: TokenView & { token: string };

  /** A sending domain created and verified over the loopback DNS, plus a mailbox in it. */
  async function verifiedDomain(sessionToken: string, domain: string, mailbox: string): Promise<string> {
    const created = await h.app.inject({ method: 'POST', url: '/app/api/sending-domains', headers: session(sessionToken), payload: { domain } });
    expect(created.statusCode).toBe(201);
    const body = created.json<{ domain_id: string; verification: { record_name: string; record_value: string } }>();
    h.dns.set(body.verification.record_name, { TXT: [body.verification.record_value] });
    const verified = await h.app.inject({ method: 'POST', url: `/app/api/sending-domains/${body.domain_id}/verify`, headers: session(sessionToken) });
    expect(verified.json()).toMatchObject({ status: 'verified' });
    const box = await h.app.inject({ method: 'POST', url: '/app/api/mailboxes', headers: session(sessionToken), payload: { address: mailbox } });
    expect(box.statusCode).toBe(201);
    return body.domain_id;
  }

  const createToken = (sessionToken: string, payload: Record<string, unknown>) =>
    h.app.inject({ method: 'POST', url: '/app/api/service-tokens', headers: session(sessionToken), payload });
  const post = (credential: string, key: string | undefined, payload: Record<string, unknown>) =>
    h.app.inject({
      method: 'POST',
      url: '/v1/transactional/messages',
      headers: { ...bearer(credential), ...(key === undefined ? {} : { 'idempotency-key': key }) },
      payload,
    });
  const lookup = (credential: string, url: string) => h.app.inject({ method: 'GET', url, headers: bearer(credential) });
  const message = (extra: Record<string, unknown> = {}) => ({ from_mailbox: 'auth@acme.test', to: 'user@peer.test', subject: 'Your code', body: 'Code: 123456', ...extra });
  /** A transactional message is stored as its workspace's copy in `sent`. */
  const messagesWithSubject = async (subject: string) => (await world.sentMessages(acme)).filter((m) => m.subject === subject).length;

  async function settle(credential: string, id: string, timeoutMs = 10_000): Promise<StatusView> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const view = (await lookup(credential, `/v1/transactional/messages/${id}`)).json<StatusView>();
      if (!['queued', 'processing'].includes(view.status)) return view;
      if (Date.now() > deadline) throw new Error(`message ${id} stuck at ${view.status}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  beforeAll(async () => {
    ({ h, peer } = world);
    acme = await world.tenant('Acme');
    other = await world.tenant('Other');
    owner = (await memberSession(h, acme.workspaceId, 'owner')).token;
    member = (await memberSession(h, acme.workspaceId, 'member')).token;
    otherOwner = (await memberSession(h, other.workspaceId, 'owner')).token;
    domainId = await verifiedDomain(owner, 'acme.test', 'auth@acme.test');
    otherDomainId = await verifiedDomain(otherOwner, 'other.test', 'auth@other.test');
    const created = await createToken(owner, { name: 'login codes', domain_id: domainId, mailbox: 'auth@acme.test' });
    expect(created.statusCode).toBe(201);
    token = created.json<TokenView & { token: string }>();
  });
  beforeEach(() => {
    peer.behaviour = 'accept';
  });

  describe('service tokens', () => {
    it('are created for a verified domain and a mailbox in it, shown once and stored only as a hash', async () => {
      expect(token).toMatchObject({ name: 'login codes', scope: 'message:send', domain_id: domainId, mailbox: 'auth@acme.test', last_used_at: null });
      expect(token.token_id).toMatch(/^tok_/);
      expect(token.token).toMatch(/^mst_/);
      const list = await h.app.inject({ method: 'GET', url: '/app/api/service-tokens', headers: session(owner) });
      expect(list.statusCode).toBe(200);
      const listed = list.json<{ service_tokens: TokenView[] }>().service_tokens.find((t) => t.token_id === token.token_id);
      expect(listed).toMatchObject({ token_id: token.token_id, mailbox: 'auth@acme.test' });
      expect(list.body).not.toContain(token.token);
      expect(listed).not.toHaveProperty('token');
      const one = await h.app.inject({ method: 'GET', url: `/app/api/service-tokens/${token.token_id}`, headers: session(owner) });
      expect(one.json()).not.toHaveProperty('token');
      const row = await h.services.database.db.selectFrom('service_tokens').selectAll().where('id', '=', token.token_id).executeTakeFirstOrThrow();
      expect(row.token_hash).toBe(hashToken(token.token));
      expect(JSON.stringify(row)).not.toContain(token.token);
    });

    it('refuse other scopes, unverified domains and mailboxes outside the domain (400), and members (403)', async () => {
      expect(errorOf(await createToken(owner, { domain_id: domainId, mailbox: 'auth@acme.test', scope: 'message:read' }))).toMatchObject({ status: 400, error: 'invalid_scope' });
      const pending = await h.app.inject({ method: 'POST', url: '/app/api/sending-domains', headers: session(owner), payload: { domain: 'pending.test' } });
      const pendingId = pending.json<{ domain_id: string }>().domain_id;
      expect(errorOf(await createToken(owner, { domain_id: pendingId, mailbox: 'auth@acme.test' }))).toMatchObject({ status: 400, error: 'domain_not_verified' });
      await h.app.inject({ method: 'POST', url: '/app/api/mailboxes', headers: session(owner), payload: { address: 'hosted@mailroom.localhost' } });
      expect(errorOf(await createToken(owner, { domain_id: domainId, mailbox: 'hosted@mailroom.localhost' }))).toMatchObject({ status: 400, error: 'mailbox_not_in_domain' });
      expect(errorOf(await createToken(owner, { domain_id: domainId, mailbox: 'nobody@acme.test' }))).toMatchObject({ status: 400, error: 'mailbox_not_found' });
      // Another workspace's domain is no domain of ours.
      expect(errorOf(await createToken(owner, { domain_id: otherDomainId, mailbox: 'auth@acme.test' }))).toMatchObject({ status: 400, error: 'domain_not_found' });
      expect(errorOf(await createToken(owner, { domain_id: domainId, mailbox: 'auth@acme.test', extra: 1 }))).toMatchObject({ status: 400 });
      expect(errorOf(await createToken(member, { domain_id: domainId, mailbox: 'auth@acme.test' }))).toMatchObject({ status: 403, error: 'forbidden_role' });
      expect(errorOf(await h.app.inject({ method: 'GET', url: '/app/api/service-tokens', headers: session(member) }))).toMatchObject({ status: 403, error: 'forbidden_role' });
      expect(errorOf(await h.app.inject({ method: 'POST', url: `/app/api/service-tokens/${token.token_id}/rotate`, headers: session(member) }))).toMatchObject({ status: 403 });
    });

    it("are invisible to other workspaces (404) and reach only /v1/transactional", async () => {
      for (const [method, url] of [
        ['GET', `/app/api/service-tokens/${token.token_id}`],
        ['POST', `/app/api/service-tokens/${token.token_id}/rotate`],
        ['DELETE', `/app/api/service-tokens/${token.token_id}`],
      ] as const) {
        expect(errorOf(await h.app.inject({ method, url, headers: session(otherOwner) }))).toMatchObject({ status: 404, error: 'service_token_not_found' });
      }
      const theirs = (await h.app.inject({ method: 'GET', url: '/app/api/service-tokens', headers: session(otherOwner) })).json<{ service_tokens: TokenView[] }>();
      expect(theirs.service_tokens.map((t) => t.token_id)).not.toContain(token.token_id);
      // The service token elsewhere: 401 on the API-key surface and as a session.
      expect(errorOf(await h.app.inject({ method: 'GET', url: '/mailboxes', headers: bearer(token.token) })).status).toBe(401);
      expect(errorOf(await h.app.inject({ method: 'POST', url: '/send', headers: bearer(token.token), payload: message() })).status).toBe(401);
      expect(errorOf(await h.app.inject({ method: 'GET', url: '/app/api/mailboxes', headers: session(token.token) })).status).toBe(401);
      // API keys and session tokens on the transactional surface: 401.
      expect(errorOf(await post(acme.apiKey, 'k-api-key', message()))).toMatchObject({ status: 401, error: 'invalid_credential' });
      expect(errorOf(await post(owner, 'k-session', message()))).toMatchObject({ status: 401 });
      expect(errorOf(await h.app.inject({ method: 'POST', url: '/v1/transactional/messages', headers: { ...session(owner), 'idempotency-key': 'k' }, payload: message() }))).toMatchObject({ status: 401, error: 'missing_credential' });
    });
  });

  describe('POST /v1/transactional/messages', () => {
    it('queues one message (202), honours from_name and reply_to, and changes nothing in the body', async () => {
      const html = '<html><body><p>Your code is <b>123456</b>.</p><a href="https://acme.test/verify?c=123456">verify</a></body></html>';
      const res = await post(token.token, 'signup-1', message({ subject: 'Verify your address', html, from_name: 'Acme Security', reply_to: 'help@acme.test' }));
      expect(res.statusCode).toBe(202);
      expect(res.headers['idempotent-replayed']).toBeUndefined();
      const body = res.json<{ message_id: string; status: string }>();
      expect(body).toEqual({ message_id: expect.stringMatching(/^msg_/) as unknown, status: 'queued' });

      const done = await settle(token.token, body.message_id);
      expect(done).toMatchObject({ message_id: body.message_id, status: 'accepted', idempotency_key: 'signup-1', from_mailbox: 'auth@acme.test', to: ['user@peer.test'], subject: 'Verify your address', last_error: null });
      expect(done.smtp_response).toMatch(/^250/);
      expect(done.attempts).toEqual([expect.objectContaining({ outcome: 'sent', response: expect.stringMatching(/^250/) as unknown, mx: expect.stringContaining('mx1.peer.test') as unknown })]);

      const copies = peer.accepted.filter((m) => m.raw.toString().includes(`${body.message_id}@acme.test`));
      expect(copies).toHaveLength(1);
      const parsed = await PostalMime.parse(copies[0]!.raw);
      expect(parsed.from).toMatchObject({ name: 'Acme Security', address: 'auth@acme.test' });
      expect(parsed.replyTo?.[0]).toMatchObject({ address: 'help@acme.test' });
      // No tracking pixel, no link rewriting: the parts arrive exactly as given.
      expect(parsed.html?.trim()).toBe(html);
      expect(parsed.text?.trim()).toBe('Code: 123456');
      // The copy in `sent` with message.sent in the same transaction.
      const sent = await h.app.inject({ method: 'GET', url: '/app/api/sent', headers: session(owner) });
      expect(sent.json<{ messages: Array<{ message_id: string }> }>().messages.map((m) => m.message_id)).toContain(body.message_id);
      const events = world.events('message.sent');
      expect(events.filter((e) => JSON.stringify(e).includes(body.message_id))).toHaveLength(1);
    });

    it('replays the original 202 for the same key and canonical payload, and 409s other content', async () => {
      const first = await post(token.token, 'replay-1', message({ subject: 'Reset your password' }));
      expect(first.statusCode).toBe(202);
      // Same fields in another order: the same canonical payload (RFC 8785).
      const reordered = await post(token.token, 'replay-1', { body: 'Code: 123456', subject: 'Reset your password', to: 'user@peer.test', from_mailbox: 'auth@acme.test' });
      expect(reordered.statusCode).toBe(202);
      expect(reordered.headers['idempotent-replayed']).toBe('true');
      expect(reordered.body).toBe(first.body);
      expect(await messagesWithSubject('Reset your password')).toBe(1);

      const changed = await post(token.token, 'replay-1', message({ subject: 'Reset your password', body: 'Code: 999999' }));
      expect(errorOf(changed)).toMatchObject({ status: 409, error: 'idempotency_key_reused' });
      const added = await post(token.token, 'replay-1', message({ subject: 'Reset your password', html: '<p>x</p>' }));
      expect(errorOf(added)).toMatchObject({ status: 409, error: 'idempotency_key_reused' });
      expect(await messagesWithSubject('Reset your password')).toBe(1);

      // Lookups by key and by id agree.
      const byKey = (await lookup(token.token, '/v1/transactional/messages?idempotency_key=replay-1')).json<StatusView>();
      expect(byKey.message_id).toBe(first.json<{ message_id: string }>().message_id);
      expect(byKey.idempotency_key).toBe('replay-1');
    });

    it('needs a valid Idempotency-Key, the token\'s own mailbox and a valid body', async () => {
      expect(errorOf(await post(token.token, undefined, message()))).toMatchObject({ status: 400, error: 'idempotency_key_required' });
      expect(errorOf(await post(token.token, 'x'.repeat(256), message()))).toMatchObject({ status: 400, error: 'invalid_idempotency_key' });
      expect((await post(token.token, 'y'.repeat(255), message({ subject: 'max key' }))).statusCode).toBe(202);
      expect(errorOf(await post(token.token, 'naïve-key', message()))).toMatchObject({ status: 400, error: 'invalid_idempotency_key' });
      await h.app.inject({ method: 'POST', url: '/app/api/mailboxes', headers: session(owner), payload: { address: 'billing@acme.test' } });
      expect(errorOf(await post(token.token, 'scope-1', message({ from_mailbox: 'billing@acme.test' })))).toMatchObject({ status: 403, error: 'token_scope' });
      expect(errorOf(await post(token.token, 'bad-1', message({ cc: 'x@peer.test' })))).toMatchObject({ status: 400 });
      expect(errorOf(await post(token.token, 'bad-2', { from_mailbox: 'auth@acme.test', to: 'user@peer.test', body: 'no subject' }))).toMatchObject({ status: 400 });
      expect(errorOf(await post(token.token, 'bad-3', message({ to: 'not an address' })))).toMatchObject({ status: 400 });
      expect(errorOf(await post(token.token, 'bad-4', message({ subject: 's'.repeat(999) })))).toMatchObject({ status: 400 });
      // A refused request leaves its key free for the corrected one.
      expect((await post(token.token, 'bad-3', message({ subject: 'corrected' }))).statusCode).toBe(202);
    });

    it('creates exactly one message under 50 concurrent identical requests, all answered with the same 202', async () => {
      const before = peer.accepted.length;
      const answers = await Promise.all(Array.from({ length: 50 }, () => post(token.token, 'burst-1', message({ subject: 'burst', to: 'burst@peer.test' }))));
      expect(answers.map((a) => a.statusCode)).toEqual(Array.from({ length: 50 }, () => 202));
      expect(new Set(answers.map((a) => a.body)).size).toBe(1);
      expect(answers.filter((a) => a.headers['idempotent-replayed'] === 'true')).toHaveLength(49);
      expect(await messagesWithSubject('burst')).toBe(1);
      const id = answers[0]!.json<{ message_id: string }>().message_id;
      expect((await settle(token.token, id)).status).toBe('accepted');
      // One copy at the peer, also after the worker had time to make a mistake.
      await new Promise((r) => setTimeout(r, 200));
      expect(peer.accepted.slice(before).filter((m) => m.recipients.includes('burst@peer.test'))).toHaveLength(1);
    });

    it('answers one 202 and 409 for the rest when different payloads race for one key', async () => {
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => post(token.token, 'race-1', message({ subject: `race ${i}` }))));
      const accepted = answers.filter((a) => a.statusCode === 202);
      expect(accepted).toHaveLength(1);
      expect(answers.filter((a) => a.statusCode === 409).map((a) => errorOf(a).error)).toEqual(Array.from({ length: 19 }, () => 'idempotency_key_reused'));
      const rows = (await world.sentMessages(acme)).filter((m) => m.subject?.startsWith('race ') === true);
      expect(rows).toHaveLength(1);
    });

    it('keeps replays across a rotation; the old credential is 401 at once, a revoked token too', async () => {
      const created = (await createToken(owner, { name: 'rotating', domain_id: domainId, mailbox: 'auth@acme.test' })).json<TokenView & { token: string }>();
      const first = await post(created.token, 'rotate-1', message({ subject: 'before rotation' }));
      expect(first.statusCode).toBe(202);
      const rotated = await h.app.inject({ method: 'POST', url: `/app/api/service-tokens/${created.token_id}/rotate`, headers: session(owner) });
      expect(rotated.statusCode).toBe(200);
      const fresh = rotated.json<TokenView & { token: string }>();
      expect(fresh.token_id).toBe(created.token_id);
      expect(fresh.token).toMatch(/^mst_/);
      expect(fresh.token).not.toBe(created.token);
      expect(errorOf(await post(created.token, 'rotate-2', message()))).toMatchObject({ status: 401, error: 'invalid_credential' });
      const replay = await post(fresh.token, 'rotate-1', message({ subject: 'before rotation' }));
      expect(replay.statusCode).toBe(202);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body).toBe(first.body);
      expect((await lookup(fresh.token, `/v1/transactional/messages/${first.json<{ message_id: string }>().message_id}`)).statusCode).toBe(200);
      // last_used_at is kept.
      const listed = (await h.app.inject({ method: 'GET', url: `/app/api/service-tokens/${created.token_id}`, headers: session(owner) })).json<TokenView>();
      expect(listed.last_used_at).not.toBeNull();

      const deleted = await h.app.inject({ method: 'DELETE', url: `/app/api/service-tokens/${created.token_id}`, headers: session(owner) });
      expect(deleted.json()).toEqual({ ok: true, token_id: created.token_id });
      expect(errorOf(await post(fresh.token, 'rotate-3', message()))).toMatchObject({ status: 401, error: 'invalid_credential' });
      expect(errorOf(await lookup(fresh.token, '/v1/transactional/messages?idempotency_key=rotate-1'))).toMatchObject({ status: 401 });
      expect(errorOf(await h.app.inject({ method: 'DELETE', url: `/app/api/service-tokens/${created.token_id}`, headers: session(owner) }))).toMatchObject({ status: 404 });
    });
  });

  describe('status lookups', () => {
    it("answer only the token's own messages: another token's, another workspace's and unknown ones are 404", async () => {
      const mine = (await post(token.token, 'lookup-1', message({ subject: 'lookup' }))).json<{ message_id: string }>().message_id;
      const second = (await createToken(owner, { name: 'second', domain_id: domainId, mailbox: 'auth@acme.test' })).json<{ token: string }>().token;
      const theirs = (await createToken(otherOwner, { name: 'theirs', domain_id: otherDomainId, mailbox: 'auth@other.test' })).json<{ token: string }>().token;
      expect((await lookup(token.token, `/v1/transactional/messages/${mine}`)).statusCode).toBe(200);
      for (const credential of [second, theirs]) {
        expect(errorOf(await lookup(credential, `/v1/transactional/messages/${mine}`))).toMatchObject({ status: 404, error: 'message_not_found' });
        expect(errorOf(await lookup(credential, '/v1/transactional/messages?idempotency_key=lookup-1'))).toMatchObject({ status: 404 });
      }
      // A key is per token: the other workspace's token may use the same key for its own message.
      const same = await h.app.inject({ method: 'POST', url: '/v1/transactional/messages', headers: { ...bearer(theirs), 'idempotency-key': 'lookup-1' }, payload: { from_mailbox: 'auth@other.test', to: 'user@peer.test', subject: 'theirs', body: 'x' } });
      expect(same.statusCode).toBe(202);
      expect(same.json<{ message_id: string }>().message_id).not.toBe(mine);
      // A message sent through /send is no transactional message.
      const plain = await h.app.inject({ method: 'POST', url: '/send', headers: bearer(acme.apiKey), payload: message({ subject: 'plain' }) });
      expect(errorOf(await lookup(token.token, `/v1/transactional/messages/${plain.json<{ message_id: string }>().message_id}`)).status).toBe(404);
      expect(errorOf(await lookup(token.token, '/v1/transactional/messages/msg_nope'))).toMatchObject({ status: 404 });
      expect(errorOf(await lookup(token.token, '/v1/transactional/messages'))).toMatchObject({ status: 400 });
      expect(errorOf(await lookup(token.token, `/v1/transactional/messages?idempotency_key=${'z'.repeat(256)}`))).toMatchObject({ status: 400 });
    });

    it('report failed with the reply for a 5xx, and never retry it', async () => {
      peer.behaviour = 'reject-data';
      const id = (await post(token.token, 'fail-1', message({ subject: 'refused' }))).json<{ message_id: string }>().message_id;
      const done = await settle(token.token, id);
      expect(done.status).toBe('failed');
      expect(done.last_error).toMatch(/^5\d\d/);
      expect(done.attempts).toHaveLength(1);
    });
  });
});
