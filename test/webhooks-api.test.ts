import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asWork } from '../src/db/tables.js';
import { signingSecrets } from '../src/modules/webhooks/webhook.service.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, errorOf, memberSession, session, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';
import { SECRET_A, SECRET_B, webhookApi, type DeliveryBody, type WebhookBody } from './helpers/webhooks.js';

/**
 * Webhook endpoint management on the session surface: the object, validation, secrets
 * that never come back, the test route's answers, deliveries' paging, roles and tenant isolation.
 * Delivery itself is in webhooks-delivery.test.ts; the address rules in webhooks-addresses.test.ts.
 */
describe(`webhook endpoints API (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let acme: Tenant;
  let other: Tenant;
  let member: ReturnType<typeof webhookApi>;
  let owner: ReturnType<typeof webhookApi>;
  let outsider: ReturnType<typeof webhookApi>;
  let memberToken: string;

  beforeAll(async () => {
    h = await startMailHarness();
    // Public addresses through the test's own DNS server; nothing is delivered in this file (no worker runs).
    h.dns.set('hooks.example', { A: ['93.184.216.34'] });
    h.dns.set('other.example', { A: ['1.1.1.1'], AAAA: ['2606:4700:4700::1111'] });
    acme = await createTenant(h, 'Acme');
    other = await createTenant(h, 'Other');
    memberToken = (await memberSession(h, acme.workspaceId, 'member')).token;
    member = webhookApi(h, memberToken);
    owner = webhookApi(h, (await memberSession(h, acme.workspaceId, 'owner')).token);
    outsider = webhookApi(h, (await memberSession(h, other.workspaceId, 'owner')).token);
  });
  afterAll(async () => {
    await h.services.webhooks.close();
    await h.close();
  });

  it('creates an endpoint with the documented shape; any member may; the secret is never echoed', async () => {
    const res = await member.create({ url: 'https://hooks.example/mailroom?x=1', event_types: ['message.received', 'domain.verified'], secret: SECRET_A });
    expect(res.statusCode).toBe(201);
    const body = res.json<WebhookBody>();
    expect(Object.keys(body).sort()).toEqual(['active', 'created_at', 'disabled_at', 'disabled_reason', 'event_types', 'has_secret', 'updated_at', 'url', 'webhook_id']);
    expect(body).toMatchObject({ url: 'https://hooks.example/mailroom?x=1', event_types: ['message.received', 'domain.verified'], active: true, has_secret: true });
    expect(body.webhook_id).toMatch(/^whk_[0-9a-z]{26}$/);
    expect(body.created_at).toBe(new Date(h.clock.now()).toISOString());
    expect(body.updated_at).toBe(body.created_at);
    expect(res.body).not.toContain(SECRET_A.slice(6));

    for (const read of [await member.get(body.webhook_id), await member.list(), await owner.get(body.webhook_id)]) {
      expect(read.statusCode).toBe(200);
      expect(read.body).not.toContain(SECRET_A.slice(6));
      expect(read.body).not.toContain('"secret"');
    }
    expect((await member.get(body.webhook_id)).json()).toEqual(body);
    // The secret is kept (encrypted) to sign with; nothing else shows it.
    const row = await h.services.database.db.selectFrom('webhooks').select(['id', 'secret', 'previous_secrets', 'workspace_id']).where('id', '=', body.webhook_id).executeTakeFirstOrThrow();
    expect(row.workspace_id).toBe(acme.workspaceId);
    expect(row.secret).toMatch(/^v1:/);
    expect(signingSecrets(h.services.secretBox, row, h.clock.now())).toEqual([SECRET_A]);
  });

  it('generates a secret when none is given and shows it in the creation answer only', async () => {
    const res = await member.create({ url: 'https://hooks.example/generated' });
    expect(res.statusCode).toBe(201);
    const body = res.json<WebhookBody>();
    expect(body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(Buffer.from(body.secret!.slice(6), 'base64')).toHaveLength(24);
    expect(body).toMatchObject({ has_secret: true, event_types: [], active: true });
    const again = await member.get(body.webhook_id);
    expect(again.body).not.toContain(body.secret!.slice(6));
    expect(again.json()).toEqual({ ...body, secret: undefined });
    // A secret the caller gives is not shown back, even at creation.
    expect((await member.create({ url: 'https://hooks.example/given', secret: SECRET_B })).json<WebhookBody>().secret).toBeUndefined();
  });

  it('lists the workspace’s endpoints newest first', async () => {
    const first = await member.add({ url: 'https://hooks.example/list-1' });
    h.clock.advance(1000);
    const second = await member.add({ url: 'https://hooks.example/list-2', active: false });
    const list = (await member.list()).json<{ webhooks: WebhookBody[] }>().webhooks;
    expect(list.map((w) => w.webhook_id).slice(0, 2)).toEqual([second.webhook_id, first.webhook_id]);
    expect(list.find((w) => w.webhook_id === second.webhook_id)?.active).toBe(false);
  });

  it('validates the body: fields, types, event names, secrets', async () => {
    const bad: Array<[Record<string, unknown>, string]> = [
      [{}, 'invalid_request'],
      [{ url: '' }, 'invalid_request'],
      [{ url: 42 }, 'invalid_request'],
      [{ url: 'https://hooks.example/', extra: 1 }, 'invalid_request'],
      [{ url: 'https://hooks.example/', event_types: 'message.received' }, 'invalid_request'],
      [{ url: 'https://hooks.example/', event_types: ['message.recieved'] }, 'invalid_event_type'],
      [{ url: 'https://hooks.example/', event_types: ['*'] }, 'invalid_event_type'],
      [{ url: 'https://hooks.example/', active: 'yes' }, 'invalid_request'],
      [{ url: 'https://hooks.example/', secret: 'plain-secret' }, 'invalid_secret'],
      [{ url: 'https://hooks.example/', secret: 'whsec_not*base64' }, 'invalid_secret'],
      [{ url: 'https://hooks.example/', secret: `whsec_${Buffer.alloc(8).toString('base64')}` }, 'invalid_secret'],
      [{ url: 'https://hooks.example/', secret: `whsec_${Buffer.alloc(65).toString('base64')}` }, 'invalid_secret'],
      [{ url: `https://hooks.example/${'a'.repeat(2100)}` }, 'invalid_request'],
    ];
    for (const [payload, code] of bad) expect(errorOf(await member.create(payload)), JSON.stringify(payload).slice(0, 80)).toMatchObject({ status: 400, error: code });
    const unknown = errorOf(await member.create({ url: 'https://hooks.example/', event_types: ['message.opened'] }));
    expect(unknown.detail).toContain("unknown event type 'message.opened'");
    // Every documented event name is accepted, message.delivered included (never emitted); duplicates kept once.
    const all = await member.add({
      url: 'https://hooks.example/all',
      event_types: ['message.received', 'message.sent', 'message.accepted', 'message.failed', 'message.delivered', 'message.bounced', 'message.rejected', 'message.complained', 'domain.verified', 'message.sent'],
    });
    expect(all.event_types).toHaveLength(9);
    expect(all.event_types.filter((t) => t === 'message.sent')).toHaveLength(1);
    // Not JSON, and a query parameter where none is taken.
    expect((await h.app.inject({ method: 'POST', url: '/app/api/webhooks', headers: { ...session(memberToken), 'content-type': 'text/plain' }, payload: 'url=x' })).statusCode).toBe(415);
    expect(errorOf(await h.app.inject({ method: 'GET', url: '/app/api/webhooks?limit=5', headers: session(memberToken) }))).toMatchObject({ status: 400 });
  });

  it('patches only the fields given, re-checking the URL, and keeps the old secret signing for 24 hours', async () => {
    const created = await member.add({ url: 'https://hooks.example/patch', event_types: ['message.sent'], secret: SECRET_A });
    h.clock.advance(5000);
    const res = await member.patch(created.webhook_id, { event_types: [] });
    expect(res.statusCode).toBe(200);
    const patched = res.json<WebhookBody>();
    expect(patched).toMatchObject({ url: created.url, event_types: [], active: true, has_secret: true, created_at: created.created_at });
    expect(patched.updated_at).not.toBe(created.updated_at);

    expect((await member.patch(created.webhook_id, { url: 'https://other.example/new' })).json<WebhookBody>().url).toBe('https://other.example/new');
    const refused = errorOf(await member.patch(created.webhook_id, { url: 'http://10.0.0.1/' }));
    expect(refused).toMatchObject({ status: 400, error: 'invalid_webhook_url' });
    expect((await member.get(created.webhook_id)).json<WebhookBody>().url).toBe('https://other.example/new');
    expect(errorOf(await member.patch(created.webhook_id, { secret: 'whsec_short' }))).toMatchObject({ status: 400, error: 'invalid_secret' });
    expect(errorOf(await member.patch(created.webhook_id, { webhook_id: 'whk_x' }))).toMatchObject({ status: 400, error: 'invalid_request' });

    const rotated = await member.patch(created.webhook_id, { secret: SECRET_B });
    expect(rotated.statusCode).toBe(200);
    expect(rotated.body).not.toContain(SECRET_B.slice(6));
    const row = await h.services.database.db.selectFrom('webhooks').select(['id', 'secret', 'previous_secrets']).where('id', '=', created.webhook_id).executeTakeFirstOrThrow();
    expect(JSON.parse(row.previous_secrets)).toMatchObject([{ until: h.clock.now() + 24 * 3_600_000 }]);
    expect(row.previous_secrets).toMatch(/^\[{"secret":"v1:/);
    expect(signingSecrets(h.services.secretBox, row, h.clock.now())).toEqual([SECRET_B, SECRET_A]);
    expect(signingSecrets(h.services.secretBox, row, h.clock.now() + 24 * 3_600_000)).toEqual([SECRET_B]);
    // Setting the same secret again changes nothing.
    await member.patch(created.webhook_id, { secret: SECRET_B });
    expect((await h.services.database.db.selectFrom('webhooks').select('previous_secrets').where('id', '=', created.webhook_id).executeTakeFirstOrThrow()).previous_secrets).toBe(row.previous_secrets);

    expect((await member.patch(created.webhook_id, { active: false })).json<WebhookBody>().active).toBe(false);
    expect((await member.patch(created.webhook_id, { active: true })).json<WebhookBody>().active).toBe(true);
    // An empty body changes nothing.
    expect((await member.patch(created.webhook_id, {})).json<WebhookBody>()).toEqual((await member.get(created.webhook_id)).json());
  });

  it('deletes an endpoint with its history; then it is gone', async () => {
    const created = await member.add({ url: 'https://hooks.example/delete' });
    const res = await member.remove(created.webhook_id);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ ok: true, webhook_id: created.webhook_id });
    for (const again of [await member.get(created.webhook_id), await member.remove(created.webhook_id), await member.deliveries(created.webhook_id), await member.patch(created.webhook_id, { active: false })]) {
      expect(errorOf(again)).toMatchObject({ status: 404, error: 'webhook_not_found' });
    }
  });

  it('test route: 202 with a real stored event (data.test) queued for that endpoint only; inactive → 409', async () => {
    const target = await member.add({ url: 'https://hooks.example/test-target', event_types: ['domain.verified'] });
    const bystander = await member.add({ url: 'https://hooks.example/test-bystander' }); // every event
    const res = await member.test(target.webhook_id, { event_type: 'message.bounced' });
    expect(res.statusCode).toBe(202);
    const { event_id } = res.json<{ ok: true; event_id: string }>();
    expect(res.json()).toEqual({ ok: true, event_id });
    expect(event_id).toMatch(/^evt_/);

    const db = h.services.database.db;
    const event = await db.selectFrom('events').selectAll().where('id', '=', event_id).executeTakeFirstOrThrow();
    expect(event).toMatchObject({ workspace_id: acme.workspaceId, type: 'message.bounced' });
    expect(JSON.parse(event.payload)).toEqual({
      event_id,
      event_type: 'message.bounced',
      created_at: new Date(h.clock.now()).toISOString(),
      workspace_id: acme.workspaceId,
      data: { test: true, webhook_id: target.webhook_id },
    });
    // Whatever the target's filter says, and nobody else's.
    const jobs = (await h.services.queue.inspect<{ event_id: string }>(asWork(db), { queue: 'webhook' })).filter((j) => j.payload.event_id === event_id);
    expect(jobs.map(({ payload, groupKey, maxAttempts, state }) => ({ payload, groupKey, maxAttempts, state }))).toEqual([
      { payload: { webhook_id: target.webhook_id, event_id }, groupKey: target.webhook_id, maxAttempts: 8, state: 'pending' },
    ]);
    expect(jobs.some((j) => j.groupKey === bystander.webhook_id)).toBe(false);

    expect(errorOf(await member.test(target.webhook_id, { event_type: 'message.nope' }))).toMatchObject({ status: 400, error: 'invalid_event_type' });
    expect(errorOf(await member.test(target.webhook_id, { event_type: 'message.delivered' }))).toMatchObject({ status: 400, error: 'invalid_event_type' });
    expect(errorOf(await member.test(target.webhook_id, {}))).toMatchObject({ status: 400, error: 'invalid_request' });
    await member.patch(target.webhook_id, { active: false });
    expect(errorOf(await member.test(target.webhook_id, { event_type: 'message.sent' }))).toMatchObject({ status: 409, error: 'webhook_inactive' });
    // Deactivation also dropped the test delivery still waiting for a worker.
    const left = await h.services.queue.inspect(asWork(db), { queue: 'webhook', groupKey: target.webhook_id });
    expect(left).toEqual([]);
  });

  it('deliveries: empty history, limit 1..500', async () => {
    const created = await member.add({ url: 'https://hooks.example/deliveries' });
    expect((await member.deliveries(created.webhook_id)).json()).toEqual({ deliveries: [] });
    for (const q of ['?limit=0', '?limit=501', '?limit=x', '?offset=1']) expect(errorOf(await member.deliveries(created.webhook_id, q)), q).toMatchObject({ status: 400, error: 'invalid_request' });
    // Newest first, limited: written directly (delivery itself is another file's subject).
    const db = h.services.database.db;
    for (let i = 1; i <= 3; i += 1) {
      await db
        .insertInto('webhook_deliveries')
        .values({ id: `dlv_0000000000000000000000000${i}`, workspace_id: acme.workspaceId, webhook_id: created.webhook_id, event_id: 'evt_x', event_type: 'message.sent', attempt: i, status_code: i === 3 ? 200 : null, error: i === 3 ? null : 'ECONNREFUSED', success: i === 3 ? 1 : 0, duration_ms: 5, delivered_at: h.clock.now() + i })
        .execute();
    }
    const two = (await member.deliveries(created.webhook_id, '?limit=2')).json<{ deliveries: DeliveryBody[] }>().deliveries;
    expect(two.map((d) => d.attempt)).toEqual([3, 2]);
    expect(two[0]).toEqual({ delivery_id: 'dlv_00000000000000000000000003', event_id: 'evt_x', event_type: 'message.sent', attempt: 3, status_code: 200, error: null, success: true, duration_ms: 5, delivered_at: new Date(h.clock.now() + 3).toISOString() });
    expect(two[1]).toMatchObject({ status_code: null, error: 'ECONNREFUSED', success: false });
  });

  it('keeps each workspace’s endpoints and deliveries to itself (another tenant’s → 404)', async () => {
    const mine = await member.add({ url: 'https://hooks.example/mine' });
    const theirs = await outsider.add({ url: 'https://hooks.example/theirs' });
    const outsiderList = (await outsider.list()).json<{ webhooks: WebhookBody[] }>().webhooks;
    expect(outsiderList.map((w) => w.webhook_id)).toEqual([theirs.webhook_id]);
    expect((await member.list()).json<{ webhooks: WebhookBody[] }>().webhooks.some((w) => w.webhook_id === theirs.webhook_id)).toBe(false);
    for (const res of [
      await outsider.get(mine.webhook_id),
      await outsider.patch(mine.webhook_id, { active: false }),
      await outsider.deliveries(mine.webhook_id),
      await outsider.test(mine.webhook_id, { event_type: 'message.sent' }),
      await outsider.remove(mine.webhook_id),
    ]) {
      expect(errorOf(res)).toMatchObject({ status: 404, error: 'webhook_not_found' });
    }
    expect((await member.get(mine.webhook_id)).json<WebhookBody>().active).toBe(true);
    // Sessions only: an API key gets 401 on the session surface, and the API-key surface has no webhook routes.
    expect((await h.app.inject({ method: 'GET', url: '/app/api/webhooks', headers: bearer(acme.apiKey) })).statusCode).toBe(401);
    expect((await h.app.inject({ method: 'GET', url: '/app/api/webhooks' })).statusCode).toBe(401);
    expect(errorOf(await h.app.inject({ method: 'GET', url: '/webhooks', headers: bearer(acme.apiKey) }))).toMatchObject({ status: 404, error: 'not_found' });
  });

  it('describes the routes in /openapi.json without any secret field in a read answer', async () => {
    const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json<{ paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: { properties?: Record<string, unknown> } }> }> }>> }>();
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/app/api/webhooks', '/app/api/webhooks/{webhook_id}', '/app/api/webhooks/{webhook_id}/deliveries', '/app/api/webhooks/{webhook_id}/test']));
    const read = doc.paths['/app/api/webhooks/{webhook_id}']!.get!.responses['200']!.content!['application/json']!.schema;
    expect(Object.keys(read.properties ?? {})).not.toContain('secret');
  });
});
