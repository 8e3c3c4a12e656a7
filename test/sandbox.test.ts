import { Resolver } from 'node:dns/promises';
import dns2 from 'dns2';
import { beforeAll, describe, expect, it } from 'vitest';
import { CAPTURED_REPLY } from '../src/modules/sandbox/sandbox-outbox.service.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, errorOf, memberSession, session, type Tenant } from './helpers/harness.js';
import type { MailHarness } from './helpers/mail.js';
import type { SmtpPeer } from './helpers/smtp-peer.js';
import { startReceiver, type WebhookReceiver } from './helpers/webhook-receiver.js';
import { eventually, webhookApi } from './helpers/webhooks.js';
import { mailWorld } from './helpers/world.js';

interface DnsRecordView {
  name: string;
  type: string;
  value: string;
}
interface Captured {
  capture_id: string;
  message_id: string;
  mail_from: string;
  recipients: string[];
  stored: Array<{ address: string; mailbox: string; message_id: string }>;
  subject: string;
  size: number;
  raw?: string;
}
interface SentItem {
  message_id: string;
  status: string;
  recipients: Array<{ address: string; status: string; response: string | null; mx: string | null }>;
}

/** A resolver that asks only the given server (`ip:port`), as the service's own does. */
function resolverAt(address: string): Resolver {
  const resolver = new Resolver({ timeout: 2000, tries: 1 });
  resolver.setServers([address]);
  return resolver;
}

