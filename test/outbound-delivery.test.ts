import { authenticate } from 'mailauth';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDnsResolver } from '../src/lib/dns.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, errorOf, memberSession, session, type Tenant } from './helpers/harness.js';
import type { MailHarness } from './helpers/mail.js';
import type { SmtpPeer } from './helpers/smtp-peer.js';
import { messageOfReturnPath } from './helpers/reports.js';
import { mailWorld } from './helpers/world.js';

import type { MessageView } from './helpers/world.js';

type Outbound = MessageView & { status: string; recipients: NonNullable<MessageView['recipients']>; attempts: NonNullable<MessageView['attempts']> };

describe(`outbound delivery (${TEST_DIALECT})`, () => {
  // Two receiving domains whose MX is the loopback peer (one by its A record: no MX, implicit MX); a third with a null MX.
  const world = mailWorld({ env: { MAILROOM_DELIVERY_RETRY_BASE_MS: '60000' }, mx: ['peer.test'], a: ['second.test'] });
  let h: MailHarness;
  let peer: SmtpPeer;
  let acme: Tenant;
  let other: Tenant;
  let publicKey: string;

  beforeAll(async () => {
    ({ h, peer } = world);
    world.dns('nomail.test', { MX: [{ exchange: '.', priority: 0 }] });
    publicKey = (await h.services.domains.hostedKey()).publicKey;
    world.dns('mailroom._domainkey.mailroom.localhost', { TXT: [`v=DKIM1; k=rsa; p=${publicKey}`] });
    acme = await world.tenant('Acme', ['newsletter@mailroom.localhost']);
    other = await world.tenant('Other', ['theirs@mailroom.localhost']);
  });
  beforeEach(() => {
    peer.behaviour = 'accept';
    peer.refuse.clear();
  });

  const send = (body: Record<string, unknown>, key = acme.apiKey) => h.app.inject({ method: 'POST', url: '/send', headers: bearer(key), payload: { from_mailbox: 'newsletter@mailroom.localhost', subject: 'Hi', body: 'Hello', ...body } });
  /** The delivery as the API shows it (GET /messages/{id}). */
  const outbound = async (id: string) => (await world.message(acme, id)) as Outbound;
  async function settle(id: string, until: (o: Outbound) => boolean = (o) => !['queued', 'processing'].includes(o.status), timeoutMs = 10_000): Promise<Outbound> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const row = await outbound(id);
      if (until(row)) return row;
      if (Date.now() > deadline) throw new Error(`outbound ${id} stuck at ${row.status}: ${JSON.stringify(row.attempts)}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  const eventsOf = async (type: string, id: string) => Promise.resolve(world.events(type).filter((e) => e.data.message_id === id));

  it('delivers by MX, DKIM-signed, one transaction per recipient, each with its own VERP return path', async () => {
    const res = await send({ to: 'a@peer.test, b@peer.test , c@second.test', subject: 'Quarterly numbers', html: '<p>Hello</p>', from_name: 'Acme News', reply_to: 'replies@acme.example' });
    expect(res.statusCode).toBe(202);
    const { message_id: id, status } = res.json<{ message_id: string; status: string }>();
    expect(status).toBe('queued');
    const done = await settle(id);
    expect(done.status).toBe('accepted');

    const mine = peer.accepted.filter((m) => messageOfReturnPath(h, m.mailFrom) === id);
    const paths = [0, 1, 2].map((n) => h.services.returnPaths.address(id, n));
    expect(mine.map((m) => [m.mailFrom, m.recipients]).sort()).toEqual([[paths[0], ['a@peer.test']], [paths[1], ['b@peer.test']], [paths[2], ['c@second.test']]].sort());

    // The signature verifies independently (mailauth, the loopback DNS holding the published key).
    const verdict = await authenticate(mine[0]!.raw, { ip: '127.0.0.1', helo: 'mx.mailroom.test', sender: mine[0]!.mailFrom, resolver: createDnsResolver([h.dns.address]) as never, disableArc: true, disableBimi: true });
    const dkim = (verdict.dkim as { results: Array<{ status: { result: string }; signingDomain: string }> }).results[0]!;
    expect(dkim.status.result).toBe('pass');
    expect(dkim.signingDomain).toBe('mailroom.localhost');
    const raw = mine[0]!.raw.toString();
    expect(raw).toMatch(/^DKIM-Signature: /);
    expect(raw).toContain('From: Acme News <newsletter@mailroom.localhost>');
    expect(raw).toContain('Reply-To: replies@acme.example');
    expect(raw).toContain(`Message-ID: <${id}@mailroom.localhost>`);

    const recipients = done.recipients;
    expect(recipients.map((r) => [r.address, r.status])).toEqual([['a@peer.test', 'accepted'], ['b@peer.test', 'accepted'], ['c@second.test', 'accepted']]);
    expect(recipients[0]!.mx).toBe(`mx1.peer.test [127.0.0.1]:${peer.port}`);
    expect(done.attempts.length).toBe(3);

    expect(await eventsOf('message.sent', id)).toHaveLength(1);
    // Still one per recipient domain, naming the domain's recipients together.
    expect((await eventsOf('message.accepted', id)).map((e) => e.data.recipients)).toEqual(expect.arrayContaining([['a@peer.test', 'b@peer.test'], ['c@second.test']]));
    expect(await eventsOf('message.accepted', id)).toHaveLength(2);
    // The copy in `sent`, with its status, on the session surface.
    const token = (await memberSession(h, acme.workspaceId, 'member')).token;
    const sent = await h.app.inject({ method: 'GET', url: '/app/api/sent', headers: session(token) });
    const item = sent.json<{ messages: Array<{ message_id: string; folder: string; direction: string; status: string }> }>().messages.find((m) => m.message_id === id);
    expect(item).toMatchObject({ folder: 'sent', direction: 'outbound', status: 'accepted' });
  });
  it("tries a domain whose host takes no connection once for all its recipients, not once per recipient's return path", async () => {
    // Nothing listens on 127.0.0.2 (the peer is on 127.0.0.1): every connection is refused.
    h.dns.set('down.test', { A: ['127.0.0.2'] });
    const res = await send({ to: 'a@down.test, b@down.test, c@down.test' });
    const id = res.json<{ message_id: string }>().message_id;
    const deferred = await settle(id, (o) => o.status === 'queued' && o.attempts.length > 0);
    expect(deferred.attempts.map((a) => [a.recipients, a.outcome])).toEqual([[['a@down.test'], 'deferred']]);
    const recipients = deferred.recipients;
    expect(recipients.map((r) => r.status)).toEqual(['pending', 'pending', 'pending']);
    expect(new Set(recipients.map((r) => r.response)).size).toBe(1);
    await h.services.database.db.updateTable('outbound').set({ status: 'cancelled' }).where('message_id', '=', id).execute();
  });

  it("signs mail from a verified sending domain with that domain's own key, never another workspace's or a domain that only ends the same", async () => {
    const dkimOf = async (raw: Buffer, sender: string) => {
      const verdict = await authenticate(raw, { ip: '127.0.0.1', helo: 'mx.mailroom.test', sender, resolver: createDnsResolver([h.dns.address]) as never, disableArc: true, disableBimi: true });
      return (verdict.dkim as { results: Array<{ status: { result: string }; signingDomain: string; selector: string }> }).results.map((r) => ({ domain: r.signingDomain, selector: r.selector, result: r.status.result }));
    };
    type Created = { domain_id: string; dkim: { selector: string; record_name: string; record_value: string }; verification: { record_value: string } };
    const addDomain = async (tenant: Tenant, domain: string) => {
      const token = (await memberSession(h, tenant.workspaceId, 'owner')).token;
      const created = (await h.app.inject({ method: 'POST', url: '/app/api/sending-domains', headers: session(token), payload: { domain } })).json<Created>();
      return { created, verify: () => h.app.inject({ method: 'POST', url: `/app/api/sending-domains/${created.domain_id}/verify`, headers: session(token) }) };
    };
    // Both workspaces verify brand.example (each with its own token and key); DNS publishes Acme's DKIM key only.
    const mine = await addDomain(acme, 'brand.example');
    const theirs = await addDomain(other, 'brand.example');
    h.dns.set('_mailroom-verification.brand.example', { TXT: [mine.created.verification.record_value, theirs.created.verification.record_value] });
    expect((await theirs.verify()).json()).toMatchObject({ status: 'verified' });
    expect((await mine.verify()).json()).toMatchObject({ status: 'verified' });
    h.dns.set(mine.created.dkim.record_name, { TXT: [mine.created.dkim.record_value] });
    // Acme also verifies room.localhost: the hosted mailroom.localhost ends in it, but is not it.
    const suffix = await addDomain(acme, 'room.localhost');
    h.dns.set('_mailroom-verification.room.localhost', { TXT: [suffix.created.verification.record_value] });
    expect((await suffix.verify()).json()).toMatchObject({ status: 'verified' });
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes?address=hello@brand.example', headers: bearer(acme.apiKey) })).statusCode).toBe(201);

    const own = (await send({ from_mailbox: 'hello@brand.example', to: 'own-key@peer.test', subject: 'own key' })).json<{ message_id: string }>().message_id;
    const hosted = (await send({ to: 'hosted-key@peer.test', subject: 'hosted key' })).json<{ message_id: string }>().message_id;
    expect((await settle(own)).status).toBe('accepted');
    expect((await settle(hosted)).status).toBe('accepted');
    const received = (recipient: string) => peer.accepted.find((m) => m.recipients.includes(recipient))!;
    const ownMail = received('own-key@peer.test');
    expect(await dkimOf(ownMail.raw, ownMail.mailFrom)).toEqual([{ domain: 'brand.example', selector: mine.created.dkim.selector, result: 'pass' }]);
    const hostedMail = received('hosted-key@peer.test');
    expect(await dkimOf(hostedMail.raw, hostedMail.mailFrom)).toEqual([{ domain: 'mailroom.localhost', selector: 'mailroom', result: 'pass' }]);
  });


  it('reuses one connection for consecutive messages to a host, and replaces one the peer closed without a failed attempt', async () => {
    const ids: string[] = [];
    for (const n of [1, 2, 3]) {
      const id = (await send({ to: `reuse${n}@peer.test`, subject: `reuse ${n}` })).json<{ message_id: string }>().message_id;
      expect((await settle(id)).status).toBe('accepted');
      ids.push(id);
    }
    const sessionOf = (recipient: string) => peer.accepted.find((m) => m.recipients.includes(recipient))!.session;
    expect(new Set([sessionOf('reuse1@peer.test'), sessionOf('reuse2@peer.test'), sessionOf('reuse3@peer.test')]).size).toBe(1);

    // The peer hangs up on its idle clients; the next message goes over a new connection, in one attempt.
    peer.dropConnections();
    await new Promise((r) => setTimeout(r, 50));
    const id = (await send({ to: 'reuse4@peer.test', subject: 'after the hang-up' })).json<{ message_id: string }>().message_id;
    const done = await settle(id);
    expect(done.status).toBe('accepted');
    expect(done.attempts.map((a) => a.outcome)).toEqual(['sent']);
    expect(sessionOf('reuse4@peer.test')).not.toBe(sessionOf('reuse1@peer.test'));
    expect(peer.accepted.filter((m) => m.recipients.includes('reuse4@peer.test'))).toHaveLength(1);

    // A cached connection found dead only at MAIL FROM: the same attempt goes on over a new one.
    peer.dropNextMailFrom = true;
    const stale = (await send({ to: 'reuse5@peer.test', subject: 'stale connection' })).json<{ message_id: string }>().message_id;
    const staleDone = await settle(stale);
    expect(peer.dropNextMailFrom).toBe(false); // the reused connection was hung up on
    expect(staleDone.status).toBe('accepted');
    expect(staleDone.attempts.map((a) => a.outcome)).toEqual(['sent']);
    expect(sessionOf('reuse5@peer.test')).not.toBe(sessionOf('reuse4@peer.test'));
  });

  it('fails on a 5xx, per recipient, with message.failed naming the recipient and the reason', async () => {
    peer.refuse.add('gone@peer.test');
    const id = (await send({ to: ['gone@peer.test', 'here@peer.test'] })).json<{ message_id: string }>().message_id;
    const done = await settle(id);
    expect(done.status).toBe('accepted'); // one of two got it
    const failed = await eventsOf('message.failed', id);
    expect(failed).toHaveLength(1);
    expect(failed[0]!.data).toMatchObject({ recipient: 'gone@peer.test', reason: expect.stringContaining('550') as unknown });

    peer.behaviour = 'reject-data';
    const id2 = (await send({ to: 'x@peer.test' })).json<{ message_id: string }>().message_id;
    expect((await settle(id2)).status).toBe('failed');
    const nomail = (await send({ to: 'y@nomail.test' })).json<{ message_id: string }>().message_id;
    const noRoute = await settle(nomail);
    expect(noRoute.status).toBe('failed');
    expect(noRoute.last_error).toContain('null MX');
  });

  it('retries a 451 with backoff, then delivers', async () => {
    peer.behaviour = 'tempfail';
    const id = (await send({ to: 'later@peer.test' })).json<{ message_id: string }>().message_id;
    const deferred = await settle(id, (o) => o.status === 'queued' && o.attempts.length === 1);
    expect(deferred.last_error).toContain('451');
    peer.behaviour = 'accept';
    h.clock.advance(2 * 60_000); // past the first retry (60 s ± 20%)
    const done = await settle(id);
    expect(done.status).toBe('accepted');
    expect(done.attempts.length).toBe(2);
  });

  it('a connection dropped before DATA is retried; one dropped after it becomes unknown and is never retried', async () => {
    // The peer hangs up before DATA: it cannot have the message, so a retry is safe. (Mid-body drops
    // on loopback land after our last byte is in the kernel's buffer, which we must treat as ambiguous.)
    peer.behaviour = 'drop-at-rcpt';
    const before = (await send({ to: 'before@peer.test', subject: 'drop before' })).json<{ message_id: string }>().message_id;
    await settle(before, (o) => o.status === 'queued' && o.attempts.length >= 1);
    peer.behaviour = 'accept';
    h.clock.advance(2 * 60_000);
    expect((await settle(before)).status).toBe('accepted');
    expect(peer.accepted.filter((m) => m.recipients.includes('before@peer.test'))).toHaveLength(1);

    peer.behaviour = 'drop-after-dot';
    const after = (await send({ to: 'after@peer.test', subject: 'drop after' })).json<{ message_id: string }>().message_id;
    const unknown = await settle(after);
    expect(unknown.status).toBe('unknown');
    peer.behaviour = 'accept';
    h.clock.advance(10 * 60 * 60_000);
    await new Promise((r) => setTimeout(r, 300));
    expect((await outbound(after)).status).toBe('unknown');
    expect(peer.received.filter((m) => m.recipients.includes('after@peer.test'))).toHaveLength(1);
  });

  it('refuses blocked recipients with 422 and message.rejected, and other tenants\' mailboxes with 404', async () => {
    const owner = (await memberSession(h, acme.workspaceId, 'owner')).token;
    expect((await h.app.inject({ method: 'POST', url: '/app/api/lists/outbound/block', headers: session(owner), payload: { entry: 'blocked.test' } })).statusCode).toBe(201);
    const blocked = await send({ to: 'someone@blocked.test' });
    expect(errorOf(blocked)).toMatchObject({ status: 422, error: 'recipient_blocked' });
    const rejected = world.events('message.rejected');
    expect(rejected.some((e) => e.data.recipient === 'someone@blocked.test')).toBe(true);

    // Several recipients are judged each on its own (in one statement): with an allow list, an allowed address
    // passes even in a blocked domain, and everyone else is refused, each with its own reason.
    expect((await h.app.inject({ method: 'POST', url: '/app/api/lists/outbound/allow', headers: session(owner), payload: { entry: 'vip@blocked.test' } })).statusCode).toBe(201);
    const mixed = await send({ to: 'ok@peer.test, vip@blocked.test', cc: 'other@blocked.test' });
    expect(errorOf(mixed)).toMatchObject({ status: 422, error: 'recipient_blocked', detail: 'refused by the outbound lists: ok@peer.test, other@blocked.test' });
    const reasons = world
      .events('message.rejected')
      .map((e) => e.data as { recipient: string; reason: string })
      .filter((d) => ['ok@peer.test', 'vip@blocked.test', 'other@blocked.test'].includes(d.recipient));
    expect(reasons.sort((a, b) => a.recipient.localeCompare(b.recipient))).toEqual([
      expect.objectContaining({ recipient: 'ok@peer.test', reason: 'not on the outbound allow list' }),
      expect.objectContaining({ recipient: 'other@blocked.test', reason: 'blocked.test is on the outbound block list' }),
    ]);
    expect((await h.app.inject({ method: 'DELETE', url: '/app/api/lists/outbound/allow/vip@blocked.test', headers: session(owner) })).statusCode).toBe(200);
    const allowed = await send({ to: 'vip@blocked.test, ok@peer.test' });
    expect(errorOf(allowed)).toMatchObject({ status: 422, detail: 'refused by the outbound lists: vip@blocked.test' });

    expect(errorOf(await send({ from_mailbox: 'theirs@mailroom.localhost', to: 'x@peer.test' }))).toMatchObject({ status: 404, error: 'mailbox_not_found' });
    // The mailbox and the lists are read in one statement; the errors keep their order: the mailbox first, then the
    // recipients' form, then their number, then the lists.
    expect(errorOf(await send({ from_mailbox: 'theirs@mailroom.localhost', to: 'someone@blocked.test' }))).toMatchObject({ status: 404, error: 'mailbox_not_found' });
    expect(errorOf(await send({ from_mailbox: 'nobody@mailroom.localhost', to: 'not an address' }))).toMatchObject({ status: 404, error: 'mailbox_not_found' });
    expect(errorOf(await send({ to: ['someone@blocked.test', 'not an address'] }))).toMatchObject({ status: 400, error: 'invalid_recipient' });
    expect(errorOf(await send({ to: ['someone@blocked.test', ...Array.from({ length: 29 }, (_, i) => `r${i}@peer.test`)], cc: Array.from({ length: 21 }, (_, i) => `c${i}@peer.test`) }))).toMatchObject({ status: 400, error: 'too_many_recipients' });
    expect(errorOf(await send({ to: Array.from({ length: 51 }, (_, i) => `r${i}@peer.test`) }))).toMatchObject({ status: 400 });
    expect(errorOf(await send({ to: 'not an address' }))).toMatchObject({ status: 400, error: 'invalid_recipient' });
    expect(errorOf(await h.app.inject({ method: 'POST', url: '/send', headers: bearer(acme.apiKey), payload: { from_mailbox: 'newsletter@mailroom.localhost', to: 'a@peer.test' } }))).toMatchObject({ status: 400 });
  });
});
