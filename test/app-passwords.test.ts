import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, errorOf, login, memberSession, session, startHarness, type Harness, type Tenant } from './helpers/harness.js';

interface AppPassword {
  app_password_id: string;
  name: string;
  mailbox: string;
  created_at: string;
  last_used_at: string | null;
  password?: string;
}

const PASSWORD_SHAPE = /^[a-hjkmnp-z2-9]{4}(-[a-hjkmnp-z2-9]{4}){3}$/;

describe(`app passwords (${TEST_DIALECT})`, () => {
  let h: Harness;
  let acme: Tenant;
  let other: Tenant;
  let owner: string;
  const MAILBOX = 'pw-inbox@mailroom.localhost';
  const OTHER_MAILBOX = 'pw-other@mailroom.localhost';

  beforeAll(async () => {
    h = await startHarness({ MAILROOM_SUBMISSION_PORT: '1587', MAILROOM_ALLOW_PLAINTEXT_AUTH: 'loopback', MAILROOM_LOGIN_FAILURES_PER_ADDRESS: '3' });
    acme = await createTenant(h, 'Acme');
    other = await createTenant(h, 'Other');
    owner = await login(h, acme.ownerEmail, acme.password);
    for (const [key, address] of [[acme.apiKey, MAILBOX], [other.apiKey, OTHER_MAILBOX]] as const) {
      const res = await h.app.inject({ method: 'POST', url: `/mailboxes?address=${address}`, headers: bearer(key) });
      expect(res.statusCode).toBe(201);
    }
  });
  afterAll(async () => h.close());

  const create = async (token: string, body: Record<string, unknown>) => h.app.inject({ method: 'POST', url: '/app/api/app-passwords', headers: session(token), payload: body });
  const list = async (token: string) =>
    (await h.app.inject({ method: 'GET', url: '/app/api/app-passwords', headers: session(token) })).json<{ app_passwords: AppPassword[]; servers: Record<string, unknown> }>();
  const make = async (token: string, name: string, mailbox = MAILBOX): Promise<AppPassword & { password: string }> => {
    const res = await create(token, { name, mailbox });
    expect(res.statusCode, res.body).toBe(201);
    return res.json<AppPassword & { password: string }>();
  };

  it('creates an app password shown once, lists it without it, and keeps only a scrypt hash', async () => {
    const made = await make(owner, 'Phone');
    expect(made).toMatchObject({ name: 'Phone', mailbox: MAILBOX, last_used_at: null, created_at: new Date(h.clock.now()).toISOString() });
    expect(made.app_password_id).toMatch(/^app_/);
    expect(made.password).toMatch(PASSWORD_SHAPE);
    const listed = await list(owner);
    const row = listed.app_passwords.find((p) => p.app_password_id === made.app_password_id);
    expect(row).toEqual({ app_password_id: made.app_password_id, name: 'Phone', mailbox: MAILBOX, created_at: made.created_at, last_used_at: null });
    expect(JSON.stringify(listed)).not.toContain(made.password);
    expect(listed.servers).toEqual({ host: h.config.smtpHostname, imap_port: null, imaps_port: null, submission_port: 1587, submissions_port: null });
    const stored = await h.services.database.db.selectFrom('app_passwords').selectAll().where('id', '=', made.app_password_id).executeTakeFirstOrThrow();
    expect(stored.password_hash).toMatch(/^scrypt\$/);
    expect(JSON.stringify(stored)).not.toContain(made.password.replaceAll('-', ''));
    expect(JSON.stringify(stored)).not.toContain(made.password);
  });

  it('refuses bad bodies: no name, a mailbox of another workspace', async () => {
    expect(errorOf(await create(owner, { name: '  ', mailbox: MAILBOX }))).toMatchObject({ status: 400 });
    expect(errorOf(await create(owner, { mailbox: MAILBOX }))).toMatchObject({ status: 400 });
    expect(errorOf(await create(owner, { name: 'x', mailbox: OTHER_MAILBOX }))).toMatchObject({ status: 400, error: 'mailbox_not_found' });
  });

  it('verifies the mailbox address and the password, as typed with or without dashes, and records the use', async () => {
    const made = await make(owner, 'Laptop');
    const ok = await h.services.appPasswords.service.verify(MAILBOX.toUpperCase(), made.password.replaceAll('-', ' ').toUpperCase(), '198.51.100.1');
    expect(ok).toMatchObject({ ok: true, workspaceId: acme.workspaceId, mailbox: MAILBOX, appPasswordId: made.app_password_id, userId: acme.ownerId });
    expect(ok.ok && ok.mailboxId).toMatch(/^mbx_/);
    const used = (await list(owner)).app_passwords.find((p) => p.app_password_id === made.app_password_id);
    expect(used?.last_used_at).toBe(new Date(h.clock.now()).toISOString());
    expect(await h.services.appPasswords.service.verify(MAILBOX, 'aaaa-bbbb-cccc-dddd', '198.51.100.1')).toMatchObject({ ok: false, reason: 'invalid' });
    // The right password for another mailbox, and an unknown address.
    expect(await h.services.appPasswords.service.verify(OTHER_MAILBOX, made.password, '198.51.100.1')).toMatchObject({ ok: false, reason: 'invalid' });
    expect(await h.services.appPasswords.service.verify('nobody@nowhere.example', made.password, '198.51.100.1')).toMatchObject({ ok: false, reason: 'invalid' });
  });

  it('members see and revoke their own; owners see all; another tenant gets 404', async () => {
    const member = await memberSession(h, acme.workspaceId, 'member');
    const mine = await make(member.token, 'Member phone');
    const owners = await make(owner, 'Owner tablet');
    const seen = (await list(member.token)).app_passwords.map((p) => p.app_password_id);
    expect(seen).toEqual([mine.app_password_id]);
    expect((await list(owner)).app_passwords.map((p) => p.app_password_id)).toContain(mine.app_password_id);
    const del = (token: string, id: string) => h.app.inject({ method: 'DELETE', url: `/app/api/app-passwords/${id}`, headers: session(token) });
    expect(errorOf(await del(member.token, owners.app_password_id))).toMatchObject({ status: 404, error: 'app_password_not_found' });
    const stranger = await login(h, other.ownerEmail, other.password);
    expect(errorOf(await del(stranger, owners.app_password_id))).toMatchObject({ status: 404, error: 'app_password_not_found' });
    expect((await list(stranger)).app_passwords).toEqual([]);
    expect((await del(member.token, mine.app_password_id)).json()).toEqual({ ok: true, app_password_id: mine.app_password_id });
    expect(errorOf(await del(member.token, mine.app_password_id))).toMatchObject({ status: 404 });
  });

  it('records creation and revocation in the audit log, never the password', async () => {
    const made = await make(owner, 'Audited');
    await h.app.inject({ method: 'DELETE', url: `/app/api/app-passwords/${made.app_password_id}`, headers: session(owner) });
    const page = (await h.app.inject({ method: 'GET', url: '/app/api/audit-log?action=app_password', headers: session(owner) })).json<{ entries: Array<{ action: string; target: { id: string }; details: Record<string, unknown> }> }>();
    const entries = page.entries.filter((e) => e.target.id === made.app_password_id);
    expect(entries.map((e) => e.action)).toEqual(['app_password.revoked', 'app_password.created']);
    expect(entries[1]?.details).toEqual({ name: 'Audited', mailbox: MAILBOX });
    expect(entries[0]?.details).toMatchObject({ name: 'Audited', mailbox: MAILBOX, made_by: acme.ownerId });
    expect(JSON.stringify(page)).not.toContain(made.password);
  });

  it('a revoked password fails at once and ends the sessions opened with it', async () => {
    const made = await make(owner, 'To revoke');
    const login1 = await h.services.appPasswords.service.verify(MAILBOX, made.password, '198.51.100.2');
    if (!login1.ok) throw new Error('login failed');
    let ended = 0;
    h.services.appPasswords.sessions.watch(login1, () => (ended += 1));
    await h.app.inject({ method: 'DELETE', url: `/app/api/app-passwords/${made.app_password_id}`, headers: session(owner) });
    await expect.poll(() => ended).toBe(1);
    expect(await h.services.appPasswords.service.verify(MAILBOX, made.password, '198.51.100.2')).toMatchObject({ ok: false, reason: 'invalid' });
    expect(await h.services.appPasswords.sessions.isLive(made.app_password_id)).toBe(false);
  });

  it("ends with its maker's membership, its mailbox, and refuses while the workspace is suspended", async () => {
    const member = await memberSession(h, acme.workspaceId, 'member');
    const memberUser = await h.services.database.db.selectFrom('users').select('id').where('email', '=', member.email).executeTakeFirstOrThrow();
    const byMember = await make(member.token, 'Leaves');
    const asMember = await h.services.appPasswords.service.verify(MAILBOX, byMember.password, '198.51.100.3');
    if (!asMember.ok) throw new Error('login failed');
    let memberEnded = false;
    h.services.appPasswords.sessions.watch(asMember, () => (memberEnded = true));
    expect((await h.app.inject({ method: 'DELETE', url: `/app/api/members/${memberUser.id}`, headers: session(owner) })).statusCode).toBe(200);
    await expect.poll(() => memberEnded).toBe(true);
    expect(await h.services.appPasswords.service.verify(MAILBOX, byMember.password, '198.51.100.3')).toMatchObject({ ok: false, reason: 'invalid' });

    const gone = 'pw-gone@mailroom.localhost';
    expect((await h.app.inject({ method: 'POST', url: `/mailboxes?address=${gone}`, headers: bearer(acme.apiKey) })).statusCode).toBe(201);
    const ofGone = await make(owner, 'Deleted mailbox', gone);
    const asGone = await h.services.appPasswords.service.verify(gone, ofGone.password, '198.51.100.3');
    if (!asGone.ok) throw new Error('login failed');
    let mailboxEnded = false;
    h.services.appPasswords.sessions.watch(asGone, () => (mailboxEnded = true));
    expect((await h.app.inject({ method: 'DELETE', url: `/mailboxes/${gone}`, headers: bearer(acme.apiKey) })).statusCode).toBeLessThan(300);
    await expect.poll(() => mailboxEnded).toBe(true);

    const kept = await make(owner, 'Suspended');
    const asKept = await h.services.appPasswords.service.verify(MAILBOX, kept.password, '198.51.100.3');
    if (!asKept.ok) throw new Error('login failed');
    let suspendedEnded = false;
    h.services.appPasswords.sessions.watch(asKept, () => (suspendedEnded = true));
    await h.services.workspaceLifecycle.suspend(acme.workspaceId, 'unpaid');
    await expect.poll(() => suspendedEnded).toBe(true);
    expect(await h.services.appPasswords.service.verify(MAILBOX, kept.password, '198.51.100.3')).toMatchObject({ ok: false, reason: 'suspended' });
    await h.services.workspaceLifecycle.resume(acme.workspaceId);
    expect(await h.services.appPasswords.service.verify(MAILBOX, kept.password, '198.51.100.3')).toMatchObject({ ok: true });
  });

  it('throttles failed logins per address and client as HTTP logins are, apart from the web login', async () => {
    const address = 'pw-throttled@mailroom.localhost';
    expect((await h.app.inject({ method: 'POST', url: `/mailboxes?address=${address}`, headers: bearer(acme.apiKey) })).statusCode).toBe(201);
    const made = await make(owner, 'Throttled', address);
    const verify = (password: string, ip: string) => h.services.appPasswords.service.verify(address, password, ip);
    for (let i = 0; i < h.config.loginFailuresPerAddress; i += 1) expect(await verify('wrong-wrong-wrong-wrong', '192.0.2.9')).toMatchObject({ reason: 'invalid' });
    const refused = await verify(made.password, '192.0.2.9');
    expect(refused).toMatchObject({ ok: false, reason: 'throttled' });
    expect(refused.ok === false && refused.retryAfterSeconds).toBeGreaterThan(0);
    // Another client address still logs in; the window passes.
    expect(await verify(made.password, '192.0.2.10')).toMatchObject({ ok: true });
    // The web login of a user is counted apart.
    expect(await login(h, acme.ownerEmail, acme.password)).toMatch(/^mrs_/);
    h.clock.advance(16 * 60_000);
    expect(await verify(made.password, '192.0.2.9')).toMatchObject({ ok: true });
  });
});
