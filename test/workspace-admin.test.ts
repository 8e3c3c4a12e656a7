import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOGIN_FAILURE_LIMIT } from '../src/modules/tenancy/auth.service.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, errorOf, login, memberSession, session, startHarness, type Harness, type Tenant } from './helpers/harness.js';

interface KeyAnswer {
  key_id: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  api_key?: string;
}
interface MemberAnswer {
  user_id: string;
  email: string;
  role: string;
  joined_at: string;
}

describe(`API keys on the session surface (${TEST_DIALECT})`, () => {
  let h: Harness;
  let acme: Tenant;
  let other: Tenant;
  let owner: string;
  let admin: string;
  let member: string;

  beforeAll(async () => {
    h = await startHarness();
    acme = await createTenant(h, 'Acme');
    other = await createTenant(h, 'Other');
    owner = await login(h, acme.ownerEmail, acme.password);
    admin = (await memberSession(h, acme.workspaceId, 'admin')).token;
    member = (await memberSession(h, acme.workspaceId, 'member')).token;
  });
  afterAll(async () => h.close());

  const create = (token: string, payload: object = {}) => h.app.inject({ method: 'POST', url: '/app/api/api-keys', headers: session(token), payload });

  it('refuses a member on every route with 403 forbidden_role', async () => {
    const key = (await create(owner, { name: 'for the member test' })).json<KeyAnswer>();
    for (const res of [
      await h.app.inject({ method: 'GET', url: '/app/api/api-keys', headers: session(member) }),
      await create(member),
      await h.app.inject({ method: 'DELETE', url: `/app/api/api-keys/${key.key_id}`, headers: session(member) }),
    ]) {
      expect(errorOf(res)).toEqual({ status: 403, error: 'forbidden_role', detail: 'API keys need the owner or admin role' });
    }
  });

  it('shows a new key once, stores its hash, lets it work on the API-key surface until it is revoked', async () => {
    const res = await create(admin, { name: '  ci deploys ' });
    expect(res.statusCode).toBe(201);
    const created = res.json<KeyAnswer>();
    expect(created).toEqual({ key_id: expect.stringMatching(/^key_/) as unknown, name: 'ci deploys', created_at: new Date(h.clock.now()).toISOString(), last_used_at: null, revoked_at: null, api_key: expect.stringMatching(/^mrk_[\w-]{43}$/) as unknown });
    const apiKey = created.api_key ?? '';

    const stored = await h.services.database.db.selectFrom('api_keys').select(['token_hash', 'workspace_id']).where('id', '=', created.key_id).executeTakeFirstOrThrow();
    expect(stored.workspace_id).toBe(acme.workspaceId);
    expect(stored.token_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(stored.token_hash).not.toContain(apiKey.slice(4));

    expect((await h.app.inject({ method: 'GET', url: '/mailboxes', headers: bearer(apiKey) })).statusCode).toBe(200);
    h.clock.advance(1000);
    const list = await h.app.inject({ method: 'GET', url: '/app/api/api-keys', headers: session(owner) });
    expect(list.statusCode).toBe(200);
    expect(list.body).not.toContain('mrk_');
    const listed = list.json<{ api_keys: KeyAnswer[] }>().api_keys;
    expect(listed[0]).toEqual({ key_id: created.key_id, name: 'ci deploys', created_at: created.created_at, last_used_at: created.created_at, revoked_at: null });
    // The bootstrap key is the workspace's too, and it is listed (oldest last).
    expect(listed.length).toBeGreaterThanOrEqual(2);
    expect(listed.at(-1)).toMatchObject({ name: '' });

    const revoked = await h.app.inject({ method: 'DELETE', url: `/app/api/api-keys/${created.key_id}`, headers: session(admin) });
    expect(revoked.statusCode).toBe(200);
    const revokedAt = new Date(h.clock.now()).toISOString();
    expect(revoked.json()).toMatchObject({ key_id: created.key_id, revoked_at: revokedAt });
    expect(errorOf(await h.app.inject({ method: 'GET', url: '/mailboxes', headers: bearer(apiKey) }))).toMatchObject({ status: 401, error: 'invalid_credential' });

    h.clock.advance(1000);
    const again = await h.app.inject({ method: 'DELETE', url: `/app/api/api-keys/${created.key_id}`, headers: session(admin) });
    expect(again.json()).toMatchObject({ revoked_at: revokedAt });
    const after = (await h.app.inject({ method: 'GET', url: '/app/api/api-keys', headers: session(owner) })).json<{ api_keys: KeyAnswer[] }>();
    expect(after.api_keys.find((k) => k.key_id === created.key_id)?.revoked_at).toBe(revokedAt);
  });

  it("answers 404 for another workspace's key and for a platform key, and leaves them working", async () => {
    const foreign = await h.services.tenancy.admin.createApiKey({ workspace: other.workspaceId });
    const platform = await h.services.tenancy.admin.createApiKey({ platform: true });
    for (const id of [foreign.key_id, platform.key_id, 'key_nonsense']) {
      const res = await h.app.inject({ method: 'DELETE', url: `/app/api/api-keys/${id}`, headers: session(owner) });
      expect(errorOf(res), id).toMatchObject({ status: 404, error: 'api_key_not_found' });
    }
    const listed = (await h.app.inject({ method: 'GET', url: '/app/api/api-keys', headers: session(owner) })).json<{ api_keys: KeyAnswer[] }>();
    expect(listed.api_keys.map((k) => k.key_id)).not.toContain(foreign.key_id);
    expect(listed.api_keys.map((k) => k.key_id)).not.toContain(platform.key_id);
    expect((await h.app.inject({ method: 'GET', url: '/mailboxes', headers: bearer(foreign.api_key) })).statusCode).toBe(200);
  });

  it('validates the body', async () => {
    for (const payload of [{ name: 'x'.repeat(101) }, { name: 5 }, { label: 'x' }]) {
      expect(errorOf(await create(owner, payload)), JSON.stringify(payload)).toMatchObject({ status: 400, error: 'invalid_request' });
    }
  });
});

describe(`members and roles (${TEST_DIALECT})`, () => {
  let h: Harness;
  let acme: Tenant;
  let other: Tenant;
  let owner: string;
  let admin: { email: string; token: string };
  let member: { email: string; token: string };

  beforeAll(async () => {
    h = await startHarness();
    acme = await createTenant(h, 'Acme');
    other = await createTenant(h, 'Other');
    owner = await login(h, acme.ownerEmail, acme.password);
    admin = await memberSession(h, acme.workspaceId, 'admin');
    member = await memberSession(h, acme.workspaceId, 'member');
  });
  afterAll(async () => h.close());

  const members = async (token: string) => (await h.app.inject({ method: 'GET', url: '/app/api/members', headers: session(token) })).json<{ members: MemberAnswer[] }>().members;
  const idOf = async (email: string) => (await members(owner)).find((m) => m.email === email)?.user_id ?? '';
  const add = (token: string, payload: object) => h.app.inject({ method: 'POST', url: '/app/api/members', headers: session(token), payload });
  const patch = (token: string, userId: string, role: string) => h.app.inject({ method: 'PATCH', url: `/app/api/members/${userId}`, headers: session(token), payload: { role } });
  const remove = (token: string, userId: string) => h.app.inject({ method: 'DELETE', url: `/app/api/members/${userId}`, headers: session(token) });

  it('lets every role list the members, oldest first, and only owners and admins change them', async () => {
    const listed = await members(member.token);
    expect(listed.map((m) => [m.email, m.role])).toEqual([
      [acme.ownerEmail, 'owner'],
      [admin.email, 'admin'],
      [member.email, 'member'],
    ]);
    expect(listed[0]).toEqual({ user_id: acme.ownerId, email: acme.ownerEmail, role: 'owner', joined_at: expect.any(String) as unknown });
    const memberId = await idOf(member.email);
    for (const res of [await add(member.token, { email: 'x@example.com', role: 'member' }), await patch(member.token, memberId, 'admin'), await remove(member.token, memberId)]) {
      expect(errorOf(res)).toEqual({ status: 403, error: 'forbidden_role', detail: 'members need the owner or admin role' });
    }
  });

  it('adds an existing user by email, or creates the user when a password is given', async () => {
    await h.services.tenancy.admin.createUser({ email: 'existing@example.com', password: 'existing-password' });
    const added = await add(admin.token, { email: 'Existing@Example.com', role: 'member' });
    expect(added.statusCode).toBe(201);
    expect(added.json()).toMatchObject({ email: 'existing@example.com', role: 'member', user_created: false });

    const created = await add(admin.token, { email: 'newcomer@example.com', role: 'admin', password: 'newcomer-password' });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({ email: 'newcomer@example.com', role: 'admin', user_created: true });
    const newcomer = await login(h, 'newcomer@example.com', 'newcomer-password');
    const seen = await h.app.inject({ method: 'GET', url: '/app/api/session', headers: session(newcomer) });
    expect(seen.json()).toMatchObject({ active_workspace_id: acme.workspaceId, workspaces: [{ workspace_id: acme.workspaceId, role: 'admin' }] });

    expect(errorOf(await add(admin.token, { email: 'nobody@example.com', role: 'member' }))).toMatchObject({ status: 404, error: 'user_not_found' });
    expect(errorOf(await add(admin.token, { email: 'existing@example.com', role: 'member' }))).toMatchObject({ status: 409, error: 'already_member' });
    expect(errorOf(await add(admin.token, { email: other.ownerEmail, role: 'member', password: 'a-new-password' }))).toMatchObject({ status: 409, error: 'email_taken' });
    expect(errorOf(await add(admin.token, { email: 'short@example.com', role: 'member', password: 'short' }))).toMatchObject({ status: 400, error: 'invalid_password' });
    expect(errorOf(await add(admin.token, { email: 'not an address', role: 'member' }))).toMatchObject({ status: 400, error: 'invalid_email' });
    expect(errorOf(await add(admin.token, { email: 'x@example.com', role: 'boss' }))).toMatchObject({ status: 400, error: 'invalid_request' });
    // A refused creation left no user behind: adding that address without a password finds no one.
    expect(errorOf(await add(admin.token, { email: 'short@example.com', role: 'member' }))).toMatchObject({ status: 404, error: 'user_not_found' });
  });

  it('lets only an owner make, change or remove an owner', async () => {
    const ownerOnly = { status: 403, error: 'forbidden_role', detail: 'only an owner can make, change or remove an owner' };
    expect(errorOf(await add(admin.token, { email: 'existing2@example.com', role: 'owner', password: 'existing-password' }))).toEqual(ownerOnly);
    expect(errorOf(await patch(admin.token, await idOf(member.email), 'owner'))).toEqual(ownerOnly);
    expect(errorOf(await patch(admin.token, acme.ownerId, 'member'))).toEqual(ownerOnly);
    expect(errorOf(await remove(admin.token, acme.ownerId))).toEqual(ownerOnly);
    // An admin changes admins and members, itself included.
    const newcomerId = await idOf('newcomer@example.com');
    expect((await patch(admin.token, newcomerId, 'member')).json()).toMatchObject({ user_id: newcomerId, role: 'member' });
    expect((await patch(admin.token, newcomerId, 'member')).statusCode).toBe(200);
    expect((await patch(owner, newcomerId, 'owner')).json()).toMatchObject({ role: 'owner' });
    expect((await patch(owner, newcomerId, 'admin')).json()).toMatchObject({ role: 'admin' });
  });

  it('never leaves a workspace without an owner: the last owner can be neither demoted nor removed (409)', async () => {
    const lastOwner = { status: 409, error: 'last_owner', detail: 'this is the last owner of the workspace: make another member owner first' };
    expect(errorOf(await patch(owner, acme.ownerId, 'admin'))).toEqual(lastOwner);
    expect(errorOf(await remove(owner, acme.ownerId))).toEqual(lastOwner);
    // With a second owner, either may go; the two asking at once cannot both succeed.
    const adminId = await idOf(admin.email);
    expect((await patch(owner, adminId, 'owner')).statusCode).toBe(200);
    const both = await Promise.all([patch(owner, acme.ownerId, 'member'), patch(admin.token, adminId, 'member')]);
    expect(both.map((r) => r.statusCode).sort()).toEqual([200, 409]);
    const owners = (await members(member.token)).filter((m) => m.role === 'owner');
    expect(owners).toHaveLength(1);
    // Put things back for the next test.
    const remaining = owners[0]!.user_id === acme.ownerId ? owner : admin.token;
    await patch(remaining, acme.ownerId, 'owner');
    await patch(remaining === owner ? owner : admin.token, adminId, 'admin');
    await patch(owner, adminId, 'admin');
  });

  it("answers 404 for a user who is not a member, another workspace's included", async () => {
    for (const userId of [other.ownerId, 'usr_nonsense']) {
      expect(errorOf(await patch(owner, userId, 'member')), userId).toMatchObject({ status: 404, error: 'member_not_found' });
      expect(errorOf(await remove(owner, userId)), userId).toMatchObject({ status: 404, error: 'member_not_found' });
    }
    const theirs = await h.app.inject({ method: 'GET', url: '/app/api/members', headers: session(await login(h, other.ownerEmail, other.password)) });
    expect(theirs.json<{ members: MemberAnswer[] }>().members.map((m) => m.user_id)).toEqual([other.ownerId]);
  });

  it('a removed member loses the workspace at once; the user stays', async () => {
    const memberId = await idOf(member.email);
    const res = await remove(admin.token, memberId);
    expect(res.json()).toEqual({ ok: true, user_id: memberId });
    expect(errorOf(await h.app.inject({ method: 'GET', url: '/app/api/mailboxes', headers: session(member.token) }))).toMatchObject({ status: 403, error: 'no_active_workspace' });
    expect((await h.app.inject({ method: 'GET', url: '/app/api/session', headers: session(member.token) })).json()).toMatchObject({ workspaces: [], active_workspace_id: null });
    expect(errorOf(await remove(admin.token, memberId))).toMatchObject({ status: 404, error: 'member_not_found' });
    expect((await add(admin.token, { email: member.email, role: 'member' })).statusCode).toBe(201);
  });
});

describe(`changing one's password (${TEST_DIALECT})`, () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => h.close());

  const change = (token: string, payload: object) => h.app.inject({ method: 'POST', url: '/app/api/session/password', headers: session(token), payload });
  const loginStatus = async (email: string, password: string) => (await h.app.inject({ method: 'POST', url: '/app/api/login', payload: { email, password } })).statusCode;

  it('checks the current password, applies the password rule, ends the other sessions and keeps this one', async () => {
    const acme = await createTenant(h, 'Acme');
    const mine = await login(h, acme.ownerEmail, acme.password);
    const laptop = await login(h, acme.ownerEmail, acme.password);
    const phone = await login(h, acme.ownerEmail, acme.password);
    const stranger = await memberSession(h, acme.workspaceId, 'member');

    expect(errorOf(await change(mine, { current_password: 'not the password', new_password: 'a-brand-new-password' }))).toEqual({ status: 403, error: 'wrong_password', detail: 'the current password is wrong' });
    expect(errorOf(await change(mine, { current_password: acme.password, new_password: 'short' }))).toMatchObject({ status: 400, error: 'invalid_password' });
    expect(errorOf(await change(mine, { current_password: acme.password }))).toMatchObject({ status: 400, error: 'invalid_request' });

    const res = await change(mine, { current_password: acme.password, new_password: 'a-brand-new-password' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ ok: true, sessions_ended: 2 });
    for (const token of [laptop, phone]) {
      expect(errorOf(await h.app.inject({ method: 'GET', url: '/app/api/session', headers: session(token) }))).toMatchObject({ status: 401, error: 'invalid_session' });
    }
    expect((await h.app.inject({ method: 'GET', url: '/app/api/session', headers: session(mine) })).statusCode).toBe(200);
    // Another user's session is not touched.
    expect((await h.app.inject({ method: 'GET', url: '/app/api/session', headers: session(stranger.token) })).statusCode).toBe(200);
    expect(await loginStatus(acme.ownerEmail, acme.password)).toBe(401);
    expect(await loginStatus(acme.ownerEmail, 'a-brand-new-password')).toBe(200);
  });

  it('works without an active workspace', async () => {
    await h.services.tenancy.admin.createUser({ email: 'loner@example.com', password: 'loner-password' });
    const token = await login(h, 'loner@example.com', 'loner-password');
    expect((await change(token, { current_password: 'loner-password', new_password: 'loner-password-2' })).json()).toEqual({ ok: true, sessions_ended: 0 });
  });

  it("shares the login throttle: 10 wrong current passwords lock the email's logins and changes alike", async () => {
    const victim = await createTenant(h, 'Victim');
    const token = await login(h, victim.ownerEmail, victim.password);
    for (let i = 0; i < LOGIN_FAILURE_LIMIT; i += 1) {
      expect((await change(token, { current_password: `wrong-${i}`, new_password: 'another-password' })).statusCode).toBe(403);
    }
    const locked = await change(token, { current_password: victim.password, new_password: 'another-password' });
    expect(errorOf(locked)).toMatchObject({ status: 429, error: 'too_many_login_attempts' });
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0);
    expect(await loginStatus(victim.ownerEmail, victim.password)).toBe(429);
  });
});