describe(`sandbox mode (${TEST_DIALECT})`, () => {
  // No peer: a sandbox delivers nothing over SMTP.
  const world = mailWorld({ env: { MAILROOM_WEBHOOK_BACKOFF_BASE_MS: '60000' }, sandbox: true, peer: false, mx: [] });
  let h: MailHarness;
  let receiver: WebhookReceiver;
  let acme: Tenant;
  let other: Tenant;
  let owner: string;
  let member: string;
  let otherOwner: string;
  let dnsServer: string;

  const get = (url: string, token: string) => h.app.inject({ method: 'GET', url, headers: session(token) });
  const post = (url: string, token: string, payload: Record<string, unknown>) => h.app.inject({ method: 'POST', url, headers: session(token), payload });
  const publish = (token: string, records: Array<{ name: string; type: string; value: string }>) => post('/app/api/sandbox/dns-records', token, { records });

  /** Send with the API key and wait until the delivery is final; the sent view. */
  async function sendAndSettle(payload: Record<string, unknown>): Promise<SentItem> {
    const res = await h.app.inject({ method: 'POST', url: '/send', headers: bearer(acme.apiKey), payload: { subject: 'Hello', body: 'Hi there', ...payload } });
    expect(res.statusCode, res.body).toBe(202);
    const id = res.json<{ message_id: string }>().message_id;
    return eventually(`delivery of ${id}`, async () => {
      const item = (await get('/app/api/sent', owner)).json<{ messages: SentItem[] }>().messages.find((m) => m.message_id === id);
      return item && !['queued', 'processing'].includes(item.status) ? item : undefined;
    });
  }
  const capturesOf = async (messageId: string) =>
    (await get('/app/api/sandbox/outbox', member)).json<{ captured_messages: Captured[] }>().captured_messages.filter((c) => c.message_id === messageId);

  beforeAll(async () => {
    h = world.h;
    dnsServer = h.services.sandboxDns!.address;
    receiver = world.own(await startReceiver());
    acme = await world.tenant('Acme');
    other = await world.tenant('Other');
    owner = (await memberSession(h, acme.workspaceId, 'owner')).token;
    member = (await memberSession(h, acme.workspaceId, 'member')).token;
    otherOwner = (await memberSession(h, other.workspaceId, 'owner')).token;
    for (const address of ['newsletter@mailroom.localhost', 'orders@mailroom.localhost', 'catchall@mailroom.localhost']) {
      expect((await h.app.inject({ method: 'POST', url: `/mailboxes?address=${address}`, headers: bearer(acme.apiKey) })).statusCode).toBe(201);
    }
  });

  it('says it is a sandbox in the header of every answer, and where its DNS server is', async () => {
    for (const res of [
      await h.app.inject({ method: 'GET', url: '/health' }),
      await h.app.inject({ method: 'GET', url: '/no/such/route' }),
      await h.app.inject({ method: 'GET', url: '/inbox' }),
      await get('/app/api/sandbox', member),
    ]) {
      expect(res.headers['mailroom-sandbox'], res.body).toBe('true');
    }
    expect((await get('/app/api/sandbox', member)).json()).toEqual({ sandbox: true, dns_server: dnsServer });
    expect((await h.app.inject({ method: 'GET', url: '/sandbox', headers: bearer(acme.apiKey) })).json()).toEqual({ sandbox: true, dns_server: dnsServer });
    expect(dnsServer).toMatch(/^127\.0\.0\.1:\d+$/);
  });

  it('documents its routes in /openapi.json, each with an operation id and a summary', async () => {
    const paths = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json<{ paths: Record<string, Record<string, { operationId?: string; summary?: string }>> }>().paths;
    const sandboxOperations = Object.entries(paths).filter(([path]) => path.includes('/sandbox')).flatMap(([, operations]) => Object.values(operations));
    expect(sandboxOperations).toHaveLength(16);
    for (const operation of sandboxOperations) {
      expect(operation.operationId).toMatch(/^[a-z][A-Za-z]+$/);
      expect(operation.summary).toBeTruthy();
    }
    expect(new Set(sandboxOperations.map((o) => o.operationId)).size).toBe(16);
  });

  it('answers published records over UDP and TCP, and a sending domain verifies through it', async () => {
    const created = (await post('/app/api/sending-domains', owner, { domain: 'acme.example' })).json<{
      domain_id: string;
      verification: { record_name: string; record_type: string; record_value: string };
      dkim: { record_name: string; record_value: string };
    }>();
    expect((await post(`/app/api/sending-domains/${created.domain_id}/verify`, owner, {})).json()).toMatchObject({ status: 'pending' });

    const res = await publish(owner, [
      { name: created.verification.record_name, type: created.verification.record_type, value: created.verification.record_value },
      { name: created.dkim.record_name, type: 'txt', value: `"${created.dkim.record_value}"` },
      { name: 'ACME.example.', type: 'MX', value: '10 MX.acme.example.' },
      { name: 'mx.acme.example', type: 'A', value: '192.0.2.10' },
      { name: 'mx.acme.example', type: 'AAAA', value: '2001:DB8:0:0:0:0:0:1' },
      { name: 'alias.acme.example', type: 'CNAME', value: 'mx.acme.example' },
      { name: 'nomail.example', type: 'MX', value: '0 .' },
    ]);
    expect(res.statusCode, res.body).toBe(200);
    const records = res.json<{ dns_records: DnsRecordView[] }>().dns_records;
    expect(records.map((r) => `${r.name} ${r.type} ${r.value.slice(0, 20)}`)).toEqual([
      `${created.verification.record_name} TXT ${created.verification.record_value.slice(0, 20)}`,
      `${created.dkim.record_name} TXT v=DKIM1; k=rsa; p=MI`,
      'acme.example MX 10 mx.acme.example',
      'mx.acme.example A 192.0.2.10',
      'mx.acme.example AAAA 2001:db8::1',
      'alias.acme.example CNAME mx.acme.example',
      'nomail.example MX 0 .',
    ]);

    const resolver = resolverAt(dnsServer);
    expect((await resolver.resolveTxt(created.verification.record_name)).map((parts) => parts.join(''))).toEqual([created.verification.record_value]);
    expect((await resolver.resolveTxt(created.dkim.record_name)).map((parts) => parts.join(''))).toEqual([created.dkim.record_value]);
    expect(await resolver.resolveMx('acme.example')).toEqual([{ exchange: 'mx.acme.example', priority: 10 }]);
    expect(await resolver.resolve6('mx.acme.example')).toEqual(['2001:db8::1']);
    expect(await resolver.resolve4('alias.acme.example')).toEqual(['192.0.2.10']);
    expect(await resolver.resolveMx('nomail.example')).toEqual([{ exchange: '', priority: 0 }]);
    // The same over TCP, where long answers go.
    const tcp = dns2.TCPClient({ dns: '127.0.0.1', port: Number(dnsServer.split(':')[1]) });
    const overTcp = await tcp(created.dkim.record_name, 'TXT');
    expect(overTcp.answers.map((a) => (Array.isArray(a.data) ? a.data.join('') : a.data))).toEqual([created.dkim.record_value]);

    const verified = await post(`/app/api/sending-domains/${created.domain_id}/verify`, owner, {});
    expect(verified.json()).toMatchObject({ domain: 'acme.example', status: 'verified' });
  });

  it('replaces a name and type when published again, lists and deletes a workspace\'s own records only', async () => {
    await publish(owner, [{ name: 'swap.example', type: 'A', value: '192.0.2.1' }]);
    await publish(owner, [
      { name: 'swap.example', type: 'A', value: '192.0.2.2' },
      { name: 'swap.example', type: 'A', value: '192.0.2.3' },
    ]);
    expect((await resolverAt(dnsServer).resolve4('swap.example')).sort()).toEqual(['192.0.2.2', '192.0.2.3']);
    const mine = (await get('/app/api/sandbox/dns-records', owner)).json<{ dns_records: DnsRecordView[] }>().dns_records;
    expect(mine.filter((r) => r.name === 'swap.example').map((r) => r.value)).toEqual(['192.0.2.2', '192.0.2.3']);
    expect((await get('/app/api/sandbox/dns-records', otherOwner)).json()).toEqual({ dns_records: [] });

    // Another workspace neither sees nor deletes them; a member may not publish.
    expect(errorOf(await h.app.inject({ method: 'DELETE', url: '/app/api/sandbox/dns-records/swap.example', headers: session(otherOwner) }))).toMatchObject({ status: 404, error: 'dns_record_not_found' });
    expect(errorOf(await publish(member, [{ name: 'x.example', type: 'A', value: '192.0.2.1' }]))).toMatchObject({ status: 403, error: 'forbidden_role' });
    const gone = await h.app.inject({ method: 'DELETE', url: '/app/api/sandbox/dns-records/swap.example?type=A', headers: session(owner) });
    expect(gone.json()).toEqual({ ok: true, deleted: 2 });
    await expect(resolverAt(dnsServer).resolve4('swap.example')).rejects.toMatchObject({ code: 'ENOTFOUND' });
  });

  it('refuses records that are not records, naming the field', async () => {
    for (const [record, field] of [
      [{ name: 'bad name!', type: 'A', value: '192.0.2.1' }, 'name'],
      [{ name: 'a.example', type: 'SRV', value: 'x' }, 'type'],
      [{ name: 'a.example', type: 'A', value: '::1' }, 'value'],
      [{ name: 'a.example', type: 'MX', value: 'mx.example' }, 'value'],
      [{ name: 'a.example', type: 'TXT', value: 'line\nbreak' }, 'value'],
    ] as const) {
      const error = errorOf(await publish(owner, [record]));
      expect(error, JSON.stringify(record)).toMatchObject({ status: 400, error: 'invalid_dns_record' });
      expect(error.detail.startsWith(`${field}:`), error.detail).toBe(true);
    }
    expect(errorOf(await post('/app/api/sandbox/dns-records', owner, { records: [] })).status).toBe(400);
  });

  it('asks the upstream servers for names it has no record of, and answers special-use names itself', async () => {
    h.dns.set('elsewhere.mailroom-test.net', { A: ['93.184.216.34'] });
    const resolver = resolverAt(dnsServer);
    expect(await resolver.resolve4('elsewhere.mailroom-test.net')).toEqual(['93.184.216.34']);
    await expect(resolver.resolve4('nothing-here.test')).rejects.toMatchObject({ code: 'ENOTFOUND' });
    expect(h.dns.queries.some((q) => q.name === 'nothing-here.test')).toBe(false);
  });

  it('captures an API send with its full MIME instead of delivering it', async () => {
    const sent = await sendAndSettle({ from_mailbox: 'newsletter@mailroom.localhost', to: 'Customer <customer@far-away.example>', subject: 'Your order shipped' });
    expect(sent.status).toBe('accepted');
    expect(sent.recipients).toEqual([expect.objectContaining({ address: 'customer@far-away.example', status: 'accepted', mx: 'sandbox' })]);
    expect(sent.recipients[0]!.response).toMatch(new RegExp(`^${CAPTURED_REPLY} as cap_\\w+; not delivered$`));

    const [capture] = await capturesOf(sent.message_id);
    expect(capture).toMatchObject({ recipients: ['customer@far-away.example'], stored: [], subject: 'Your order shipped' });
    expect(capture!.mail_from).toMatch(/^bounces\+msg_/);
    const detail = (await get(`/app/api/sandbox/outbox/${capture!.capture_id}`, member)).json<Captured>();
    expect(detail.raw).toContain('Subject: Your order shipped');
    expect(detail.raw).toContain('DKIM-Signature: ');
    expect(detail.raw).toContain('Hi there');
    const raw = await get(`/app/api/sandbox/outbox/${capture!.capture_id}/raw`, member);
    expect(raw.headers['content-type']).toBe('message/rfc822');
    expect(raw.body).toBe(detail.raw);
    expect(raw.rawPayload.length).toBe(detail.size);

    // The API key sees it too; another workspace does not.
    const byKey = await h.app.inject({ method: 'GET', url: `/sandbox/outbox/${capture!.capture_id}`, headers: bearer(acme.apiKey) });
    expect(byKey.json<Captured>().raw).toBe(detail.raw);
    expect(errorOf(await get(`/app/api/sandbox/outbox/${capture!.capture_id}`, otherOwner))).toMatchObject({ status: 404, error: 'captured_message_not_found' });
    expect(errorOf(await h.app.inject({ method: 'GET', url: `/sandbox/outbox/${capture!.capture_id}/raw`, headers: bearer(other.apiKey) })).status).toBe(404);
  });

  it('captures a transactional send from a verified domain, signed with its key', async () => {
    expect((await post('/app/api/mailboxes', owner, { address: 'billing@acme.example' })).statusCode).toBe(201);
    const domains = (await get('/app/api/sending-domains', owner)).json<{ sending_domains: Array<{ domain_id: string; domain: string }> }>().sending_domains;
    const domainId = domains.find((d) => d.domain === 'acme.example')!.domain_id;
    const token = (await post('/app/api/service-tokens', owner, { name: 'receipts', domain_id: domainId, mailbox: 'billing@acme.example' })).json<{ token: string }>().token;
    const res = await h.app.inject({
      method: 'POST',
      url: '/v1/transactional/messages',
      headers: { ...bearer(token), 'idempotency-key': 'receipt-1' },
      payload: { from_mailbox: 'billing@acme.example', to: 'payer@far-away.example', subject: 'Receipt 1', body: 'Paid.' },
    });
    expect(res.statusCode, res.body).toBe(202);
    const id = res.json<{ message_id: string }>().message_id;
    const status = await eventually('transactional delivery', async () => {
      const view = (await h.app.inject({ method: 'GET', url: `/v1/transactional/messages/${id}`, headers: bearer(token) })).json<{ status: string; smtp_response: string | null }>();
      return ['queued', 'processing'].includes(view.status) ? undefined : view;
    });
    expect(status.status).toBe('accepted');
    expect(status.smtp_response).toMatch(new RegExp(`^${CAPTURED_REPLY}`));
    const [capture] = await capturesOf(id);
    const raw = (await get(`/app/api/sandbox/outbox/${capture!.capture_id}`, owner)).json<Captured>().raw!;
    expect(raw).toMatch(/DKIM-Signature: [^]*d=acme\.example/);
  });

  it("still brings mail for this service's own mailboxes in, and captures it too", async () => {
    const sent = await sendAndSettle({ from_mailbox: 'newsletter@mailroom.localhost', to: 'orders@mailroom.localhost', subject: 'Internal note' });
    expect(sent.status).toBe('accepted');
    const [capture] = await capturesOf(sent.message_id);
    expect(capture!.stored).toEqual([{ address: 'orders@mailroom.localhost', mailbox: 'orders@mailroom.localhost', message_id: expect.stringMatching(/^msg_/) as unknown }]);
    const inbox = await h.app.inject({ method: 'GET', url: '/inbox?mailbox=orders@mailroom.localhost', headers: bearer(acme.apiKey) });
    expect(inbox.json<{ messages: Array<{ message_id: string; subject: string }> }>().messages).toEqual([
      expect.objectContaining({ message_id: capture!.stored[0]!.message_id, subject: 'Internal note' }),
    ]);
  });

  it('sends mail for unknown addresses of a domain to its catch-all mailbox, over SMTP and from a send', async () => {
    await expect(h.send({ from: 'alice@sender.test', to: 'nobody@mailroom.localhost', subject: 'Before', text: 'x' })).rejects.toMatchObject({ responseCode: 550 });
    expect(errorOf(await post('/app/api/sandbox/catch-alls', member, { mailbox: 'catchall@mailroom.localhost' }))).toMatchObject({ status: 403, error: 'forbidden_role' });
    expect(errorOf(await post('/app/api/sandbox/catch-alls', otherOwner, { mailbox: 'catchall@mailroom.localhost' }))).toMatchObject({ status: 404, error: 'mailbox_not_found' });
    const set = await post('/app/api/sandbox/catch-alls', owner, { mailbox: 'catchall@mailroom.localhost' });
    expect(set.statusCode).toBe(201);
    expect(set.json()).toMatchObject({ domain: 'mailroom.localhost', mailbox: 'catchall@mailroom.localhost' });
    // One catch-all per domain: another workspace cannot take it.
    await h.app.inject({ method: 'POST', url: '/mailboxes?address=theirs@mailroom.localhost', headers: bearer(other.apiKey) });
    expect(errorOf(await post('/app/api/sandbox/catch-alls', otherOwner, { mailbox: 'theirs@mailroom.localhost' }))).toMatchObject({ status: 409, error: 'catch_all_taken' });

    const info = await h.send({ from: 'alice@sender.test', to: 'nobody@mailroom.localhost', subject: 'Caught', text: 'x' });
    expect(info.response).toMatch(/^250 /);
    const sent = await sendAndSettle({ from_mailbox: 'newsletter@mailroom.localhost', to: 'random@mailroom.localhost', subject: 'Caught too' });
    expect((await capturesOf(sent.message_id))[0]!.stored).toEqual([{ address: 'random@mailroom.localhost', mailbox: 'catchall@mailroom.localhost', message_id: expect.stringMatching(/^msg_/) as unknown }]);
    const inbox = await h.app.inject({ method: 'GET', url: '/inbox?mailbox=catchall@mailroom.localhost', headers: bearer(acme.apiKey) });
    expect(inbox.json<{ messages: Array<{ subject: string }> }>().messages.map((m) => m.subject).sort()).toEqual(['Caught', 'Caught too']);
    // The catch-all's workspace judges the sender by its inbound lists, as for a mailbox of its own.
    expect((await post('/app/api/lists/inbound/block', owner, { entry: 'mallory@sender.test' })).statusCode).toBe(201);
    await expect(h.send({ from: 'mallory@sender.test', to: 'nobody@mailroom.localhost', subject: 'Blocked', text: 'x' })).rejects.toMatchObject({ responseCode: 550, response: expect.stringMatching(/^550 5\.7\.1 /) as unknown });
    expect((await h.app.inject({ method: 'DELETE', url: '/app/api/lists/inbound/block/mallory@sender.test', headers: session(owner) })).statusCode).toBe(200);

    expect((await get('/app/api/sandbox/catch-alls', owner)).json()).toMatchObject({ catch_alls: [{ domain: 'mailroom.localhost', mailbox: 'catchall@mailroom.localhost' }] });
    expect((await h.app.inject({ method: 'DELETE', url: '/app/api/sandbox/catch-alls/mailroom.localhost', headers: session(owner) })).json()).toEqual({ ok: true });
    await expect(h.send({ from: 'alice@sender.test', to: 'nobody@mailroom.localhost', subject: 'After', text: 'x' })).rejects.toMatchObject({ responseCode: 550 });
  });

  it('delivers webhooks to a loopback receiver (http://localhost:PORT), and still refuses private addresses', async () => {
    const api = webhookApi(h, member);
    const webhook = await api.add({ url: `http://localhost:${receiver.port}/hook` });
    expect((await api.create({ url: `http://[::1]:${receiver.port}/hook` })).statusCode).toBe(201);
    expect(errorOf(await api.create({ url: 'http://10.0.0.5/hook' }))).toMatchObject({ status: 400, error: 'invalid_webhook_url' });
    expect((await api.test(webhook.webhook_id, { event_type: 'message.received' })).statusCode).toBe(202);
    const [request] = await receiver.waitFor(1, 10_000, (r) => r.path === '/hook');
    expect(JSON.parse(request!.body)).toMatchObject({ event_type: 'message.received', data: { test: true } });
    const history = await eventually('a recorded delivery', async () => (await api.history(webhook.webhook_id)).find((d) => d.success));
    expect(history.status_code).toBe(204);
  });

  it('clears the outbox of one workspace', async () => {
    const before = (await get('/app/api/sandbox/outbox', owner)).json<{ total: number }>().total;
    expect(before).toBeGreaterThan(0);
    expect((await h.app.inject({ method: 'DELETE', url: '/sandbox/outbox', headers: bearer(other.apiKey) })).json()).toEqual({ ok: true, deleted: 0 });
    expect((await h.app.inject({ method: 'DELETE', url: '/app/api/sandbox/outbox', headers: session(owner) })).json()).toEqual({ ok: true, deleted: before });
    expect((await get('/app/api/sandbox/outbox', owner)).json()).toMatchObject({ captured_messages: [], total: 0 });
  });
});

