import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOGIN_FAILURE_LIMIT, LOGIN_FAILURE_WINDOW_MS, SESSION_ABSOLUTE_MS, SESSION_IDLE_MS } from '../src/modules/tenancy/auth.service.js';
import { TEST_DIALECT } from './helpers/database.js';
import { createTenant, errorOf, login, session, startHarness, type Harness, type Tenant } from './helpers/harness.js';

describe(`sessions and workspaces (${TEST_DIALECT})`, () => {
  let h: Harness;
  let acme: Tenant;

  beforeAll(async () => {
    h = await startHarness();
    acme = await createTenant(h, 'Acme');
  });
  afterAll(async () => h.close());

  it('logs in with the documented response shape and the token works', async () => {
    const res = await h.app.inject({ method: 'POST', url: '/app/api/login', payload: { email: acme.ownerEmail.toUpperCase(), password: acme.password } });
    expect(res.statusCode).toBe(200);
    const body = res.json<Record<string, unknown>>();
    expect(body).toEqual({
      ok: true,
      session_token: expect.stringMatching(/^mrs_[\w-]{40,}$/) as unknown,
      expires_at: new Date(h.clock.now() + SESSION_IDLE_MS).toISOString(),
      user: { user_id: acme.ownerId, email: acme.ownerEmail },
      workspaces: [{ workspace_id: acme.workspaceId, name: 'Acme', role: 'owner' }],
      active_workspace_id: acme.workspaceId,
    });
    const me = await h.app.inject({ method: 'GET', url: '/app/api/session', headers: session(body.session_token as string) });
    expect(me.statusCode).toBe(200);
    const { session_token: _token, ...withoutToken } = body;
    expect(me.json()).toEqual(withoutToken);
  });

  it('stores session tokens only as hashes', async () => {
    const token = await login(h, acme.ownerEmail, acme.password);
    const rows = await h.services.database.db.selectFrom('sessions').select('token_hash').execute();
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) {
      expect(row.token_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(row.token_hash).not.toContain(token.slice(4));
    }
    const keys = await h.services.database.db.selectFrom('api_keys').select('token_hash').execute();
    for (const key of keys) expect(key.token_hash).not.toContain(acme.apiKey.slice(4));
  });

  it('answers a wrong password and an unknown email the same way', async () => {
    const wrongPassword = await h.app.inject({ method: 'POST', url: '/app/api/login', payload: { email: acme.ownerEmail, password: 'not the password' } });
    const unknownEmail = await h.app.inject({ method: 'POST', url: '/app/api/login', payload: { email: 'nobody@example.com', password: 'not the password' } });
    expect(errorOf(wrongPassword)).toEqual({ status: 401, error: 'invalid_credentials', detail: 'email or password is wrong' });
    expect(errorOf(unknownEmail)).toEqual(errorOf(wrongPassword));
  });

  it('validates the login body', async () => {
    for (const payload of [{}, { email: 'a@b.example' }, { email: 'a@b.example', password: 5 }, { email: 'a@b.example', password: 'x', extra: 1 }]) {
      const res = await h.app.inject({ method: 'POST', url: '/app/api/login', payload });
      expect(errorOf(res), JSON.stringify(payload)).toMatchObject({ status: 400, error: 'invalid_request' });
    }
  });

  it('throttles an email after 10 failures in 15 minutes, with Retry-After, until the window passes', async () => {
    const victim = await createTenant(h, 'Victim');
    for (let i = 0; i < LOGIN_FAILURE_LIMIT; i += 1) {
      const res = await h.app.inject({ method: 'POST', url: '/app/api/login', payload: { email: victim.ownerEmail, password: `wrong-${i}` } });
      expect(res.statusCode).toBe(401);
      h.clock.advance(1000);
    }
    // Even the right password is refused while the lock holds.
    const locked = await h.app.inject({ method: 'POST', url: '/app/api/login', payload: { email: victim.ownerEmail, password: victim.password } });
    expect(errorOf(locked)).toMatchObject({ status: 429, error: 'too_many_login_attempts' });
    const retryAfter = Number(locked.headers['retry-after']);
    expect(retryAfter).toBe(Math.ceil((LOGIN_FAILURE_WINDOW_MS - LOGIN_FAILURE_LIMIT * 1000) / 1000));
    // Other emails are unaffected.
    expect((await h.app.inject({ method: 'POST', url: '/app/api/login', payload: { email: acme.ownerEmail, password: acme.password } })).statusCode).toBe(200);
    // Once the oldest failure leaves the window, login works again.
    h.clock.advance(retryAfter * 1000);
    const after = await h.app.inject({ method: 'POST', url: '/app/api/login', payload: { email: victim.ownerEmail, password: victim.password } });
    expect(after.statusCode).toBe(200);
  });

  /** A login from `address` (Fastify takes the client address from the socket; no proxy is trusted). */
  const loginFrom = (address: string, email: string, password: string, harness = h) =>
    harness.app.inject({ method: 'POST', url: '/app/api/login', remoteAddress: address, payload: { email, password } });

  it('throttles failures per client address: a stranger elsewhere cannot lock the owner out, and stays throttled', async () => {
    const owner = await createTenant(h, 'Owner');
    for (let i = 0; i < LOGIN_FAILURE_LIMIT; i += 1) expect((await loginFrom('203.0.113.7', owner.ownerEmail, `guess-${i}`)).statusCode).toBe(401);
    expect(errorOf(await loginFrom('203.0.113.7', owner.ownerEmail, owner.password))).toMatchObject({ status: 429, error: 'too_many_login_attempts' });
    // The owner, from another address, with the right password.
    expect((await loginFrom('198.51.100.20', owner.ownerEmail, owner.password)).statusCode).toBe(200);
    // Their login forgave their own address only: the stranger's stays throttled, the right password included.
    const still = await loginFrom('203.0.113.7', owner.ownerEmail, owner.password);
    expect(errorOf(still)).toMatchObject({ status: 429, error: 'too_many_login_attempts' });
    expect(errorOf(still).detail).toMatch(/from this address/);
    // An IPv6 /64 counts as one address: another address of the stranger's block is throttled with it.
    for (let i = 0; i < LOGIN_FAILURE_LIMIT; i += 1) expect((await loginFrom(`2001:db8:1:2::${i + 1}`, owner.ownerEmail, `v6-${i}`)).statusCode).toBe(401);
    expect(errorOf(await loginFrom('2001:db8:1:2:ffff::9', owner.ownerEmail, owner.password))).toMatchObject({ status: 429 });
    expect((await loginFrom('2001:db8:1:3::1', owner.ownerEmail, owner.password)).statusCode).toBe(200);
  });

  it('past the account-wide limit, every address gets one attempt: a spread-out guesser stops, the owner still logs in', async () => {
    const spread = await startHarness({ MAILROOM_LOGIN_FAILURES_PER_ACCOUNT: '20' });
    try {
      const owner = await createTenant(spread, 'Spread');
      // 4 addresses × 5 failures: each address under its own limit, the account at its limit.
      for (let a = 1; a <= 4; a += 1) {
        for (let i = 0; i < 5; i += 1) expect((await loginFrom(`192.0.2.${a}`, owner.ownerEmail, `guess-${a}-${i}`, spread)).statusCode).toBe(401);
      }
      // An address that has failed gets no more guesses, though it has 5 of its own left.
      const refused = await loginFrom('192.0.2.1', owner.ownerEmail, 'guess-1-5', spread);
      expect(errorOf(refused)).toMatchObject({ status: 429, error: 'too_many_login_attempts' });
      expect(errorOf(refused).detail).toMatch(/from many addresses/);
      // A new address gets one guess, then no more.
      expect((await loginFrom('192.0.2.50', owner.ownerEmail, 'guess-50', spread)).statusCode).toBe(401);
      expect(errorOf(await loginFrom('192.0.2.50', owner.ownerEmail, 'guess-50b', spread))).toMatchObject({ status: 429 });
      // The owner, at an address that has not failed, logs in.
      expect((await loginFrom('198.51.100.20', owner.ownerEmail, owner.password, spread)).statusCode).toBe(200);
    } finally {
      await spread.close();
    }
  });

  it('logout revokes the session at once', async () => {
    const token = await login(h, acme.ownerEmail, acme.password);
    const out = await h.app.inject({ method: 'POST', url: '/app/api/logout', headers: session(token) });
    expect(out.statusCode).toBe(200);
    expect(out.json()).toEqual({ ok: true });
    const after = await h.app.inject({ method: 'GET', url: '/app/api/session', headers: session(token) });
    expect(errorOf(after)).toMatchObject({ status: 401, error: 'invalid_session' });
    const again = await h.app.inject({ method: 'POST', url: '/app/api/logout', headers: session(token) });
    expect(again.statusCode).toBe(401);
  });

  it('expires a session after 14 idle days', async () => {
    const token = await login(h, acme.ownerEmail, acme.password);
    h.clock.advance(SESSION_IDLE_MS - 60_000);
    expect((await h.app.inject({ method: 'GET', url: '/app/api/session', headers: session(token) })).statusCode).toBe(200);
    // Use resets the idle clock.
    h.clock.advance(SESSION_IDLE_MS - 60_000);
    expect((await h.app.inject({ method: 'GET', url: '/app/api/session', headers: session(token) })).statusCode).toBe(200);
    h.clock.advance(SESSION_IDLE_MS + 1);
    const expired = await h.app.inject({ method: 'GET', url: '/app/api/session', headers: session(token) });
    expect(errorOf(expired)).toMatchObject({ status: 401, error: 'session_expired' });
  });

  it('expires a session 30 days after login however busy it is', async () => {
    const token = await login(h, acme.ownerEmail, acme.password);
    const started = h.clock.now();
    while (h.clock.now() + 5 * 86_400_000 < started + SESSION_ABSOLUTE_MS) {
      h.clock.advance(5 * 86_400_000);
      expect((await h.app.inject({ method: 'GET', url: '/app/api/session', headers: session(token) })).statusCode).toBe(200);
    }
    h.clock.set(started + SESSION_ABSOLUTE_MS);
    const expired = await h.app.inject({ method: 'GET', url: '/app/api/session', headers: session(token) });
    expect(errorOf(expired)).toMatchObject({ status: 401, error: 'session_expired' });
  });

  it('selects another workspace of the user, and only such', async () => {
    const second = await h.services.tenancy.admin.createWorkspace({ name: 'Second' });
    await h.services.tenancy.admin.addMember({ workspace: second.workspace_id, email: acme.ownerEmail, role: 'member' });
    const stranger = await createTenant(h, 'Stranger');
    const token = await login(h, acme.ownerEmail, acme.password);

    const selected = await h.app.inject({ method: 'POST', url: '/app/api/workspaces/select', headers: session(token), payload: { workspace_id: second.workspace_id } });
    expect(selected.statusCode).toBe(200);
    expect(selected.json()).toMatchObject({ active_workspace_id: second.workspace_id });
    const described = await h.app.inject({ method: 'GET', url: '/app/api/session', headers: session(token) });
    expect(described.json<{ workspaces: unknown[] }>().workspaces).toEqual([
      { workspace_id: acme.workspaceId, name: 'Acme', role: 'owner' },
      { workspace_id: second.workspace_id, name: 'Second', role: 'member' },
    ]);
    expect(described.json()).toMatchObject({ active_workspace_id: second.workspace_id });

    // Tenant routes now act in the selected workspace.
    const created = await h.app.inject({ method: 'POST', url: '/app/api/mailboxes?address=second-ws@mailroom.localhost', headers: session(token) });
    expect(created.statusCode).toBe(201);
    const inSecond = await h.services.mailboxes.list({ workspaceId: second.workspace_id, role: 'api_key', userId: null });
    expect(inSecond.map((m) => m.address)).toEqual(['second-ws@mailroom.localhost']);

    const foreign = await h.app.inject({ method: 'POST', url: '/app/api/workspaces/select', headers: session(token), payload: { workspace_id: stranger.workspaceId } });
    expect(errorOf(foreign)).toMatchObject({ status: 404, error: 'workspace_not_found' });
    const bogus = await h.app.inject({ method: 'POST', url: '/app/api/workspaces/select', headers: session(token), payload: { workspace_id: 'ws_nope' } });
    expect(errorOf(bogus)).toMatchObject({ status: 404 });
    const missing = await h.app.inject({ method: 'POST', url: '/app/api/workspaces/select', headers: session(token), payload: {} });
    expect(errorOf(missing)).toMatchObject({ status: 400, error: 'invalid_request' });
  });

  it('a user in no workspace can log in but not reach tenant routes', async () => {
    await h.services.tenancy.admin.createUser({ email: 'loner@example.com', password: 'long enough pw' });
    const res = await h.app.inject({ method: 'POST', url: '/app/api/login', payload: { email: 'loner@example.com', password: 'long enough pw' } });
    expect(res.statusCode).toBe(200);
    const body = res.json<{ session_token: string; workspaces: unknown[]; active_workspace_id: unknown }>();
    expect(body.workspaces).toEqual([]);
    expect(body.active_workspace_id).toBeNull();
    const list = await h.app.inject({ method: 'GET', url: '/app/api/mailboxes', headers: session(body.session_token) });
    expect(errorOf(list)).toMatchObject({ status: 403, error: 'no_active_workspace' });
  });
});
