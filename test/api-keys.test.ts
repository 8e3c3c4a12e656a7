import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, errorOf, memberSession, session, startHarness, type Harness, type Tenant } from './helpers/harness.js';

describe(`API keys and X-Tenant-ID (${TEST_DIALECT})`, () => {
  let h: Harness;
  let acme: Tenant;
  let other: Tenant;
  let platformKey: string;

  beforeAll(async () => {
    h = await startHarness();
    acme = await createTenant(h, 'Acme');
    other = await createTenant(h, 'Other');
    platformKey = (await h.services.tenancy.admin.createApiKey({ platform: true })).api_key;
    await h.app.inject({ method: 'POST', url: '/mailboxes?address=acme@mailroom.localhost', headers: bearer(acme.apiKey) });
    await h.app.inject({ method: 'POST', url: '/mailboxes?address=other@mailroom.localhost', headers: bearer(other.apiKey) });
  });
  afterAll(async () => h.close());

  const addresses = (body: string) => (JSON.parse(body) as { mailboxes: { address: string }[] }).mailboxes.map((m) => m.address);

  it('a workspace key acts in its own workspace with or without a matching X-Tenant-ID', async () => {
    const plain = await h.app.inject({ method: 'GET', url: '/mailboxes', headers: bearer(acme.apiKey) });
    const named = await h.app.inject({ method: 'GET', url: '/mailboxes', headers: { ...bearer(acme.apiKey), 'x-tenant-id': acme.workspaceId } });
    expect(addresses(plain.body)).toEqual(['acme@mailroom.localhost']);
    expect(named.json()).toEqual(plain.json());
  });

  it('a workspace key naming another workspace is refused with 403 tenant_mismatch', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/mailboxes', headers: { ...bearer(acme.apiKey), 'x-tenant-id': other.workspaceId } });
    expect(errorOf(res)).toMatchObject({ status: 403, error: 'tenant_mismatch' });
  });

  it('a platform key needs X-Tenant-ID and then acts in that workspace', async () => {
    const without = await h.app.inject({ method: 'GET', url: '/mailboxes', headers: bearer(platformKey) });
    expect(errorOf(without)).toMatchObject({ status: 400, error: 'tenant_required' });
    const forOther = await h.app.inject({ method: 'GET', url: '/mailboxes', headers: { ...bearer(platformKey), 'x-tenant-id': other.workspaceId } });
    expect(addresses(forOther.body)).toEqual(['other@mailroom.localhost']);
    const unknown = await h.app.inject({ method: 'GET', url: '/mailboxes', headers: { ...bearer(platformKey), 'x-tenant-id': 'ws_01jd0000000000000000000000' } });
    expect(errorOf(unknown)).toMatchObject({ status: 404, error: 'tenant_not_found' });
  });

  it('refuses malformed Authorization headers and revoked keys with 401', async () => {
    for (const authorization of ['Basic abc', 'Bearer', `Token ${acme.apiKey}`, `Bearer ${acme.apiKey} extra`, `Bearer ${acme.apiKey}x`]) {
      const res = await h.app.inject({ method: 'GET', url: '/mailboxes', headers: { authorization } });
      expect(errorOf(res), authorization).toMatchObject({ status: 401 });
    }
    const key = await h.services.tenancy.admin.createApiKey({ workspace: acme.workspaceId });
    expect((await h.app.inject({ method: 'GET', url: '/mailboxes', headers: bearer(key.api_key) })).statusCode).toBe(200);
    const owner = (await memberSession(h, acme.workspaceId, 'owner')).token;
    expect((await h.app.inject({ method: 'DELETE', url: `/app/api/api-keys/${key.key_id}`, headers: session(owner) })).statusCode).toBe(200);
    expect(errorOf(await h.app.inject({ method: 'GET', url: '/mailboxes', headers: bearer(key.api_key) }))).toMatchObject({ status: 401, error: 'invalid_credential' });
  });

  it('records when a key was last used', async () => {
    const key = await h.services.tenancy.admin.createApiKey({ workspace: acme.workspaceId });
    await h.app.inject({ method: 'GET', url: '/mailboxes', headers: bearer(key.api_key) });
    const owner = (await memberSession(h, acme.workspaceId, 'owner')).token;
    const listed = (await h.app.inject({ method: 'GET', url: '/app/api/api-keys', headers: session(owner) })).json<{ api_keys: Array<{ key_id: string; last_used_at: string | null }> }>();
    const row = listed.api_keys.find((k) => k.key_id === key.key_id);
    expect(row?.last_used_at).toBe(new Date(h.clock.now()).toISOString());
  });
});
