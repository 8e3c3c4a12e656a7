import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toHttpError } from '../src/transports/http/plugins/errors.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, errorOf, startHarness, type Harness, type Tenant } from './helpers/harness.js';

describe(`HTTP conventions (${TEST_DIALECT})`, () => {
  let h: Harness;
  let acme: Tenant;

  beforeAll(async () => {
    h = await startHarness();
    acme = await createTenant(h);
  });
  afterAll(async () => h.close());

  it('GET /health answers without a credential', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/health' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ ok: true, database: 'ok' });
  });

  it('a body over 1 MiB answers 413', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/mailboxes',
      headers: { ...bearer(acme.apiKey), 'content-type': 'application/json' },
      payload: JSON.stringify({ address: 'big@mailroom.localhost', description: 'x'.repeat(1024 * 1024) }),
    });
    expect(errorOf(res)).toMatchObject({ status: 413, error: 'payload_too_large' });
  });

  it('a body that is not JSON answers 415; broken JSON answers 400', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const res = await h.app.inject({ method: 'POST', url: '/mailboxes', headers: { ...bearer(acme.apiKey), 'content-type': type }, payload: 'address=a@b' });
      expect(errorOf(res), type).toMatchObject({ status: 415, error: 'unsupported_media_type' });
    }
    const broken = await h.app.inject({ method: 'POST', url: '/mailboxes', headers: { ...bearer(acme.apiKey), 'content-type': 'application/json' }, payload: '{"address":' });
    expect(errorOf(broken)).toMatchObject({ status: 400, error: 'invalid_json' });
    const notObject = await h.app.inject({ method: 'POST', url: '/mailboxes', headers: { ...bearer(acme.apiKey), 'content-type': 'application/json' }, payload: '[1,2]' });
    expect(errorOf(notObject)).toMatchObject({ status: 400, error: 'invalid_request' });
  });

  it('checks the credential before the body', async () => {
    const res = await h.app.inject({ method: 'POST', url: '/mailboxes', headers: { 'content-type': 'text/plain' }, payload: 'hello' });
    expect(errorOf(res)).toMatchObject({ status: 401 });
  });

  it('an unknown route is a JSON 404', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/no/such/route', headers: bearer(acme.apiKey) });
    expect(errorOf(res)).toMatchObject({ status: 404, error: 'not_found' });
  });

  it('unknown query parameters are refused', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/mailboxes?surprise=1', headers: bearer(acme.apiKey) });
    expect(errorOf(res)).toMatchObject({ status: 400, error: 'invalid_request' });
    expect(errorOf(res).detail).toContain('surprise');
  });

  it('every response carries a request id, and a caller\'s own id is echoed', async () => {
    const generated = await h.app.inject({ method: 'GET', url: '/health' });
    expect(generated.headers['x-request-id']).toMatch(/^req_[0-9a-z]{26}$/);
    const given = await h.app.inject({ method: 'GET', url: '/health', headers: { 'x-request-id': 'trace-123' } });
    expect(given.headers['x-request-id']).toBe('trace-123');
  });

  it('serves an OpenAPI document generated from the route schemas', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json<{ openapi: string; paths: Record<string, Record<string, unknown>> }>();
    expect(doc.openapi).toMatch(/^3\./);
    for (const [path, method] of [
      ['/health', 'get'],
      ['/mailboxes', 'get'],
      ['/mailboxes', 'post'],
      ['/mailboxes/{address}', 'get'],
      ['/mailboxes/{address}', 'delete'],
      ['/app/api/login', 'post'],
      ['/app/api/logout', 'post'],
      ['/app/api/session', 'get'],
      ['/app/api/workspaces/select', 'post'],
      ['/app/api/mailboxes', 'get'],
      ['/app/api/mailboxes', 'post'],
      ['/app/api/session/password', 'post'],
      ['/app/api/api-keys', 'get'],
      ['/app/api/api-keys', 'post'],
      ['/app/api/api-keys/{key_id}', 'delete'],
      ['/app/api/members', 'get'],
      ['/app/api/members', 'post'],
      ['/app/api/members/{user_id}', 'patch'],
      ['/app/api/members/{user_id}', 'delete'],
    ] as const) {
      expect(doc.paths[path]?.[method], `${method} ${path}`).toBeDefined();
    }
  });

  it('a 5xx never carries internals', () => {
    const mapped = toHttpError(new Error('relation "secret_table" does not exist at /src/db.ts:12'), 'req_1');
    expect(mapped.status).toBe(500);
    expect(mapped.body.error).toBe('internal_error');
    expect(mapped.body.detail).not.toContain('secret_table');
    expect(mapped.body.detail).toContain('req_1');
  });
});

describe(`rate limit per credential (${TEST_DIALECT})`, () => {
  let h: Harness;
  let acme: Tenant;
  let other: Tenant;

  beforeAll(async () => {
    h = await startHarness({ MAILROOM_RATE_LIMIT_PER_MINUTE: '5' });
    acme = await createTenant(h);
    other = await createTenant(h);
  });
  afterAll(async () => h.close());

  it('answers 429 with Retry-After once a credential passes its limit, other credentials unaffected', async () => {
    for (let i = 0; i < 5; i += 1) {
      expect((await h.app.inject({ method: 'GET', url: '/mailboxes', headers: bearer(acme.apiKey) })).statusCode).toBe(200);
    }
    const limited = await h.app.inject({ method: 'GET', url: '/mailboxes', headers: bearer(acme.apiKey) });
    expect(errorOf(limited)).toMatchObject({ status: 429, error: 'rate_limited' });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect((await h.app.inject({ method: 'GET', url: '/mailboxes', headers: bearer(other.apiKey) })).statusCode).toBe(200);
    // Health checks are never limited.
    for (let i = 0; i < 7; i += 1) expect((await h.app.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
  });
});

describe(`health without a database (${TEST_DIALECT})`, () => {
  it('answers 503 when the database does not answer', async () => {
    const h = await startHarness();
    await h.services.database.destroy();
    const res = await h.app.inject({ method: 'GET', url: '/health' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ ok: false, error: 'database_unavailable' });
    await h.app.close();
    await h.database.drop();
  });
});
