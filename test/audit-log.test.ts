import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.js';
import { asWork } from '../src/db/tables.js';
import type { AuditEntry, AuditLog } from '../src/modules/audit/audit.service.js';
import { AUDIT_ACTIONS } from '../src/modules/audit/audit.service.js';
import { AuditSecretError, REDACTED, withoutSecrets } from '../src/modules/audit/audit-secrets.js';
import { createListService } from '../src/modules/lists/list.service.js';
import { createListStore } from '../src/modules/lists/list.store.js';
import { createTenancyStore } from '../src/modules/tenancy/tenancy.store.js';
import { OPERATOR } from '../src/modules/tenancy/tenancy.types.js';
import { createWorkspaceAdminService } from '../src/modules/tenancy/workspace-admin.service.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, errorOf, login, memberSession, session, startHarness, type Harness, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';
import { startReceiver, type WebhookReceiver } from './helpers/webhook-receiver.js';
import { SECRET_A, eventually, startWorker } from './helpers/webhooks.js';

interface Entry {
  audit_id: string;
  action: string;
  actor: { kind: string; id: string | null; email: string | null };
  ip: string | null;
  created_at: string;
  target: { kind: string; id: string } | null;
  details: Record<string, unknown>;
}
interface Page {
  entries: Entry[];
  next_before?: string;
}

const IP = '203.0.113.7';
const DOMAIN = 'audit-send.example';