describe(`without --sandbox nothing of it is active (${TEST_DIALECT})`, () => {
  const world = mailWorld();
  let h: MailHarness;
  let peer: SmtpPeer;
  let acme: Tenant;
  let owner: string;

  beforeAll(async () => {
    ({ h, peer } = world);
    acme = await world.tenant('Acme', ['newsletter@mailroom.localhost']);
    owner = (await memberSession(h, acme.workspaceId, 'owner')).token;
  });

  it('has no sandbox routes, header or DNS server', async () => {
    const paths = Object.keys((await h.app.inject({ method: 'GET', url: '/openapi.json' })).json<{ paths: Record<string, unknown> }>().paths);
    expect(paths.filter((path) => path.includes('sandbox'))).toEqual([]);
    expect(h.services.sandboxDns).toBeNull();
    for (const url of ['/app/api/sandbox', '/app/api/sandbox/dns-records', '/app/api/sandbox/outbox', '/app/api/sandbox/catch-alls']) {
      const res = await h.app.inject({ method: 'GET', url, headers: session(owner) });
      expect(res.statusCode, url).toBe(404);
      expect(res.headers['mailroom-sandbox']).toBeUndefined();
    }
    expect((await h.app.inject({ method: 'GET', url: '/sandbox/outbox', headers: bearer(acme.apiKey) })).statusCode).toBe(404);
    expect((await h.app.inject({ method: 'GET', url: '/health' })).headers['mailroom-sandbox']).toBeUndefined();
  });

  it('refuses loopback webhook receivers', async () => {
    const api = webhookApi(h, owner);
    for (const url of ['http://localhost:9/hook', 'http://127.0.0.1:9/hook', 'http://[::1]:9/hook']) {
      expect(errorOf(await api.create({ url })), url).toMatchObject({ status: 400, error: 'invalid_webhook_url' });
    }
  });

  it('delivers outbound mail over SMTP, capturing nothing', async () => {
    const res = await h.app.inject({ method: 'POST', url: '/send', headers: bearer(acme.apiKey), payload: { from_mailbox: 'newsletter@mailroom.localhost', to: 'user@peer.test', subject: 'Real', body: 'x' } });
    expect(res.statusCode).toBe(202);
    await eventually('the peer to receive it', () => (peer.accepted.length > 0 ? peer.accepted : undefined));
    expect(peer.accepted[0]!.recipients).toEqual(['user@peer.test']);
    const rows = await h.services.database.db.selectFrom('sandbox_messages').select('id').execute();
    expect(rows).toEqual([]);
  });
});

describe(`a loopback webhook receiver allowed by MAILROOM_WEBHOOK_ALLOW_CIDRS (${TEST_DIALECT})`, () => {
  const world = mailWorld({ env: { MAILROOM_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' }, peer: false, mx: [] });
  let h: MailHarness;
  let receiver: WebhookReceiver;
  let owner: string;

  beforeAll(async () => {
    h = world.h;
    receiver = world.own(await startReceiver());
    owner = (await memberSession(h, (await world.tenant()).workspaceId, 'owner')).token;
  });

  it('takes http://localhost:PORT (its ::1 not allowed, its 127.0.0.1 is) and delivers to 127.0.0.1', async () => {
    const api = webhookApi(h, owner);
    const webhook = await api.add({ url: `http://localhost:${receiver.port}/item7` });
    expect(errorOf(await api.create({ url: `http://[::1]:${receiver.port}/` }))).toMatchObject({ status: 400, error: 'invalid_webhook_url' });
    await api.test(webhook.webhook_id, { event_type: 'message.received' });
    await receiver.waitFor(1, 10_000, (r) => r.path === '/item7');
  });
});
