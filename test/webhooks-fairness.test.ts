import type { LightMyRequestResponse } from 'fastify';
import { asWork } from '../src/db/tables.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventType } from '../src/modules/events/event.types.js';
import { DELIVERY_QUEUE } from '../src/modules/sending/sending.service.js';
import { TEST_DIALECT } from './helpers/database.js';
import { createTenant, memberSession, session, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';
import { startReceiver, type WebhookReceiver } from './helpers/webhook-receiver.js';
import { startWorker, webhookApi, type WebhookBody } from './helpers/webhooks.js';

/**
 * Fairness of the job queue between workspaces, against the service's own worker and real HTTP receivers on
 * loopback: workspace F points five endpoints at a receiver that never answers and queues a backlog of hundreds of
 * deliveries; workspace G's webhook is still delivered while F's backlog waits. Replay and recover are deduplicated,
 * honour the endpoint's event_types, and are refused (429) past the rate and pending caps set below.
 */

/** Longer than any wait below: F's requests hang for the whole test, holding their slots. */
const TIMEOUT_MS = 25_000;
const ENDPOINT_CONCURRENCY = 4;
const WORKSPACE_CONCURRENCY = 12;
const ENDPOINT_PENDING_MAX = 60;
const REPLAYS_PER_MINUTE = 20;
const env = {
  MAILROOM_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
  MAILROOM_WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
  MAILROOM_WEBHOOK_ENDPOINT_CONCURRENCY: String(ENDPOINT_CONCURRENCY),
  MAILROOM_WEBHOOK_WORKSPACE_CONCURRENCY: String(WORKSPACE_CONCURRENCY),
  MAILROOM_WEBHOOK_ENDPOINT_PENDING_MAX: String(ENDPOINT_PENDING_MAX),
  MAILROOM_WEBHOOK_REPLAYS_PER_MINUTE: String(REPLAYS_PER_MINUTE),
};
/** Events F emits while its endpoints are inactive, then recovers for each of its five endpoints. */
const F_EVENTS = 50;
const F_ENDPOINTS = 5;

type Api = ReturnType<typeof webhookApi> & {
  recover(id: string, payload: Record<string, unknown>): Promise<LightMyRequestResponse>;
  replay(id: string, eventId: string): Promise<LightMyRequestResponse>;
};

const problem = (res: LightMyRequestResponse) => ({ status: res.statusCode, error: res.json<{ error?: string }>().error });

describe(`fair webhooks and queue (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let worker: ReturnType<typeof startWorker>;
  const receivers: WebhookReceiver[] = [];

  async function tenantApi(name: string): Promise<{ tenant: Tenant; api: Api }> {
    const tenant = await createTenant(h, name);
    const token = (await memberSession(h, tenant.workspaceId, 'member')).token;
    const headers = session(token);
    const api = Object.assign(webhookApi(h, token), {
      recover: (id: string, payload: Record<string, unknown>) => h.app.inject({ method: 'POST', url: `/app/api/webhooks/${id}/recover`, headers, payload }),
      replay: (id: string, eventId: string) => h.app.inject({ method: 'POST', url: `/app/api/webhooks/${id}/deliveries/${eventId}/replay`, headers }),
    });
    return { tenant, api };
  }

  async function newReceiver(hang: boolean): Promise<WebhookReceiver> {
    const r = await startReceiver();
    if (hang) r.answer = () => ({ status: 200, hang: true });
    receivers.push(r);
    return r;
  }

  async function emit(workspaceId: string, type: Exclude<EventType, 'message.delivered'>, data: Record<string, unknown> = {}): Promise<string> {
    const event = await h.services.database.db.transaction().execute((trx) => h.services.events.emit(asWork(trx), { workspaceId, type, data }));
    return event.id;
  }

  const db = () => h.services.database.db;
  const webhookJobs = (workspaceId: string) => h.services.queue.inspect<{ event_id: string }>(asWork(db()), { queue: 'webhook', workspaceId, state: 'pending' });
  const since = () => new Date(h.clock.now() - 60_000).toISOString();

  beforeAll(async () => {
    h = await startMailHarness(env);
    h.clock.set(Date.now());
    worker = startWorker(h, 20);
  });
  afterAll(async () => {
    await worker?.close();
    for (const r of receivers) await r.close();
    await h.services.webhooks.close();
    await h.close();
  });

  it("G's webhook is delivered while F's backlog to a receiver that never answers still waits", async () => {
    const f = await tenantApi('F');
    const g = await tenantApi('G');
    const sink = await newReceiver(true);
    const hooks: WebhookBody[] = [];
    for (let i = 0; i < F_ENDPOINTS; i += 1) hooks.push(await f.api.add({ url: `${sink.url}/f${i}`, event_types: ['domain.verified'], active: false }));
    h.clock.advance(1);
    for (let i = 0; i < F_EVENTS; i += 1) await emit(f.tenant.workspaceId, 'domain.verified', { n: i });
    for (const hook of hooks) expect((await f.api.patch(hook.webhook_id, { active: true })).statusCode).toBe(200);
    // F queues its backlog: every event again, for each endpoint.
    for (const hook of hooks) {
      const res = await f.api.recover(hook.webhook_id, { since: since() });
      expect(res.json()).toMatchObject({ queued: F_EVENTS });
    }
    // F's slots fill: its requests hang.
    await sink.waitFor(WORKSPACE_CONCURRENCY, 10_000);

    const receiver = await newReceiver(false);
    const gHook = await g.api.add({ url: `${receiver.url}/g`, event_types: ['domain.verified'] });
    const gEvent = await emit(g.tenant.workspaceId, 'domain.verified', { tenant: 'G' });
    // Bounded wait, well inside F's time-out: G does not queue behind F's backlog, nor behind F's hanging slots.
    const [delivered] = await receiver.waitFor(1, 10_000);
    expect((JSON.parse(delivered!.body) as { event_id: string }).event_id).toBe(gEvent);
    expect(gHook.webhook_id).toBeTruthy();

    // Meanwhile F's backlog still waits, and F runs no more than its caps (counted from the leased rows).
    const fJobs = await webhookJobs(f.tenant.workspaceId);
    expect(fJobs).toHaveLength(F_EVENTS * F_ENDPOINTS);
    const leased = fJobs.filter((j) => j.leaseToken !== null);
    expect(leased.length).toBeLessThanOrEqual(WORKSPACE_CONCURRENCY);
    const perEndpoint = new Map<string, number>();
    for (const j of leased) perEndpoint.set(j.groupKey!, (perEndpoint.get(j.groupKey!) ?? 0) + 1);
    for (const n of perEndpoint.values()) expect(n).toBeLessThanOrEqual(ENDPOINT_CONCURRENCY);
    expect(sink.received.length).toBeLessThanOrEqual(WORKSPACE_CONCURRENCY);
    const perPath = new Map<string, number>();
    for (const r of sink.received) perPath.set(r.path, (perPath.get(r.path) ?? 0) + 1);
    for (const n of perPath.values()) expect(n).toBeLessThanOrEqual(ENDPOINT_CONCURRENCY);

    // Drop F's backlog: the other tests start from an idle worker.
    for (const hook of hooks) await f.api.remove(hook.webhook_id);
  });

  it('replaying one event twice leaves one pending delivery; replay and recover honour event_types', async () => {
    const { tenant, api } = await tenantApi('Dedup');
    const hanging = await newReceiver(true);
    const verified = await emit(tenant.workspaceId, 'domain.verified');
    const rejected = await emit(tenant.workspaceId, 'message.rejected');
    h.clock.advance(1);
    const hook = await api.add({ url: `${hanging.url}/dedup`, event_types: ['domain.verified'] });

    const first = await api.replay(hook.webhook_id, verified);
    expect(first.statusCode).toBe(202);
    expect(first.json()).toEqual({ ok: true, event_id: verified, queued: true });
    const second = await api.replay(hook.webhook_id, verified);
    expect(second.statusCode).toBe(202);
    expect(second.json()).toEqual({ ok: true, event_id: verified, queued: false });
    const pending = (await webhookJobs(tenant.workspaceId)).filter((j) => j.groupKey === hook.webhook_id);
    expect(pending.map((j) => j.payload.event_id)).toEqual([verified]);

    // A type the endpoint's filter does not take is refused, and nothing is queued.
    expect(problem(await api.replay(hook.webhook_id, rejected))).toEqual({ status: 409, error: 'event_type_not_subscribed' });
    expect((await webhookJobs(tenant.workspaceId)).filter((j) => j.groupKey === hook.webhook_id)).toHaveLength(1);

    // Recover takes only the filter's types, and not what is pending already.
    const other = await api.add({ url: `${hanging.url}/recover`, event_types: ['message.rejected'], active: false });
    h.clock.advance(1);
    const laterRejected = await emit(tenant.workspaceId, 'message.rejected');
    await emit(tenant.workspaceId, 'domain.verified');
    await api.patch(other.webhook_id, { active: true });
    expect((await api.recover(other.webhook_id, { since: since() })).json()).toMatchObject({ queued: 1 });
    expect((await api.recover(other.webhook_id, { since: since() })).json()).toMatchObject({ queued: 0 });
    const recovered = (await webhookJobs(tenant.workspaceId)).filter((j) => j.groupKey === other.webhook_id);
    expect(recovered.map((j) => j.payload.event_id)).toEqual([laterRejected]);
  });

  it('a replay of an event whose retry waits out its back-off sends it now, without a second pending delivery', async () => {
    const { tenant, api } = await tenantApi('Hurry');
    const failing = await newReceiver(false);
    failing.answer = () => ({ status: 500, body: 'down' });
    const hook = await api.add({ url: `${failing.url}/hurry`, event_types: ['domain.verified'] });
    const event = await emit(tenant.workspaceId, 'domain.verified');
    await failing.waitFor(1, 10_000);
    // The failed attempt's retry waits minutes (the manual clock does not move): only the replay can bring it now.
    await expect.poll(async () => (await webhookJobs(tenant.workspaceId)).filter((j) => j.groupKey === hook.webhook_id && j.leaseToken === null)).toHaveLength(1);
    failing.answer = () => ({ status: 204 });
    const res = await api.replay(hook.webhook_id, event);
    expect(res.json()).toEqual({ ok: true, event_id: event, queued: false });
    const [, again] = await failing.waitFor(2, 10_000);
    expect(again!.headers['webhook-id']).toBe(event);
    await expect.poll(async () => (await webhookJobs(tenant.workspaceId)).filter((j) => j.groupKey === hook.webhook_id)).toHaveLength(0);
  });

  it('refuses a recover past the endpoint pending cap and replays past the workspace rate (429)', async () => {
    const { tenant, api } = await tenantApi('Capped');
    const bystander = await tenantApi('Bystander');
    const hanging = await newReceiver(true);
    const hook = await api.add({ url: `${hanging.url}/capped`, event_types: ['domain.verified'], active: false });
    h.clock.advance(1);
    const events: string[] = [];
    for (let i = 0; i <= ENDPOINT_PENDING_MAX; i += 1) events.push(await emit(tenant.workspaceId, 'domain.verified', { n: i }));
    await api.patch(hook.webhook_id, { active: true });

    const full = await api.recover(hook.webhook_id, { since: since() });
    expect(problem(full)).toEqual({ status: 429, error: 'webhook_backlog_full' });
    expect(Number(full.headers['retry-after'])).toBeGreaterThan(0);
    expect(await webhookJobs(tenant.workspaceId)).toEqual([]);

    // The rate: the recover above took one call of it; the replays take the rest, then 429 with Retry-After.
    const answers: LightMyRequestResponse[] = [];
    for (let i = 0; i < REPLAYS_PER_MINUTE; i += 1) answers.push(await api.replay(hook.webhook_id, events[i]!));
    expect(answers.slice(0, REPLAYS_PER_MINUTE - 1).map((r) => r.statusCode)).toEqual(Array(REPLAYS_PER_MINUTE - 1).fill(202));
    const limited = answers[REPLAYS_PER_MINUTE - 1]!;
    expect(problem(limited)).toEqual({ status: 429, error: 'too_many_replays' });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    // Another workspace's rate is its own.
    const other = await bystander.api.add({ url: `${hanging.url}/bystander`, event_types: ['domain.verified'], active: false });
    const theirs = await emit(bystander.tenant.workspaceId, 'domain.verified');
    await bystander.api.patch(other.webhook_id, { active: true });
    expect((await bystander.api.replay(other.webhook_id, theirs)).statusCode).toBe(202);
    // The rate refills with time.
    h.clock.advance(60_000);
    expect((await api.replay(hook.webhook_id, events[REPLAYS_PER_MINUTE]!)).statusCode).toBe(202);
  });

  it('claims delivery jobs round-robin across workspaces, within the per-workspace cap', async () => {
    const f = await createTenant(h, 'Delivery F');
    const g = await createTenant(h, 'Delivery G');
    // Another queue name, so that the service's worker leaves these jobs alone; the claim is the delivery worker's.
    const queue = `fair-delivery-${Math.random().toString(36).slice(2)}`;
    await db()
      .transaction()
      .execute(async (trx) => {
        for (let n = 0; n < 10; n += 1) await h.services.queue.enqueue(asWork(trx), { queue, workspaceId: f.workspaceId, payload: { who: 'F', n } });
      });
    h.clock.advance(1);
    await db()
      .transaction()
      .execute(async (trx) => {
        for (let n = 0; n < 3; n += 1) await h.services.queue.enqueue(asWork(trx), { queue, workspaceId: g.workspaceId, payload: { who: 'G', n } });
      });
    h.clock.advance(1);
    const caps = { perWorkspace: 2 };
    type Payload = { who: string; n: number };
    const order = (jobs: Array<{ payload: Payload; createdAt: number }>) =>
      [...jobs].sort((a, b) => a.createdAt - b.createdAt || a.payload.n - b.payload.n).map((j) => `${j.payload.who}${j.payload.n}`);
    // F's ten jobs arrived first, yet G's first job is in the first claim of two.
    const first = await h.services.queue.claim<Payload>(queue, 2, caps);
    expect(order(first)).toEqual(['F0', 'G0']);
    // Each workspace now runs one: one more each, then both are at their cap.
    const second = await h.services.queue.claim<Payload>(queue, 10, caps);
    expect(order(second)).toEqual(['F1', 'G1']);
    expect(await h.services.queue.claim(queue, 10, caps)).toEqual([]);
    // A finished job frees its workspace's slot, for that workspace's next job.
    expect(await h.services.queue.complete(first.find((j) => j.payload.who === 'F')!)).toBe(true);
    expect(order(await h.services.queue.claim<Payload>(queue, 10, caps))).toEqual(['F2']);
    // The delivery worker claims with the per-workspace cap of its setting.
    const delivery = h.services.handlers.find((handler) => handler.queue === DELIVERY_QUEUE)!;
    expect(delivery.workspaceConcurrency).toBe(h.config.fairQueue.deliveryWorkspaceConcurrency);
  });
});