describe(`audit log (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let acme: Tenant;
  let other: Tenant;
  /** The admin who makes the changes, from IP. */
  let admin: { email: string; token: string; userId: string };
  let owner: string;
  let member: string;
  let otherOwner: string;
  /** Every secret the tests below are shown or give: none may appear in any audit row. */
  const secrets: string[] = [];

  beforeAll(async () => {
    // Webhook endpoints on the loopback receiver need its network exempted from the address rules.
    h = await startMailHarness({ MAILROOM_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' });
    acme = await createTenant(h, 'Acme');
    other = await createTenant(h, 'Other');
    secrets.push(acme.apiKey, other.apiKey, acme.password);
    const made = await memberSession(h, acme.workspaceId, 'admin');
    const me = await h.app.inject({ method: 'GET', url: '/app/api/session', headers: session(made.token) });
    admin = { ...made, userId: me.json<{ user: { user_id: string } }>().user.user_id };
    owner = await login(h, acme.ownerEmail, acme.password);
    member = (await memberSession(h, acme.workspaceId, 'member')).token;
    otherOwner = await login(h, other.ownerEmail, other.password);
    secrets.push(admin.token, owner, member, otherOwner);
  });
  afterAll(async () => {
    await h.services.webhooks.close();
    await h.close();
  });

  const read = (token: string, query = '') => h.app.inject({ method: 'GET', url: `/app/api/audit-log${query}`, headers: session(token) });
  async function page(token: string, query = ''): Promise<Page> {
    const res = await read(token, query);
    if (res.statusCode !== 200) throw new Error(`audit log: ${res.statusCode} ${res.body}`);
    return res.json<Page>();
  }
  /** The newest entry's id in acme's log (the mark later entries are newer than). */
  const newest = async () => (await page(owner, '?limit=1')).entries[0]?.audit_id ?? '';
  /** Acme's entries newer than `mark`, oldest first. */
  const since = async (mark: string) => (await page(owner, '?limit=200')).entries.filter((e) => e.audit_id > mark).reverse();
  /** As the admin, from IP. */
  const as = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
    h.app.inject({ method, url, headers: session(admin.token), remoteAddress: IP, ...(payload ? { payload } : {}) });

  /** Run `change`, then expect exactly one new entry: `action` by the admin from IP on `target`; returns it and the change's answer. */
  async function one<T>(action: string, change: () => Promise<T>, target: (answer: T) => Record<string, unknown>): Promise<{ entry: Entry; answer: T }> {
    const mark = await newest();
    const answer = await change();
    const entries = await since(mark);
    expect(entries.map((e) => e.action)).toEqual([action]);
    const entry = entries[0]!;
    expect(entry).toMatchObject({ actor: { kind: 'user', id: admin.userId, email: admin.email }, ip: IP, target: target(answer) });
    expect(Date.parse(entry.created_at)).toBe(h.clock.now());
    return { entry, answer };
  }
  const ok = async (res: Awaited<ReturnType<typeof as>>, status = 200) => {
    if (res.statusCode !== status) throw new Error(`${res.statusCode} ${res.body}`);
    return res.json<Record<string, unknown>>();
  };

  it('records the operator: bootstrap made the workspace, its owner and its key, without an address', async () => {
    const entries = (await page(owner, '?actor=operator&limit=200')).entries.reverse();
    expect(entries.slice(0, 3).map((e) => e.action)).toEqual(['workspace.created', 'member.added', 'api_key.created']);
    expect(entries[0]).toMatchObject({ actor: { kind: 'operator', id: null, email: null }, ip: null, target: { kind: 'workspace', id: acme.workspaceId }, details: { name: 'Acme' } });
    expect(entries[1]).toMatchObject({ target: { kind: 'user', id: acme.ownerId }, details: { email: acme.ownerEmail, role: 'owner', user_created: true } });
    // memberSession added the admin and the member through the operator's add-member.
    expect(entries.slice(3).map((e) => [e.action, e.details.role])).toEqual([['member.added', 'admin'], ['member.added', 'member']]);
  });

  it('records API keys created and revoked, and a revoked key revoked again not twice', async () => {
    const { answer: key } = await one('api_key.created', async () => ok(await as('POST', '/app/api/api-keys', { name: 'deploys' }), 201), (k) => ({ kind: 'api_key', id: k.key_id }));
    secrets.push(key.api_key as string);
    await one('api_key.revoked', async () => ok(await as('DELETE', `/app/api/api-keys/${key.key_id as string}`)), () => ({ kind: 'api_key', id: key.key_id }));
    const mark = await newest();
    await ok(await as('DELETE', `/app/api/api-keys/${key.key_id as string}`));
    expect(await since(mark)).toEqual([]);
  });

  it('records members added, their role changed (before and after) and removed', async () => {
    const password = 'new-member-password';
    secrets.push(password);
    const { entry, answer } = await one('member.added', async () => ok(await as('POST', '/app/api/members', { email: 'newcomer@example.com', role: 'member', password }), 201), (m) => ({ kind: 'user', id: m.user_id }));
    expect(entry.details).toEqual({ email: 'newcomer@example.com', role: 'member', user_created: true });
    const userId = answer.user_id as string;
    const changed = await one('member.role_changed', async () => ok(await as('PATCH', `/app/api/members/${userId}`, { role: 'admin' })), () => ({ kind: 'user', id: userId }));
    expect(changed.entry.details).toEqual({ email: 'newcomer@example.com', before: { role: 'member' }, after: { role: 'admin' } });
    // The same role again changes nothing and records nothing.
    const mark = await newest();
    await ok(await as('PATCH', `/app/api/members/${userId}`, { role: 'admin' }));
    expect(await since(mark)).toEqual([]);
    const removed = await one('member.removed', async () => ok(await as('DELETE', `/app/api/members/${userId}`)), () => ({ kind: 'user', id: userId }));
    expect(removed.entry.details).toEqual({ email: 'newcomer@example.com', role: 'admin' });
  });

  it('records sending domains created, rotated, verified and deleted, and service tokens created, rotated and revoked', async () => {
    const domainOf = (d: Record<string, unknown>) => ({ kind: 'domain', id: d.domain_id as string });
    const { answer: created, entry } = await one('domain.created', async () => ok(await as('POST', '/app/api/sending-domains', { domain: DOMAIN }), 201), domainOf);
    expect(entry.details).toMatchObject({ domain: DOMAIN });
    secrets.push(((created.verification as { record_value: string }).record_value).split('=')[1]!);
    const { answer: rotated } = await one('domain.records_rotated', async () => ok(await as('POST', `/app/api/sending-domains/${created.domain_id as string}/records`)), domainOf);
    const record = (rotated.verification as { record_value: string }).record_value;
    secrets.push(record.split('=')[1]!);
    h.dns.set(`_mailroom-verification.${DOMAIN}`, { TXT: [record] });
    await one('domain.verified', async () => ok(await as('POST', `/app/api/sending-domains/${created.domain_id as string}/verify`)), () => domainOf(created));
    // Verified already: verify again records nothing.
    let mark = await newest();
    await ok(await as('POST', `/app/api/sending-domains/${created.domain_id as string}/verify`));
    expect(await since(mark)).toEqual([]);

    // Mailboxes are not audited: made through the API key.
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(acme.apiKey), payload: { address: `hello@${DOMAIN}` } })).statusCode).toBe(201);
    const tokenOf = (t: Record<string, unknown>) => ({ kind: 'service_token', id: t.token_id as string });
    const { answer: token, entry: tokenEntry } = await one('service_token.created', async () => ok(await as('POST', '/app/api/service-tokens', { name: 'app', domain_id: created.domain_id, mailbox: `hello@${DOMAIN}` }), 201), tokenOf);
    expect(tokenEntry.details).toEqual({ name: 'app', scope: 'message:send', domain: DOMAIN, mailbox: `hello@${DOMAIN}` });
    secrets.push(token.token as string);
    const { answer: again } = await one('service_token.rotated', async () => ok(await as('POST', `/app/api/service-tokens/${token.token_id as string}/rotate`)), tokenOf);
    secrets.push(again.token as string);
    await one('service_token.revoked', async () => ok(await as('DELETE', `/app/api/service-tokens/${token.token_id as string}`)), () => tokenOf(token));

    // A domain still in use is refused and records nothing; once free, its delete is recorded.
    mark = await newest();
    expect((await as('DELETE', `/app/api/sending-domains/${created.domain_id as string}`)).statusCode).toBe(409);
    expect(await since(mark)).toEqual([]);
    expect((await h.app.inject({ method: 'DELETE', url: `/mailboxes/hello@${DOMAIN}`, headers: bearer(acme.apiKey) })).statusCode).toBe(200);
    const deleted = await one('domain.deleted', async () => ok(await as('DELETE', `/app/api/sending-domains/${created.domain_id as string}`)), () => domainOf(created));
    expect(deleted.entry.details).toEqual({ domain: DOMAIN, status: 'verified' });
  });

  it('records webhooks created, changed (one entry per kind of change), replayed and deleted; never their secrets', async () => {
    const hookOf = (w: Record<string, unknown>) => ({ kind: 'webhook', id: w.webhook_id as string });
    const { answer: hook, entry } = await one('webhook.created', async () => ok(await as('POST', '/app/api/webhooks', { url: 'http://127.0.0.1:9/a' }), 201), hookOf);
    expect(entry.details).toEqual({ url: 'http://127.0.0.1:9/a', event_types: [], active: true, secret_generated: true });
    secrets.push(hook.secret as string);
    const url = `/app/api/webhooks/${hook.webhook_id as string}`;
    const updated = await one('webhook.updated', async () => ok(await as('PATCH', url, { url: 'http://127.0.0.1:9/b', event_types: ['message.sent'] })), () => hookOf(hook));
    expect(updated.entry.details).toEqual({ before: { url: 'http://127.0.0.1:9/a', event_types: [] }, after: { url: 'http://127.0.0.1:9/b', event_types: ['message.sent'] } });
    secrets.push(SECRET_A);
    const rotated = await one('webhook.secret_rotated', async () => ok(await as('PATCH', url, { secret: SECRET_A })), () => hookOf(hook));
    expect(rotated.entry.details).toEqual({});
    await one('webhook.disabled', async () => ok(await as('PATCH', url, { active: false })), () => hookOf(hook));
    await one('webhook.enabled', async () => ok(await as('PATCH', url, { active: true })), () => hookOf(hook));
    // Several kinds of change at once: one entry each, in one transaction.
    const mark = await newest();
    await ok(await as('PATCH', url, { url: 'http://127.0.0.1:9/c', active: false }));
    expect((await since(mark)).map((e) => e.action)).toEqual(['webhook.updated', 'webhook.disabled']);
    await ok(await as('PATCH', url, { active: true }));

    const sent = await ok(await as('POST', `${url}/test`, { event_type: 'message.sent' }), 202);
    const replayed = await one('webhook.replayed', async () => ok(await as('POST', `${url}/deliveries/${sent.event_id as string}/replay`), 202), () => hookOf(hook));
    expect(replayed.entry.details).toMatchObject({ event_id: sent.event_id });
    const removed = await one('webhook.deleted', async () => ok(await as('DELETE', url)), () => hookOf(hook));
    expect(removed.entry.details).toEqual({ url: 'http://127.0.0.1:9/c' });
  });

  it('records allow and block entries and suppressions added and removed by a person', async () => {
    const added = await one('list.entry_added', async () => ok(await as('POST', '/app/api/lists/inbound/block', { entry: 'spam.example', reason: 'noise' }), 201), () => ({ kind: 'list_entry', id: expect.stringMatching(/^lst_/) as unknown }));
    expect(added.entry.details).toEqual({ direction: 'inbound', list_type: 'block', entry: 'spam.example', kind: 'domain', reason: 'noise' });
    const removed = await one('list.entry_removed', async () => ok(await as('DELETE', '/app/api/lists/inbound/block/spam.example')), () => added.entry.target!);
    expect(removed.entry.details).toMatchObject({ entry: 'spam.example' });

    const target = { kind: 'suppression', id: 'gone@example.net' };
    await one('suppression.added', async () => ok(await as('POST', '/app/api/suppressions', { address: 'Gone@Example.net', detail: 'asked by phone' }), 201), () => target);
    // Suppressed already: nothing changes, nothing is recorded.
    const mark = await newest();
    expect((await as('POST', '/app/api/suppressions', { address: 'gone@example.net' })).statusCode).toBe(200);
    expect(await since(mark)).toEqual([]);
    const lifted = await one('suppression.removed', async () => ok(await as('DELETE', '/app/api/suppressions/gone@example.net')), () => target);
    expect(lifted.entry.details).toEqual({ reason: 'manual', detail: 'asked by phone' });
  });

  it('records a password change in each workspace of the user, and a logout', async () => {
    // The admin belongs to Other too: the change shows in both logs, once each.
    await h.services.tenancy.admin.addMember({ workspace: other.workspaceId, email: admin.email, role: 'member' });
    const otherMark = (await page(otherOwner, '?limit=1')).entries[0]!.audit_id;
    const newPassword = 'a brand new password';
    secrets.push(newPassword, 'correct horse battery');
    const changed = await one('user.password_changed', async () => ok(await as('POST', '/app/api/session/password', { current_password: 'correct horse battery', new_password: newPassword })), () => ({ kind: 'user', id: admin.userId }));
    expect(changed.entry.details).toEqual({ email: admin.email, sessions_ended: 0 });
    const inOther = (await page(otherOwner)).entries.filter((e) => e.audit_id > otherMark);
    expect(inOther.map((e) => [e.action, e.ip, e.actor.id])).toEqual([['user.password_changed', IP, admin.userId]]);

    const spare = await login(h, admin.email, newPassword);
    secrets.push(spare);
    const mark = await newest();
    expect((await h.app.inject({ method: 'POST', url: '/app/api/logout', headers: session(spare), remoteAddress: IP })).statusCode).toBe(200);
    const [logout, ...rest] = await since(mark);
    expect(rest).toEqual([]);
    expect(logout).toMatchObject({ action: 'session.revoked', actor: { kind: 'user', id: admin.userId, email: admin.email }, ip: IP, target: { kind: 'session', id: expect.stringMatching(/^ses_/) as unknown } });
  });

  it('records a webhook the service disables (410 Gone) with actor system', async () => {
    let receiver: WebhookReceiver | undefined;
    const worker = startWorker(h, 20);
    try {
      receiver = await startReceiver();
      receiver.answer = () => ({ status: 410 });
      const hook = await ok(await as('POST', '/app/api/webhooks', { url: `${receiver.url}/gone` }), 201);
      secrets.push(hook.secret as string);
      const mark = await newest();
      await ok(await as('POST', `/app/api/webhooks/${hook.webhook_id as string}/test`, { event_type: 'message.sent' }), 202);
      const [entry] = await eventually('the auto-disable entry', async () => {
        const found = (await since(mark)).filter((e) => e.action === 'webhook.disabled');
        return found.length > 0 ? found : undefined;
      });
      expect(entry).toMatchObject({ actor: { kind: 'system', id: null, email: null }, ip: null, target: { kind: 'webhook', id: hook.webhook_id } });
      expect(String(entry!.details.reason)).toContain('410');
    } finally {
      await worker.close();
      await receiver?.close();
    }
  });

  it('keeps the entry and the change together: one rolled back takes the other with it', async () => {
    const failing = (after: boolean): Pick<AuditLog, 'record'> => ({
      async record(trx, entry) {
        if (after) await h.services.audit.record(trx, entry);
        throw new Error('the audit write failed');
      },
    });
    const tenant = { workspaceId: acme.workspaceId, role: 'owner' as const, userId: acme.ownerId };
    const work = asWork(h.services.database.db);
    for (const after of [false, true]) {
      const mark = await newest();
      const workspace = createWorkspaceAdminService({ work, store: createTenancyStore({ dialect: h.services.database.dialect }), clock: h.clock, audit: failing(after) });
      await expect(workspace.createApiKey(tenant, { name: `rolled back ${after}` })).rejects.toThrow('the audit write failed');
      expect((await workspace.listApiKeys(tenant)).api_keys.map((k) => k.name)).not.toContain(`rolled back ${after}`);
      const lists = createListService({ work, store: createListStore(), clock: h.clock, audit: failing(after) });
      await expect(lists.add(tenant, 'outbound', 'block', { entry: `rolled-back-${after}.example` })).rejects.toThrow('the audit write failed');
      expect((await lists.list(tenant, 'outbound', 'block', { limit: 500, offset: 0 })).entries.map((e) => e.entry)).not.toContain(`rolled-back-${after}.example`);
      expect(await since(mark)).toEqual([]);
    }
    // And the other way: the change fails after its entry was written; neither stays.
    const mark = await newest();
    const entry: AuditEntry = { workspaceId: acme.workspaceId, action: AUDIT_ACTIONS.quotaSet, actor: OPERATOR, target: null };
    await expect(work.transaction().execute(async (trx) => {
      await h.services.audit.record(trx, entry);
      throw new Error('the change failed');
    })).rejects.toThrow('the change failed');
    expect(await since(mark)).toEqual([]);
  });

  it('refuses a member (403) and shows each workspace its own log only', async () => {
    expect(errorOf(await read(member))).toEqual({ status: 403, error: 'forbidden_role', detail: 'the audit log needs the owner or admin role' });
    const acmeIds = new Set((await page(owner, '?limit=200')).entries.map((e) => e.audit_id));
    const theirs = (await page(otherOwner, '?limit=200')).entries;
    expect(theirs.length).toBeGreaterThan(0);
    for (const e of theirs) expect(acmeIds.has(e.audit_id)).toBe(false);
    // Acme's actor and ids, asked from Other: nothing of Acme's.
    expect((await page(otherOwner, `?actor=${acme.ownerId}`)).entries).toEqual([]);
    const newestAcme = [...acmeIds].sort().at(-1)!;
    for (const e of (await page(otherOwner, `?before=${newestAcme}&limit=200`)).entries) expect(acmeIds.has(e.audit_id)).toBe(false);
    // The other way round: Acme's owner sees none of Other's.
    const otherIds = new Set(theirs.map((e) => e.audit_id));
    for (const id of acmeIds) expect(otherIds.has(id)).toBe(false);
  });

  it('pages newest first by `before`, and filters by action, action family and actor', async () => {
    const all = (await page(owner, '?limit=200')).entries;
    expect(all.length).toBeGreaterThan(20);
    expect(all.map((e) => e.audit_id)).toEqual([...all.map((e) => e.audit_id)].sort().reverse());
    const walked: string[] = [];
    let before: string | undefined;
    for (let i = 0; i < 100; i++) {
      const p = await page(owner, `?limit=7${before ? `&before=${before}` : ''}`);
      expect(p.entries.length).toBeLessThanOrEqual(7);
      walked.push(...p.entries.map((e) => e.audit_id));
      if (!p.next_before) break;
      expect(p.entries).toHaveLength(7);
      expect(p.next_before).toBe(p.entries.at(-1)!.audit_id);
      before = p.next_before;
    }
    expect(walked).toEqual(all.map((e) => e.audit_id));

    const hooks = all.filter((e) => e.action.startsWith('webhook.')).map((e) => e.audit_id);
    for (const family of ['webhook.', 'webhook', 'webhook.*', 'WEBHOOK.']) {
      expect((await page(owner, `?limit=200&action=${family}`)).entries.map((e) => e.audit_id)).toEqual(hooks);
    }
    expect((await page(owner, '?limit=200&action=member.added')).entries.map((e) => e.audit_id)).toEqual(all.filter((e) => e.action === 'member.added').map((e) => e.audit_id));
    expect((await page(owner, '?action=member.add')).entries).toEqual([]);
    const byAdmin = all.filter((e) => e.actor.id === admin.userId).map((e) => e.audit_id);
    expect((await page(owner, `?limit=200&actor=${admin.userId}`)).entries.map((e) => e.audit_id)).toEqual(byAdmin);
    expect((await page(owner, `?limit=200&actor=${admin.email.toUpperCase()}`)).entries.map((e) => e.audit_id)).toEqual(byAdmin);
    expect((await page(owner, '?limit=200&actor=system')).entries.every((e) => e.actor.kind === 'system')).toBe(true);
    const both = await page(owner, `?limit=200&action=webhook.&actor=${admin.userId}`);
    expect(both.entries.map((e) => e.audit_id)).toEqual(all.filter((e) => e.action.startsWith('webhook.') && e.actor.id === admin.userId).map((e) => e.audit_id));

    expect(errorOf(await read(owner, '?action=drop%20table'))).toMatchObject({ status: 400, error: 'invalid_action' });
    expect(errorOf(await read(owner, '?before=yesterday'))).toMatchObject({ status: 400, error: 'invalid_before' });
    expect(errorOf(await read(owner, '?limit=0'))).toMatchObject({ status: 400 });
    expect(errorOf(await read(owner, '?limit=201'))).toMatchObject({ status: 400 });
  });

  it('holds no secret in any row: no password, credential, webhook secret, verification token, hash or key', async () => {
    const db = h.services.database.db;
    const rows = await db.selectFrom('audit_log').selectAll().execute();
    expect(rows.length).toBeGreaterThan(30);
    const hashes = [
      ...(await db.selectFrom('api_keys').select('token_hash as value').execute()),
      ...(await db.selectFrom('users').select('password_hash as value').execute()),
      ...(await db.selectFrom('sessions').select('token_hash as value').execute()),
      ...(await db.selectFrom('sending_domains').select('verification_hash as value').execute()),
    ].map((r) => r.value);
    expect(secrets.length).toBeGreaterThan(15);
    for (const row of rows) {
      const text = JSON.stringify(row);
      for (const secret of [...secrets, ...hashes]) expect(text).not.toContain(secret);
      expect(text).not.toMatch(/mrk_|mrs_|mst_|whsec_|scrypt\$|PRIVATE KEY|[0-9a-f]{64}/i);
    }
  });
});

describe(`audit log retention (${TEST_DIALECT})`, () => {
  let h: Harness;
  afterAll(async () => h?.close());

  it('keeps a year by default, 0 for ever, and the sweep deletes only entries past the retention', async () => {
    expect(loadConfig({}).auditRetentionDays).toBe(365);
    expect(loadConfig({ MAILROOM_AUDIT_RETENTION_DAYS: '0' }).auditRetentionDays).toBe(0);
    expect(() => loadConfig({ MAILROOM_AUDIT_RETENTION_DAYS: 'a year' })).toThrow(/MAILROOM_AUDIT_RETENTION_DAYS/);

    h = await startHarness({ MAILROOM_AUDIT_RETENTION_DAYS: '30' });
    const old = await createTenant(h, 'Old');
    h.clock.advance(31 * 86_400_000);
    const owner = await login(h, old.ownerEmail, old.password);
    expect((await h.app.inject({ method: 'POST', url: '/app/api/lists/outbound/block', headers: session(owner), payload: { entry: 'late.example' } })).statusCode).toBe(201);
    expect(await h.services.audit.sweep()).toBe(3);
    expect(await h.services.audit.sweep()).toBe(0);
    const left = (await h.app.inject({ method: 'GET', url: '/app/api/audit-log', headers: session(owner) })).json<Page>().entries;
    expect(left.map((e) => e.action)).toEqual(['list.entry_added']);
  });
});

describe('audit log: the net under secrets', () => {
  const shaped = ['mrk_3qLr1f0c9ZxY2w8vU7tS6rQ5pO4nM3lK2jI1hG0fE', 'whsec_AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEB', 'scrypt$32768$8$1$c2FsdA$aGFzaA', 'a'.repeat(64), '-----BEGIN PRIVATE KEY-----\nMIIE'];

  it('throws in test builds on a secret field or a secret-shaped value, wherever it is', () => {
    for (const details of [{ password: 'hunter2hunter2' }, { after: { secret: 'x' } }, { list: ['fine', 'fine'], token_hash: 'x' }, ...shaped.map((v) => ({ note: { deep: [v] } }))]) {
      expect(() => withoutSecrets(details, true), JSON.stringify(details)).toThrow(AuditSecretError);
    }
  });

  it('redacts them in production builds and keeps the rest; names and ids pass', () => {
    expect(withoutSecrets({ name: 'CI deploys', password: 'hunter2hunter2', after: { url: 'https://x.example', secret: 'whsec_x' }, keys: shaped }, false)).toEqual({
      name: 'CI deploys',
      password: REDACTED,
      after: { url: 'https://x.example', secret: REDACTED },
      keys: shaped.map(() => REDACTED),
    });
    const harmless = { token_id: 'tok_01m7yk3v0d8n2q3bz4xg5c6h7j', secret_generated: true, email: 'a@example.com', sessions_ended: 2, before: { role: 'member' } };
    expect(withoutSecrets(harmless, true)).toEqual(harmless);
  });
});
