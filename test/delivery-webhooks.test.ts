import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asWork } from '../src/db/tables.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, memberSession, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';
import { startSmtpPeer, type SmtpPeer } from './helpers/smtp-peer.js';
import { startReceiver, type ReceivedRequest, type WebhookReceiver } from './helpers/webhook-receiver.js';
import { eventually, startWorker, webhookApi } from './helpers/webhooks.js';
import { recordEvents, type RecordedEvents } from './helpers/world.js';

/**
 * A delivery's settlement (the mail store's `settleDeliveryRun`): its outcome and its events (`message.accepted`,
 * `message.failed`) are written with the job's settlement, reach the webhook endpoints whose filters take them, and
 * nothing is written by a run that lost its lease. Against a real SMTP peer and real HTTP receivers.
 */
describe(`delivery events and webhooks (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let peer: SmtpPeer;
  let receiver: WebhookReceiver;
  let worker: ReturnType<typeof startWorker>;
  let recorded: RecordedEvents;

  beforeAll(async () => {
    peer = await startSmtpPeer();
    h = await startMailHarness({ MAILROOM_MX_PORT: String(peer.port), MAILROOM_DELIVERY_RETRY_BASE_MS: '60000', MAILROOM_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' });
    h.clock.set(Date.now());
    recorded = recordEvents(h.services);
    h.dns.set('peer.test', { MX: [{ exchange: 'mx1.peer.test', priority: 10 }] });
    h.dns.set('mx1.peer.test', { A: ['127.0.0.1'] });
    receiver = await startReceiver();
    worker = startWorker(h, 20);
  });
  afterAll(async () => {
    await worker?.close();
    await receiver?.close();
    await h.services.webhooks.close();
    await h.close();
    await peer?.close();
  });

  async function tenantWith(name: string, address: string): Promise<{ tenant: Tenant; api: ReturnType<typeof webhookApi> }> {
    const tenant = await createTenant(h, name);
    expect((await h.app.inject({ method: 'POST', url: `/mailboxes?address=${address}`, headers: bearer(tenant.apiKey) })).statusCode).toBe(201);
    return { tenant, api: webhookApi(h, (await memberSession(h, tenant.workspaceId, 'admin')).token) };
  }
  const send = (tenant: Tenant, from: string, to: string) =>
    h.app.inject({ method: 'POST', url: '/send', headers: bearer(tenant.apiKey), payload: { from_mailbox: from, to, subject: 'Hi', body: 'Hello' } });
  /** The message's delivery status and last error, as its workspace's API key sees them. */
  const delivery = async (tenant: Tenant, id: string) => {
    const res = await h.app.inject({ method: 'GET', url: `/messages/${id}`, headers: bearer(tenant.apiKey) });
    expect(res.statusCode).toBe(200);
    const { status, last_error } = res.json<{ status: string; last_error: string | null }>();
    return { status, last_error };
  };
  const settled = (tenant: Tenant, id: string) =>
    eventually(`delivery of ${id}`, async () => {
      const { status } = await delivery(tenant, id);
      return ['accepted', 'failed'].includes(status) ? status : undefined;
    });
  /** The committed events of a type about one message, with the exact JSON each carried. */
  const eventsOf = (type: string, messageId: string) =>
    recorded
      .payloads(type)
      .map((payload) => ({ payload, event: JSON.parse(payload) as { event_id: string; data: { message_id?: string } } }))
      .filter(({ event }) => event.data.message_id === messageId)
      .map(({ payload, event }) => ({ id: event.event_id, payload }));
  const received = (path: string, type: string, messageId: string) => (r: ReceivedRequest) => {
    const body = JSON.parse(r.body) as { event_type: string; data: { message_id?: string } };
    return r.path === path && body.event_type === type && body.data.message_id === messageId;
  };

  it("sends a delivery's events to every active endpoint whose filter takes them, and to no other", async () => {
    const { tenant, api } = await tenantWith('Hooked', 'hooked@mailroom.localhost');
    await api.add({ url: `${receiver.url}/all` });
    await api.add({ url: `${receiver.url}/accepted`, event_types: ['message.accepted'] });
    await api.add({ url: `${receiver.url}/failed`, event_types: ['message.failed'] });
    await api.add({ url: `${receiver.url}/received`, event_types: ['message.received'] });
    const off = await api.add({ url: `${receiver.url}/off` });
    expect((await api.patch(off.webhook_id, { active: false })).statusCode).toBe(200);

    const ok = (await send(tenant, 'hooked@mailroom.localhost', 'someone@peer.test')).json<{ message_id: string }>().message_id;
    expect(await settled(tenant, ok)).toBe('accepted');
    peer.refuse.add('nobody@peer.test');
    const bad = (await send(tenant, 'hooked@mailroom.localhost', 'nobody@peer.test')).json<{ message_id: string }>().message_id;
    expect(await settled(tenant, bad)).toBe('failed');

    await receiver.waitFor(1, 10_000, received('/all', 'message.accepted', ok));
    await receiver.waitFor(1, 10_000, received('/accepted', 'message.accepted', ok));
    await receiver.waitFor(1, 10_000, received('/all', 'message.failed', bad));
    await receiver.waitFor(1, 10_000, received('/failed', 'message.failed', bad));
    // Every job made by the fan-out is delivered by now or never will be: none is left for the others.
    await eventually('webhook queue drained', async () => ((await h.services.queue.inspect(asWork(h.services.database.db), { queue: 'webhook' })).length === 0 ? true : undefined));
    const paths = (messageId: string, type: string) =>
      receiver.received.filter((r) => received(r.path, type, messageId)(r)).map((r) => r.path).sort();
    expect(paths(ok, 'message.accepted')).toEqual(['/accepted', '/all']);
    expect(paths(bad, 'message.failed')).toEqual(['/all', '/failed']);
    expect(receiver.received.some((r) => r.path === '/off' || r.path === '/received')).toBe(false);
    expect(eventsOf('message.accepted', ok)).toHaveLength(1);
    expect(eventsOf('message.failed', bad)).toHaveLength(1);
  });

  it('records the events and settles the job when no endpoint takes them, and a later endpoint gets the later events', async () => {
    const { tenant, api } = await tenantWith('Quiet', 'quiet@mailroom.localhost');
    await api.add({ url: `${receiver.url}/quiet-received`, event_types: ['message.received'] });
    const first = (await send(tenant, 'quiet@mailroom.localhost', 'a@peer.test')).json<{ message_id: string }>().message_id;
    expect(await settled(tenant, first)).toBe('accepted');
    const [accepted] = eventsOf('message.accepted', first);
    expect(JSON.parse(accepted!.payload)).toMatchObject({ event_id: accepted!.id, event_type: 'message.accepted', workspace_id: tenant.workspaceId, data: { message_id: first, status: 'accepted' } });
    expect(await h.services.queue.inspect(asWork(h.services.database.db), { workspaceId: tenant.workspaceId })).toEqual([]);

    // An endpoint added now takes the next delivery's events.
    await api.add({ url: `${receiver.url}/quiet-all` });
    const second = (await send(tenant, 'quiet@mailroom.localhost', 'b@peer.test')).json<{ message_id: string }>().message_id;
    expect(await settled(tenant, second)).toBe('accepted');
    await receiver.waitFor(1, 10_000, received('/quiet-all', 'message.accepted', second));
    expect(receiver.received.some((r) => received('/quiet-all', 'message.accepted', first)(r))).toBe(false);
    expect(receiver.received.some((r) => r.path === '/quiet-received')).toBe(false);
  });

  it('writes nothing for a run that lost its lease, and settles the run that holds it (here: past the maximum age)', async () => {
    await worker.close(); // this test runs the delivery handler by hand
    const { tenant } = await tenantWith('Lease', 'lease@mailroom.localhost');
    const id = (await send(tenant, 'lease@mailroom.localhost', 'late@peer.test')).json<{ message_id: string }>().message_id;
    const [job] = await h.services.queue.claim<{ message_id: string }>('delivery', 1);
    expect(job?.payload.message_id).toBe(id);
    const handler = h.services.handlers.find((x) => x.queue === 'delivery')!;
    h.clock.advance(5 * 24 * 3_600_000);
    const db = h.services.database.db;
    const state = () => delivery(tenant, id);

    expect(await handler.handle({ ...job!, leaseToken: 'taken-over' }, new AbortController().signal)).toEqual({ type: 'settled' });
    expect(await state()).toEqual({ status: 'queued', last_error: null });
    expect(eventsOf('message.failed', id)).toEqual([]);
    expect((await h.services.queue.inspect(asWork(db), { id: job!.id })).map((j) => j.leaseToken)).toEqual([job!.leaseToken]);

    expect(await handler.handle(job!, new AbortController().signal)).toEqual({ type: 'settled' });
    expect(await state()).toEqual({ status: 'failed', last_error: 'gave up: maximum age reached' });
    expect(eventsOf('message.failed', id)).toHaveLength(1);
    expect(await h.services.queue.inspect(asWork(db), { id: job!.id })).toEqual([]);
  });
});
