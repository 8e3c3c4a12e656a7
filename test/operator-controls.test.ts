import { sql, type Kysely } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { asWork } from '../src/db/tables.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, errorOf, session, type Tenant } from './helpers/harness.js';
import type { MailHarness } from './helpers/mail.js';
import { startReceiver, type WebhookReceiver } from './helpers/webhook-receiver.js';
import { eventually, webhookApi } from './helpers/webhooks.js';
import { mailWorld } from './helpers/world.js';

const ACME_BOX = 'desk@mailroom.localhost';
const OTHER_BOX = 'front@mailroom.localhost';

/**
 * The operator's controls of whole workspaces, in one process on a real database, SMTP peer and webhook receiver:
 * a suspended workspace's credentials answer 403 workspace_suspended while its inbound mail is still stored and its
 * deliveries and webhooks wait, to go out after resume; a deleted workspace loses every row of every table, in
 * batches, across an interrupted run. A second workspace goes on unaffected throughout.
 */
describe(`operator controls: suspend, resume, delete a workspace (${TEST_DIALECT})`, () => {
  const world = mailWorld({ env: { MAILROOM_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' } });
  let h: MailHarness;
  let acme: Tenant;
  let other: Tenant;
  let acmeOwner: string;
  let otherOwner: string;
  let acmeToken: string;
  let otherToken: string;
  let receiver: WebhookReceiver;

  /** A sending domain created and verified over the loopback DNS, a mailbox in it and a service token for it. */
  async function serviceToken(owner: string, domain: string): Promise<string> {
    const created = await h.app.inject({ method: 'POST', url: '/app/api/sending-domains', headers: session(owner), payload: { domain } });
    expect(created.statusCode, created.body).toBe(201);
    const body = created.json<{ domain_id: string; verification: { record_name: string; record_value: string } }>();
    h.dns.set(body.verification.record_name, { TXT: [body.verification.record_value] });
    const verified = await h.app.inject({ method: 'POST', url: `/app/api/sending-domains/${body.domain_id}/verify`, headers: session(owner) });
    expect(verified.json()).toMatchObject({ status: 'verified' });
    expect((await h.app.inject({ method: 'POST', url: '/app/api/mailboxes', headers: session(owner), payload: { address: `auth@${domain}` } })).statusCode).toBe(201);
    const token = await h.app.inject({ method: 'POST', url: '/app/api/service-tokens', headers: session(owner), payload: { domain_id: body.domain_id, mailbox: `auth@${domain}` } });
    expect(token.statusCode, token.body).toBe(201);
    return token.json<{ token: string }>().token;
  }

  const send = (headers: Record<string, string>, from: string, to: string, extra: Record<string, unknown> = {}, url = '/send') =>
    h.app.inject({ method: 'POST', url, headers, payload: { from_mailbox: from, to, subject: `To ${to}`, body: 'Hello', ...extra } });
  const transactional = (token: string, domain: string, key: string) =>
    h.app.inject({ method: 'POST', url: '/v1/transactional/messages', headers: { ...bearer(token), 'idempotency-key': key }, payload: { from_mailbox: `auth@${domain}`, to: 'code@peer.test', subject: 'Code', body: '123' } });
  const inbound = (to: string, subject: string) => h.send({ from: 'someone@sender.test', to, subject, text: 'hello' });
  const delivered = (id: string, tenant: Tenant) => eventually(`delivery of ${id}`, async () => ((await world.message(tenant, id))?.status === 'accepted' ? true : undefined));
  const peerGot = (address: string) => world.peer.accepted.some((m) => m.recipients.includes(address));
  const jobsOf = (workspaceId: string) => h.services.queue.inspect(asWork(h.services.database.db), { workspaceId });

  beforeAll(async () => {
    h = world.h;
    receiver = world.own(await startReceiver());
    acme = await world.tenant('Acme', [ACME_BOX]);
    other = await world.tenant('Other', [OTHER_BOX]);
    acmeOwner = await world.ownerSession(acme);
    otherOwner = await world.ownerSession(other);
    acmeToken = await serviceToken(acmeOwner, 'acme-op.test');
    otherToken = await serviceToken(otherOwner, 'other-op.test');
    await webhookApi(h, acmeOwner).add({ url: `${receiver.url}/acme`, event_types: ['message.received'] });
    await webhookApi(h, otherOwner).add({ url: `${receiver.url}/other`, event_types: ['message.received'] });
  });

  it("refuses a suspended workspace's sends, logins and API calls with 403 workspace_suspended, and nobody else's", async () => {
    const draft = await h.app.inject({ method: 'POST', url: '/app/api/drafts', headers: session(acmeOwner), payload: { mailbox: ACME_BOX, to: 'x@peer.test', subject: 'Draft' } });
    expect(draft.statusCode, draft.body).toBe(201);
    const draftId = draft.json<{ draft_id: string }>().draft_id;
    const both = await world.member(acme, 'member');
    const bothEmail = (await h.app.inject({ method: 'GET', url: '/app/api/session', headers: session(both) })).json<{ user: { email: string } }>().user.email;
    await h.services.tenancy.admin.addMember({ workspace: other.workspaceId, email: bothEmail, role: 'member' });
    const platform = (await h.services.tenancy.admin.createApiKey({ platform: true })).api_key;

    expect(await h.services.workspaceLifecycle.suspend(acme.workspaceId, 'unpaid invoice')).toMatchObject({ state: 'suspended', changed: true });
    const refusals = [
      await h.app.inject({ method: 'GET', url: '/mailboxes', headers: bearer(acme.apiKey) }),
      await send(bearer(acme.apiKey), ACME_BOX, 'a@peer.test'),
      await h.app.inject({ method: 'POST', url: '/send/batch', headers: bearer(acme.apiKey), payload: { messages: [{ from_mailbox: ACME_BOX, to: 'b@peer.test', subject: 's', body: 'b' }] } }),
      await h.app.inject({ method: 'GET', url: '/mailboxes', headers: { ...bearer(platform), 'x-tenant-id': acme.workspaceId } }),
      await h.app.inject({ method: 'GET', url: '/app/api/mailboxes', headers: session(acmeOwner) }),
      await send(session(acmeOwner), ACME_BOX, 'c@peer.test', {}, '/app/api/send'),
      await h.app.inject({ method: 'POST', url: `/app/api/drafts/${draftId}/send`, headers: session(acmeOwner), payload: {} }),
      await h.app.inject({ method: 'POST', url: '/app/api/login', payload: { email: acme.ownerEmail, password: acme.password } }),
      await h.app.inject({ method: 'POST', url: '/app/api/workspaces/select', headers: session(both), payload: { workspace_id: acme.workspaceId } }),
      await transactional(acmeToken, 'acme-op.test', 'acme-1'),
    ];
    for (const res of refusals) {
      expect(errorOf(res), res.body).toMatchObject({ status: 403, error: 'workspace_suspended' });
      expect(errorOf(res).detail).toContain(acme.workspaceId);
    }
    expect(errorOf(refusals[0]!).detail).toContain('unpaid invoice');
    // The session itself still answers: the user sees where they stand.
    expect((await h.app.inject({ method: 'GET', url: '/app/api/session', headers: session(acmeOwner) })).statusCode).toBe(200);

    // A user with another workspace logs in to that one, and acts there.
    const logged = await h.app.inject({ method: 'POST', url: '/app/api/login', payload: { email: bothEmail, password: 'correct horse battery' } });
    expect(logged.statusCode, logged.body).toBe(200);
    const bothSession = logged.json<{ session_token: string; active_workspace_id: string }>();
    expect(bothSession.active_workspace_id).toBe(other.workspaceId);
    const theirs = await h.app.inject({ method: 'GET', url: '/app/api/mailboxes', headers: session(bothSession.session_token) });
    expect(theirs.json<{ mailboxes: Array<{ address: string }> }>().mailboxes.map((m) => m.address)).toContain(OTHER_BOX);

    // The other workspace, on every surface, is untouched.
    expect((await h.app.inject({ method: 'GET', url: '/mailboxes', headers: bearer(other.apiKey) })).statusCode).toBe(200);
    expect((await h.app.inject({ method: 'GET', url: '/mailboxes', headers: { ...bearer(platform), 'x-tenant-id': other.workspaceId } })).statusCode).toBe(200);
    expect((await send(bearer(other.apiKey), OTHER_BOX, 'd@peer.test')).statusCode).toBe(202);
    expect((await send(session(otherOwner), OTHER_BOX, 'e@peer.test', {}, '/app/api/send')).statusCode).toBe(202);
    expect((await transactional(otherToken, 'other-op.test', 'other-1')).statusCode).toBe(202);
    expect((await h.app.inject({ method: 'POST', url: '/app/api/login', payload: { email: other.ownerEmail, password: other.password } })).statusCode).toBe(200);

    expect(await h.services.workspaceLifecycle.resume(acme.workspaceId)).toMatchObject({ state: 'active', changed: true });
    const audited = await h.services.audit.list({ workspaceId: acme.workspaceId, role: 'owner', userId: null }, { action: 'workspace.' });
    expect(audited.entries.map((e) => [e.action, e.actor.kind, e.details])).toEqual([
      ['workspace.resumed', 'operator', {}],
      ['workspace.suspended', 'operator', { reason: 'unpaid invoice' }],
      ['workspace.created', 'operator', { name: 'Acme' }],
    ]);
    expect((await h.app.inject({ method: 'GET', url: '/mailboxes', headers: bearer(acme.apiKey) })).statusCode).toBe(200);
    expect((await h.app.inject({ method: 'POST', url: `/app/api/drafts/${draftId}/send`, headers: session(acmeOwner), payload: {} })).statusCode).toBe(202);
    expect((await transactional(acmeToken, 'acme-op.test', 'acme-1')).statusCode).toBe(202);
    expect((await h.app.inject({ method: 'POST', url: '/app/api/login', payload: { email: acme.ownerEmail, password: acme.password } })).statusCode).toBe(200);
  });

  it("stores a suspended workspace's inbound mail and holds its deliveries and webhooks until resume", async () => {
    // The sends of the test before are delivered first, so that every job of the workspace below is this test's.
    await eventually('no job of acme left', async () => ((await jobsOf(acme.workspaceId)).length === 0 ? true : undefined));
    await world.stopWorker();
    const now = await send(bearer(acme.apiKey), ACME_BOX, 'held@peer.test');
    expect(now.statusCode, now.body).toBe(202);
    const later = await send(bearer(acme.apiKey), ACME_BOX, 'later@peer.test', { send_at: new Date(h.clock.now() + 60_000).toISOString() });
    expect(later.statusCode, later.body).toBe(202);
    await h.services.workspaceLifecycle.suspend(acme.workspaceId);
    const acmeBefore = (await h.services.workspaceLifecycle.list()).workspaces.find((w) => w.workspace_id === acme.workspaceId)!;
    expect(acmeBefore).toMatchObject({ state: 'suspended', state_reason: null });

    // Inbound mail is accepted for both; only the other workspace's webhook and delivery go out.
    await inbound(ACME_BOX, 'For acme while suspended');
    await inbound(OTHER_BOX, 'For other');
    h.clock.advance(120_000);
    world.startWorker();
    const barrier = (await send(bearer(other.apiKey), OTHER_BOX, 'barrier@peer.test')).json<{ message_id: string }>().message_id;
    await delivered(barrier, other);
    await receiver.waitFor(1, 10_000, (r) => r.path === '/other');
    expect(peerGot('held@peer.test')).toBe(false);
    expect(peerGot('later@peer.test')).toBe(false);
    expect(receiver.received.filter((r) => r.path === '/acme')).toHaveLength(0);
    // Held, not failed: the jobs wait untouched.
    const waiting = await jobsOf(acme.workspaceId);
    expect(waiting.map((j) => j.queue).sort()).toEqual(['delivery', 'delivery', 'webhook']);
    expect(waiting.every((j) => j.state === 'pending' && j.attempts === 0)).toBe(true);
    const listed = (await h.services.workspaceLifecycle.list()).workspaces.find((w) => w.workspace_id === acme.workspaceId)!;
    expect(listed.usage.messages).toBe(acmeBefore.usage.messages + 1);

    await h.services.workspaceLifecycle.resume(acme.workspaceId);
    await delivered(now.json<{ message_id: string }>().message_id, acme);
    await delivered(later.json<{ message_id: string }>().message_id, acme);
    const hook = await receiver.waitFor(1, 10_000, (r) => r.path === '/acme');
    expect(JSON.parse(hook[0]!.body)).toMatchObject({ event_type: 'message.received', data: { subject: 'For acme while suspended' } });
  });

  it('lists every workspace with its state and usage', async () => {
    const { workspaces } = await h.services.workspaceLifecycle.list();
    const mine = workspaces.filter((w) => [acme.workspaceId, other.workspaceId].includes(w.workspace_id));
    expect(new Map(mine.map((w) => [w.name, w.state]))).toEqual(new Map([['Acme', 'active'], ['Other', 'active']]));
    for (const w of mine) {
      expect(w.usage.mailboxes).toBe(2);
      expect(w.usage.messages).toBeGreaterThanOrEqual(3);
      expect(w.usage.stored_bytes).toBeGreaterThan(0);
      expect(w.usage.sent_last_day).toBeGreaterThanOrEqual(2);
      expect(w.created_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    }
  });

  /** Every table with a workspace_id column (as the database itself says), and how many rows each has of `workspaceId`. */
  async function rowsOf(workspaceId: string): Promise<Record<string, number>> {
    const db = h.services.database.db as unknown as Kysely<unknown>;
    const tables =
      TEST_DIALECT === 'postgres'
        ? await sql<{ table_name: string }>`select table_name from information_schema.columns where table_schema = current_schema() and column_name = 'workspace_id'`.execute(db)
        : await sql<{ table_name: string }>`select m.name as table_name from sqlite_master m join pragma_table_info(m.name) p where m.type = 'table' and p.name = 'workspace_id'`.execute(db);
    const counts: Record<string, number> = {};
    // The audit log outlives the workspace (who deleted it, and what happened before) until its own retention.
    for (const { table_name } of tables.rows.filter((t) => t.table_name !== 'audit_log')) {
      const row = await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table_name)} where workspace_id = ${workspaceId}`.execute(db);
      counts[table_name] = Number(row.rows[0]!.n);
    }
    const workspace = await sql<{ n: number | string }>`select count(*) as n from ${sql.table('workspaces')} where id = ${workspaceId}`.execute(db);
    const active = await sql<{ n: number | string }>`select count(*) as n from ${sql.table('sessions')} where active_workspace_id = ${workspaceId}`.execute(db);
    return { ...counts, workspaces: Number(workspace.rows[0]!.n), 'sessions.active_workspace_id': Number(active.rows[0]!.n) };
  }

  /** Rows in the tables a purge must reach: suppressions, lists, drafts with a file, a scheduled send still queued. */
  async function fill(tenant: Tenant, owner: string, box: string): Promise<void> {
    expect((await h.app.inject({ method: 'POST', url: '/app/api/suppressions', headers: session(owner), payload: { address: 'gone@peer.test' } })).statusCode).toBe(201);
    expect((await h.app.inject({ method: 'POST', url: '/app/api/lists/inbound/block', headers: session(owner), payload: { entry: 'spam@bad.test' } })).statusCode).toBe(201);
    const draft = await h.app.inject({ method: 'POST', url: '/app/api/drafts', headers: session(owner), payload: { mailbox: box, subject: 'Kept' } });
    const ctx = { workspaceId: tenant.workspaceId, role: 'api_key' as const, userId: null };
    await h.services.drafts.addAttachments(ctx, draft.json<{ draft_id: string }>().draft_id, [{ filename: 'a.txt', content_type: 'text/plain', content: Buffer.from('file') }]);
    expect((await send(bearer(tenant.apiKey), box, 'tomorrow@peer.test', { send_at: new Date(h.clock.now() + 86_400_000).toISOString() })).statusCode).toBe(202);
  }

  it("deletes every row of a workspace in every table, in batches, finishing an interrupted run, and none of the other's", async () => {
    await fill(acme, acmeOwner, ACME_BOX);
    await fill(other, otherOwner, OTHER_BOX);
    await world.stopWorker();
    const acmeRows = await rowsOf(acme.workspaceId);
    const otherRows = await rowsOf(other.workspaceId);
    const filled = ['messages', 'threads', 'thread_refs', 'message_contents', 'folder_counts', 'outbound', 'mailboxes', 'drafts', 'draft_attachments', 'suppressions', 'list_entries',
      'events', 'jobs', 'webhooks', 'webhook_deliveries', 'sending_domains', 'service_tokens', 'idempotency_keys', 'api_keys', 'memberships', 'workspaces'];
    for (const table of filled) expect(acmeRows[table], table).toBeGreaterThan(0);

    const progress: string[] = [];
    const first = await h.services.workspaceLifecycle.delete(acme.workspaceId, { batchSize: 2, maxBatches: 5, onProgress: (p) => progress.push(p.step) });
    expect(first).toMatchObject({ finished: false, batches: 5 });
    expect(progress).toHaveLength(5);
    // Marked first: from now on it behaves as gone, though most of its rows are still there.
    expect(errorOf(await h.app.inject({ method: 'GET', url: '/mailboxes', headers: bearer(acme.apiKey) }))).toMatchObject({ status: 401, error: 'invalid_credential' });
    expect(errorOf(await transactional(acmeToken, 'acme-op.test', 'acme-2'))).toMatchObject({ status: 401 });
    expect(errorOf(await h.app.inject({ method: 'GET', url: '/app/api/mailboxes', headers: session(acmeOwner) }))).toMatchObject({ status: 403, error: 'no_active_workspace' });
    await expect(inbound(ACME_BOX, 'Too late')).rejects.toMatchObject({ responseCode: 550 });
    const loggedIn = await h.app.inject({ method: 'POST', url: '/app/api/login', payload: { email: acme.ownerEmail, password: acme.password } });
    expect(loggedIn.json()).toMatchObject({ workspaces: [], active_workspace_id: null });
    expect((await h.services.workspaceLifecycle.list()).workspaces.find((w) => w.workspace_id === acme.workspaceId)?.state).toBe('deleting');
    expect(Object.values(await rowsOf(acme.workspaceId)).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);

    const second = await h.services.workspaceLifecycle.delete(acme.workspaceId, { batchSize: 7 });
    expect(second.finished).toBe(true);
    // One entry for the deletion, kept after the workspace is gone; a run that only finishes one records none.
    const audit = await h.services.audit.list({ workspaceId: acme.workspaceId, role: 'owner', userId: null }, { action: 'workspace.deleted' });
    expect(audit.entries.map((e) => [e.action, e.actor.kind])).toEqual([['workspace.deleted', 'operator']]);
    const left = await rowsOf(acme.workspaceId);
    expect(Object.entries(left).filter(([, n]) => n > 0)).toEqual([]);
    expect(Object.keys(left).sort()).toEqual(Object.keys(acmeRows).sort());
    expect(await rowsOf(other.workspaceId)).toEqual(otherRows);

    // The other workspace still works, its mail still arrives; a third run says the workspace is gone.
    world.startWorker();
    expect((await h.app.inject({ method: 'GET', url: '/mailboxes', headers: bearer(other.apiKey) })).statusCode).toBe(200);
    await inbound(OTHER_BOX, 'Still here');
    await expect(h.services.workspaceLifecycle.delete(acme.workspaceId)).rejects.toMatchObject({ code: 'workspace_not_found' });
  });
});
