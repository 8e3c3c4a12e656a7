import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, errorOf, memberSession, session, startHarness, type Harness, type Tenant } from './helpers/harness.js';

describe(`mailboxes (${TEST_DIALECT})`, () => {
  let h: Harness;
  let acme: Tenant;
  let other: Tenant;
  let memberToken: string;
  let adminToken: string;
  let ownerToken: string;

  beforeAll(async () => {
    h = await startHarness({ MAILROOM_HOSTED_DOMAINS: 'mailroom.localhost,hosted.example' });
    acme = await createTenant(h, 'Acme');
    other = await createTenant(h, 'Other');
    memberToken = (await memberSession(h, acme.workspaceId, 'member')).token;
    adminToken = (await memberSession(h, acme.workspaceId, 'admin')).token;
    ownerToken = (await memberSession(h, acme.workspaceId, 'owner')).token;
  });
  afterAll(async () => h.close());

  it('creates, lists, gets and deletes a mailbox with an API key', async () => {
    const created = await h.app.inject({
      method: 'POST',
      url: '/mailboxes?address=Orders@Mailroom.Localhost&description=Sales%20team',
      headers: bearer(acme.apiKey),
    });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toEqual({
      address: 'orders@mailroom.localhost',
      description: 'Sales team',
      created_at: new Date(h.clock.now()).toISOString(),
      message_count: 0,
      unread_count: 0,
    });

    const list = await h.app.inject({ method: 'GET', url: '/mailboxes', headers: bearer(acme.apiKey) });
    expect(list.statusCode).toBe(200);
    expect(list.json<{ mailboxes: { address: string }[] }>().mailboxes.map((m) => m.address)).toEqual(['orders@mailroom.localhost']);

    const got = await h.app.inject({ method: 'GET', url: '/mailboxes/ORDERS@mailroom.localhost', headers: bearer(acme.apiKey) });
    expect(got.statusCode).toBe(200);
    expect(got.json()).toMatchObject({ address: 'orders@mailroom.localhost', description: 'Sales team' });

    const deleted = await h.app.inject({ method: 'DELETE', url: '/mailboxes/orders@mailroom.localhost', headers: bearer(acme.apiKey) });
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json()).toEqual({ ok: true, address: 'orders@mailroom.localhost' });

    const gone = await h.app.inject({ method: 'GET', url: '/mailboxes/orders@mailroom.localhost', headers: bearer(acme.apiKey) });
    expect(errorOf(gone)).toMatchObject({ status: 404, error: 'mailbox_not_found' });
  });

  it('accepts a JSON body on create, the body winning over the query', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/mailboxes?description=from%20query',
      headers: bearer(acme.apiKey),
      payload: { address: 'json@hosted.example', description: 'from body' },
    });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ address: 'json@hosted.example', description: 'from body' });
  });

  it('refuses bad input with 400 and a named error', async () => {
    const cases: Array<[string, unknown, string]> = [
      ['/mailboxes', undefined, 'invalid_request'], // no address at all
      ['/mailboxes?address=not-an-address', undefined, 'invalid_address'],
      ['/mailboxes?address=a@elsewhere.example', undefined, 'domain_not_allowed'],
      ['/mailboxes', { address: 'x@mailroom.localhost', extra: true }, 'invalid_request'],
      ['/mailboxes', { address: 42 }, 'invalid_request'],
      ['/mailboxes', { address: 'x@mailroom.localhost', description: 'd'.repeat(1001) }, 'invalid_request'],
      ['/mailboxes?limit=3', undefined, 'invalid_request'],
    ];
    for (const [url, payload, error] of cases) {
      const res = await h.app.inject({ method: 'POST', url, headers: bearer(acme.apiKey), ...(payload === undefined ? {} : { payload: payload as object }) });
      expect(errorOf(res), `${url} ${JSON.stringify(payload)}`).toMatchObject({ status: 400, error });
    }
  });

  it('keeps addresses unique across the whole service', async () => {
    const first = await h.app.inject({ method: 'POST', url: '/mailboxes?address=shared@mailroom.localhost', headers: bearer(acme.apiKey) });
    expect(first.statusCode).toBe(201);
    const again = await h.app.inject({ method: 'POST', url: '/mailboxes?address=SHARED@mailroom.localhost', headers: bearer(other.apiKey) });
    expect(errorOf(again)).toMatchObject({ status: 409, error: 'address_taken' });
  });

  it('shows the session surface the same mailboxes as the API-key surface', async () => {
    const created = await h.app.inject({ method: 'POST', url: '/app/api/mailboxes', headers: session(adminToken), payload: { address: 'team@mailroom.localhost' } });
    expect(created.statusCode).toBe(201);
    const viaSession = await h.app.inject({ method: 'GET', url: '/app/api/mailboxes', headers: session(memberToken) });
    const viaKey = await h.app.inject({ method: 'GET', url: '/mailboxes', headers: bearer(acme.apiKey) });
    expect(viaSession.statusCode).toBe(200);
    expect(viaSession.json()).toEqual(viaKey.json());
    expect(viaSession.json<{ mailboxes: { address: string }[] }>().mailboxes.map((m) => m.address)).toContain('team@mailroom.localhost');
    const byOwner = await h.app.inject({ method: 'POST', url: '/app/api/mailboxes?address=owner-made@mailroom.localhost', headers: session(ownerToken) });
    expect(byOwner.statusCode).toBe(201);
  });

  it('never shows one tenant another tenant\'s mailbox', async () => {
    await h.app.inject({ method: 'POST', url: '/mailboxes?address=private@mailroom.localhost', headers: bearer(other.apiKey) });
    const get = await h.app.inject({ method: 'GET', url: '/mailboxes/private@mailroom.localhost', headers: bearer(acme.apiKey) });
    expect(errorOf(get)).toMatchObject({ status: 404, error: 'mailbox_not_found' });
    const del = await h.app.inject({ method: 'DELETE', url: '/mailboxes/private@mailroom.localhost', headers: bearer(acme.apiKey) });
    expect(errorOf(del)).toMatchObject({ status: 404, error: 'mailbox_not_found' });
    const list = await h.app.inject({ method: 'GET', url: '/mailboxes', headers: bearer(acme.apiKey) });
    expect(list.body).not.toContain('private@');
    const sessionList = await h.app.inject({ method: 'GET', url: '/app/api/mailboxes', headers: session(memberToken) });
    expect(sessionList.body).not.toContain('private@');
    // Still there for its owner.
    const own = await h.app.inject({ method: 'GET', url: '/mailboxes/private@mailroom.localhost', headers: bearer(other.apiKey) });
    expect(own.statusCode).toBe(200);
  });

  describe('access matrix', () => {
    type Route = { method: 'GET' | 'POST' | 'DELETE'; url: string; surface: 'key' | 'session'; admin: boolean };
    const routes: Route[] = [
      { method: 'GET', url: '/mailboxes', surface: 'key', admin: false },
      { method: 'POST', url: '/mailboxes?address=matrix@mailroom.localhost', surface: 'key', admin: true },
      { method: 'GET', url: '/mailboxes/matrix-other@mailroom.localhost', surface: 'key', admin: false },
      { method: 'DELETE', url: '/mailboxes/matrix-other@mailroom.localhost', surface: 'key', admin: true },
      { method: 'GET', url: '/app/api/mailboxes', surface: 'session', admin: false },
      { method: 'POST', url: '/app/api/mailboxes?address=matrix2@mailroom.localhost', surface: 'session', admin: true },
      { method: 'GET', url: '/app/api/session', surface: 'session', admin: false },
      { method: 'POST', url: '/app/api/logout', surface: 'session', admin: false },
    ];

    beforeAll(async () => {
      const res = await h.app.inject({ method: 'POST', url: '/mailboxes?address=matrix-other@mailroom.localhost', headers: bearer(other.apiKey) });
      expect(res.statusCode).toBe(201);
    });

    for (const route of routes) {
      it(`${route.method} ${route.url}: no credential → 401`, async () => {
        const res = await h.app.inject({ method: route.method, url: route.url });
        expect(errorOf(res)).toMatchObject({ status: 401, error: 'missing_credential' });
      });

      it(`${route.method} ${route.url}: bad credential → 401`, async () => {
        const headers = route.surface === 'key' ? bearer('mrk_not-a-real-key') : session('mrs_not-a-real-session');
        const res = await h.app.inject({ method: route.method, url: route.url, headers });
        expect(res.statusCode).toBe(401);
        // The other surface's credential is no credential here.
        const crossed = route.surface === 'key' ? bearer(ownerToken) : session(acme.apiKey);
        expect((await h.app.inject({ method: route.method, url: route.url, headers: crossed })).statusCode).toBe(401);
        // A service token reaches nothing but /v1/transactional.
        const serviceToken = route.surface === 'key' ? bearer('mst_abcdefghijklmnop') : session('mst_abcdefghijklmnop');
        expect((await h.app.inject({ method: route.method, url: route.url, headers: serviceToken })).statusCode).toBe(401);
      });

      if (route.surface === 'session' && route.admin) {
        // Only sending-domain and service-token routes are reserved for owners and admins (decision 1).
        it(`${route.method} ${route.url}: a member may use it too`, async () => {
          const res = await h.app.inject({ method: route.method, url: route.url.replace('matrix2@', 'matrix-member@'), headers: session(memberToken) });
          expect(res.statusCode).toBe(201);
        });
      }

      if (route.surface === 'key') {
        it(`${route.method} ${route.url}: another tenant's X-Tenant-ID → 403 tenant_mismatch`, async () => {
          const res = await h.app.inject({ method: route.method, url: route.url, headers: { ...bearer(acme.apiKey), 'x-tenant-id': other.workspaceId } });
          expect(errorOf(res)).toMatchObject({ status: 403, error: 'tenant_mismatch' });
        });
      }
    }

    it('another tenant\'s mailbox is a 404 for GET and DELETE', async () => {
      for (const method of ['GET', 'DELETE'] as const) {
        const res = await h.app.inject({ method, url: '/mailboxes/matrix-other@mailroom.localhost', headers: bearer(acme.apiKey) });
        expect(errorOf(res)).toMatchObject({ status: 404 });
      }
    });
  });
});
