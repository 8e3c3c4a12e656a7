import type { LightMyRequestResponse } from 'fastify';
import { asWork } from '../src/db/tables.js';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventType } from '../src/modules/events/event.types.js';
import { AUTO_DISABLE_MS, RECOVER_SCAN_LIMIT } from '../src/modules/webhooks/webhook.types.js';
import { TEST_DIALECT } from './helpers/database.js';
import { createTenant, login, memberSession, session, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';
import { startReceiver, type ReceivedRequest, type WebhookReceiver } from './helpers/webhook-receiver.js';
import { eventually, SECRET_A, startWorker, webhookApi, type DeliveryBody, type WebhookBody } from './helpers/webhooks.js';

/**
 * Webhook recovery: recover and replay through the session API, and the automatic disabling of an
 * endpoint that fails every attempt for 5 days, against real HTTP receivers on loopback, with the service's own worker.
 * Time is the harness's manual clock: retries become due, and failures grow old, only when the test moves it.
 */

const env = { MAILROOM_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8', MAILROOM_WEBHOOK_TIMEOUT_MS: '2500', MAILROOM_WEBHOOK_BACKOFF_BASE_MS: '1000' };
const DAY = 86_400_000;

type Api = ReturnType<typeof webhookApi> & {
  recover(id: string, payload: Record<string, unknown>): Promise<LightMyRequestResponse>;
  replay(id: string, eventId: string): Promise<LightMyRequestResponse>;
};

/** An error answer as status and code. */
const problem = (res: LightMyRequestResponse) => ({ status: res.statusCode, error: res.json<{ error?: string }>().error });

const eventIdOf = (r: ReceivedRequest) => (JSON.parse(r.body) as { event_id: string }).event_id;
const header = (r: ReceivedRequest, name: string) => String(r.headers[name] ?? '');

describe(`webhook recovery, replay and auto-disable (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let worker: ReturnType<typeof startWorker>;
  const receivers: WebhookReceiver[] = [];

  function apiFor(token: string): Api {
    const headers = session(token);
    return Object.assign(webhookApi(h, token), {
      recover: (id: string, payload: Record<string, unknown>) => h.app.inject({ method: 'POST', url: `/app/api/webhooks/${id}/recover`, headers, payload }),
      replay: (id: string, eventId: string) => h.app.inject({ method: 'POST', url: `/app/api/webhooks/${id}/deliveries/${eventId}/replay`, headers }),
    });
  }

  /** A member's API; `again()` logs the same member in afresh (sessions expire as the manual clock moves). */
  async function tenantApi(name: string): Promise<{ tenant: Tenant; api: Api; again: () => Promise<Api> }> {
    const tenant = await createTenant(h, name);
    const member = await memberSession(h, tenant.workspaceId, 'member');
    return { tenant, api: apiFor(member.token), again: async () => apiFor(await login(h, member.email, 'correct horse battery')) };
  }

  async function newReceiver(): Promise<WebhookReceiver> {
    const r = await startReceiver();
    receivers.push(r);
    return r;
  }

  /** Emit through the outbox as every producer does (the fan-out queues the deliveries in the same transaction). */
  /** The payload the events service stored for each event emitted here, by id. */
  const storedPayloads = new Map<string, string>();
  async function emit(workspaceId: string, type: Exclude<EventType, 'message.delivered'>, data: Record<string, unknown> = {}): Promise<string> {
    const event = await h.services.database.db.transaction().execute((trx) => h.services.events.emit(asWork(trx), { workspaceId, type, data }));
    storedPayloads.set(event.id, event.payload);
    return event.id;
  }

  async function attempts(api: Api, webhookId: string, count: number, what = (_d: DeliveryBody) => true): Promise<DeliveryBody[]> {
    return eventually(`${count} attempts of ${webhookId}`, async () => {
      const found = (await api.history(webhookId)).filter(what);
      return found.length >= count ? found : undefined;
    });
  }

  const pendingJobs = (webhookId: string) => h.services.queue.inspect(asWork(h.services.database.db), { queue: 'webhook', groupKey: webhookId, state: 'pending' });

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

  it('recover re-queues exactly the events the endpoint missed while its receiver failed or it was inactive, once', async () => {
    const { tenant, api } = await tenantApi('Recover');
    const r = await newReceiver();
    const before = await emit(tenant.workspaceId, 'domain.verified', { n: 'before the endpoint' });
    h.clock.advance(1);
    const t0 = h.clock.now();
    const hook = await api.add({ url: `${r.url}/hook`, event_types: ['domain.verified', 'message.received'], secret: SECRET_A });

    // Received while the receiver is up.
    const got = await emit(tenant.workspaceId, 'domain.verified', { n: 'got' });
    await r.waitFor(1);
    await attempts(api, hook.webhook_id, 1, (d) => d.success);

    // The receiver fails: first attempts fail and retries wait (the clock does not move).
    r.answer = () => ({ status: 500, body: 'down' });
    const failed = await emit(tenant.workspaceId, 'domain.verified', { n: 'failed' });
    const died = await emit(tenant.workspaceId, 'message.received', { n: 'died' });
    const filtered = await emit(tenant.workspaceId, 'message.rejected', { n: 'not taken by the filter' });
    const test = (await api.test(hook.webhook_id, { event_type: 'domain.verified' })).json<{ event_id: string }>().event_id;
    await attempts(api, hook.webhook_id, 3, (d) => !d.success);
    // While their retries are pending, nothing is queued twice.
    const early = await api.recover(hook.webhook_id, { since: new Date(t0).toISOString() });
    expect(early.statusCode).toBe(202);
    expect(early.json()).toEqual({ ok: true, queued: 0, next_before: null });
    // One delivery job gives up (as after its last attempt): it no longer waits, and recover takes the event again.
    await h.services.database.db
      .updateTable('jobs')
      .set({ state: 'dead', last_error: 'gave up' })
      .where('queue', '=', 'webhook')
      .where('group_key', '=', hook.webhook_id)
      .where('payload', 'like', `%${died}%`)
      .execute();

    // Inactive: pending retries are dropped and nothing is queued for new events.
    expect((await api.patch(hook.webhook_id, { active: false })).statusCode).toBe(200);
    expect(await pendingJobs(hook.webhook_id)).toEqual([]);
    const whileInactive = await emit(tenant.workspaceId, 'domain.verified', { n: 'while inactive' });
    expect(problem(await api.recover(hook.webhook_id, { since: new Date(t0).toISOString() }))).toMatchObject({ status: 409, error: 'webhook_inactive' });
    expect((await api.patch(hook.webhook_id, { active: true })).statusCode).toBe(200);

    // Up again: recover sends what it missed, not what it got, not other types, not test events, not older events.
    r.answer = () => ({ status: 204 });
    const seen = r.received.length;
    const res = await api.recover(hook.webhook_id, { since: new Date(t0 - 60_000).toISOString() });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({ ok: true, queued: 3, next_before: null });
    const recovered = (await r.waitFor(seen + 3)).slice(seen);
    expect(recovered.map(eventIdOf).sort()).toEqual([failed, died, whileInactive].sort());
    for (const request of recovered) {
      expect(request.body).toBe(storedPayloads.get(eventIdOf(request)));
      expect(header(request, 'webhook-id')).toBe(eventIdOf(request));
    }
    await attempts(api, hook.webhook_id, 4, (d) => d.success);
    for (const id of [got, before, filtered, test]) expect(recovered.map(eventIdOf)).not.toContain(id);

    // Everything is received now: a second recover finds nothing.
    expect((await api.recover(hook.webhook_id, { since: new Date(t0).toISOString() })).json()).toEqual({ ok: true, queued: 0, next_before: null });
    expect(r.received.length).toBe(seen + 3);
  });

  it('replay re-sends one event, received or not, with the same event id, signed bytes and payload', async () => {
    const { tenant, api } = await tenantApi('Replay');
    const r = await newReceiver();
    const hook = await api.add({ url: `${r.url}/replay`, secret: SECRET_A });
    const eventId = await emit(tenant.workspaceId, 'domain.verified', { domain: 'replayed.example' });
    const [first] = await r.waitFor(1);
    await attempts(api, hook.webhook_id, 1, (d) => d.success);

    const res = await api.replay(hook.webhook_id, eventId);
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({ ok: true, event_id: eventId, queued: true });
    const [, again] = await r.waitFor(2);
    expect(header(again!, 'webhook-id')).toBe(eventId);
    expect(again!.body).toBe(first!.body);
    expect(new Webhook(SECRET_A).verify(again!.body, again!.headers as Record<string, string>)).toMatchObject({ event_id: eventId, data: { domain: 'replayed.example' } });
    const history = await attempts(api, hook.webhook_id, 2, (d) => d.event_id === eventId && d.success);
    expect(history).toHaveLength(2);

    // Unknown events, another workspace's events and endpoints are 404; an inactive endpoint is 409.
    expect(problem(await api.replay(hook.webhook_id, 'evt_00000000000000000000000000'))).toMatchObject({ status: 404, error: 'event_not_found' });
    const other = await tenantApi('Replay bystander');
    const foreignEvent = await emit(other.tenant.workspaceId, 'domain.verified');
    expect(problem(await api.replay(hook.webhook_id, foreignEvent))).toMatchObject({ status: 404, error: 'event_not_found' });
    expect(problem(await other.api.replay(hook.webhook_id, eventId))).toMatchObject({ status: 404, error: 'webhook_not_found' });
    expect((await other.api.recover(hook.webhook_id, { since: new Date(h.clock.now()).toISOString() })).statusCode).toBe(404);
    await api.patch(hook.webhook_id, { active: false });
    expect(problem(await api.replay(hook.webhook_id, eventId))).toMatchObject({ status: 409, error: 'webhook_inactive' });
    expect(r.received).toHaveLength(2);
  });

  it('recover refuses a bad since or before (400 naming the field) and walks a long history in bounded steps', async () => {
    const { tenant, api } = await tenantApi('Recover bounds');
    const r = await newReceiver();
    const hook = await api.add({ url: `${r.url}/bounded`, event_types: ['domain.verified'], active: false });
    const now = h.clock.now();
    for (const since of ['yesterday', '2026-11-30', '2026-11-30T08:00:00', new Date(now + 60_000).toISOString(), new Date(now - 31 * DAY).toISOString()]) {
      expect(problem(await api.recover(hook.webhook_id, { since })), since).toMatchObject({ status: 400, error: 'invalid_since' });
    }
    expect((await api.recover(hook.webhook_id, {})).statusCode).toBe(400);
    expect((await api.recover(hook.webhook_id, { since: new Date(now).toISOString(), extra: 1 })).statusCode).toBe(400);

    // Two events of its type, then more events than one call examines, all while the endpoint was inactive.
    const old = [await emit(tenant.workspaceId, 'domain.verified', { n: 1 }), await emit(tenant.workspaceId, 'domain.verified', { n: 2 })];
    await h.services.database.db.transaction().execute(async (trx) => {
      for (let i = 0; i < RECOVER_SCAN_LIMIT; i++) await h.services.events.emit(asWork(trx), { workspaceId: tenant.workspaceId, type: 'message.rejected', data: { i } });
    });
    await api.patch(hook.webhook_id, { active: true });
    expect(problem(await api.recover(hook.webhook_id, { since: new Date(now).toISOString(), before: 'evt_00000000000000000000000000' }))).toMatchObject({ status: 400, error: 'invalid_before' });
    const first = (await api.recover(hook.webhook_id, { since: new Date(now).toISOString() })).json<{ queued: number; next_before: string | null }>();
    expect(first.queued).toBe(0);
    expect(first.next_before).toMatch(/^evt_/);
    const second = (await api.recover(hook.webhook_id, { since: new Date(now).toISOString(), before: first.next_before })).json<Record<string, unknown>>();
    expect(second).toEqual({ ok: true, queued: 2, next_before: null });
    expect((await r.waitFor(2)).map(eventIdOf).sort()).toEqual([...old].sort());
  });

  it('disables an endpoint whose every attempt failed for 5 days, says why, tells the workspace; re-activating clears it', async () => {
    const { tenant, api: first, again } = await tenantApi('Auto-disable');
    const failing = await newReceiver();
    failing.answer = () => ({ status: 500, body: 'still broken' });
    const watcher = await newReceiver();
    const hook = await first.add({ url: `${failing.url}/broken` });
    const watch = await first.add({ url: `${watcher.url}/watch`, event_types: ['webhook.disabled'] });
    const start = h.clock.now();

    await emit(tenant.workspaceId, 'domain.verified', { n: 1 });
    await attempts(first, hook.webhook_id, 1);
    // Just short of 5 days: the retry fails, and the endpoint stays active.
    h.clock.advance(AUTO_DISABLE_MS - 1000);
    let api = await again();
    await attempts(api, hook.webhook_id, 2);
    expect((await api.get(hook.webhook_id)).json<WebhookBody & { disabled_at: string | null }>()).toMatchObject({ active: true, disabled_at: null, disabled_reason: null });

    // 5 days after the first failure, the next failed attempt disables it.
    h.clock.advance(1000);
    api = await again();
    await emit(tenant.workspaceId, 'domain.verified', { n: 2 });
    await attempts(api, hook.webhook_id, 3);
    const view = await eventually('disabled', async () => {
      const body = (await api.get(hook.webhook_id)).json<WebhookBody & { disabled_at: string | null; disabled_reason: string | null }>();
      return body.active ? undefined : body;
    });
    expect(view.disabled_at).toBe(new Date(h.clock.now()).toISOString());
    expect(view.disabled_reason).toBe(`every delivery attempt failed for 5 days (since ${new Date(start).toISOString()}); last error: HTTP 500: still broken`);
    expect(await pendingJobs(hook.webhook_id)).toEqual([]);
    expect((await api.list()).json<{ webhooks: WebhookBody[] }>().webhooks.find((w) => w.webhook_id === hook.webhook_id)).toMatchObject({ active: false, disabled_reason: view.disabled_reason });

    // A webhook.disabled event in the workspace's stream, delivered to the endpoint that asked for it.
    const [notice] = await watcher.waitFor(1);
    expect(JSON.parse(notice!.body)).toMatchObject({ event_type: 'webhook.disabled', workspace_id: tenant.workspaceId, data: { webhook_id: hook.webhook_id, active: false, disabled_reason: view.disabled_reason } });
    expect(failing.received.filter((req) => req.body.includes('webhook.disabled'))).toEqual([]);
    expect((await api.get(watch.webhook_id)).json()).toMatchObject({ active: true });

    // Re-activated: the reason goes, failures count afresh (one more failure does not disable it again).
    const patched = (await api.patch(hook.webhook_id, { active: true })).json<Record<string, unknown>>();
    expect(patched).toMatchObject({ active: true, disabled_at: null, disabled_reason: null });
    await emit(tenant.workspaceId, 'domain.verified', { n: 3 });
    await attempts(api, hook.webhook_id, 4);
    expect((await api.get(hook.webhook_id)).json()).toMatchObject({ active: true, disabled_at: null });
  });

  it('does not disable an endpoint that succeeded in between', async () => {
    const { tenant, api: first, again } = await tenantApi('Flaky');
    const flaky = await newReceiver();
    let good = '';
    flaky.answer = (request) => (eventIdOf(request) === good ? { status: 204 } : { status: 503, body: 'flaky' });
    const hook = await first.add({ url: `${flaky.url}/flaky` });

    await emit(tenant.workspaceId, 'domain.verified', { n: 1 });
    await attempts(first, hook.webhook_id, 1);
    h.clock.advance(3 * DAY);
    good = await emit(tenant.workspaceId, 'domain.verified', { n: 2 });
    let api = await again();
    await attempts(api, hook.webhook_id, 1, (d) => d.success);
    h.clock.advance(2 * DAY + 1000);
    api = await again();
    const failures = (await api.history(hook.webhook_id)).filter((d) => !d.success).length;
    await emit(tenant.workspaceId, 'domain.verified', { n: 3 });
    await attempts(api, hook.webhook_id, failures + 1, (d) => !d.success);
    expect((await api.get(hook.webhook_id)).json()).toMatchObject({ active: true, disabled_at: null, disabled_reason: null });
  });
});
