import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type Mail from 'nodemailer/lib/mailer/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/lib/ids.js';
import { createServices } from '../src/main.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, errorOf, login, memberSession, session, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 10, 1, 12, 0, 0);
const ACME = 'desk@mailroom.localhost';
const OTHER = 'front@mailroom.localhost';

interface RetentionView {
  trash_days: number | null;
  spam_days: number | null;
  trash_custom: boolean;
  spam_custom: boolean;
  defaults: { trash_days: number | null; spam_days: number | null };
  records: Record<string, number | null>;
}

/**
 * Retention through the running service: messages reach trash and spam through real SMTP and the API at a moved
 * clock, the sweep (with a batch of 2, so every run is several batches) removes those past their workspace's period
 * through the mail store's one delete path, and the counters, threads, labels and search index agree with the rows
 * left. The service's own records (events, webhook attempts, dead jobs, idempotency keys) go after theirs.
 */
describe(`retention (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let acme: Tenant;
  let other: Tenant;
  let acmeOwner: string;
  let otherOwner: string;

  const db = () => h.services.database.db;
  const api = (tenant: Tenant, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) =>
    h.app.inject({ method, url, headers: bearer(tenant.apiKey), ...(payload ? { payload } : {}) });
  const app = (token: string, method: 'GET' | 'PATCH' | 'POST' | 'DELETE', url: string, payload?: object) =>
    h.app.inject({ method, url, headers: session(token), ...(payload ? { payload } : {}) });
  const exists = async (tenant: Tenant, id: string) => (await api(tenant, 'GET', `/messages/${id}`)).statusCode === 200;

  async function deliver(at: number, message: Mail.Options): Promise<string> {
    h.clock.set(at);
    const info = await h.send(message);
    return /Stored as (.+)$/.exec(info.response)![1]!;
  }
  async function move(tenant: Tenant, id: string, folder: string, at: number): Promise<void> {
    h.clock.set(at);
    const res = await api(tenant, 'POST', `/messages/${id}/move`, { folder });
    expect(res.statusCode, res.body).toBe(200);
  }
  /** A session of the tenant's owner made now (the tests move the clock past sessions' lifetimes). */
  const ownerNow = (tenant: Tenant) => login(h, tenant.ownerEmail, tenant.password);
  async function searchSubjects(tenant: Tenant, q: string): Promise<string[]> {
    const res = await app(await ownerNow(tenant), 'GET', `/app/api/messages?q=${encodeURIComponent(q)}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ messages: Array<{ subject: string }> }>().messages.map((m) => m.subject).sort();
  }
  /** Every folder counter of the workspace next to a count of its rows, and every thread's count next to its messages. */
  async function countersTrue(workspaceId: string): Promise<void> {
    const counters = await db().selectFrom('folder_counts').select(['mailbox_id', 'folder', 'total', 'unread']).where('workspace_id', '=', workspaceId).execute();
    for (const c of counters) {
      const rows = await db().selectFrom('messages').select(['read']).where('mailbox_id', '=', c.mailbox_id).where('folder', '=', c.folder).execute();
      expect({ folder: c.folder, total: Number(c.total), unread: Number(c.unread) }).toEqual({ folder: c.folder, total: rows.length, unread: rows.filter((r) => r.read === 0).length });
    }
    const threads = await db().selectFrom('threads').select(['id', 'message_count', 'unread_count']).where('workspace_id', '=', workspaceId).execute();
    for (const t of threads) {
      const rows = await db().selectFrom('messages').select(['read']).where('thread_id', '=', t.id).execute();
      expect(rows.length, `thread ${t.id} has messages`).toBeGreaterThan(0);
      expect([t.message_count, t.unread_count]).toEqual([rows.length, rows.filter((r) => r.read === 0).length]);
    }
  }
  const modseq = async (workspaceId: string, folder: string) =>
    Number((await db().selectFrom('folder_counts').select((eb) => eb.fn.sum<number>('modseq').as('m')).where('workspace_id', '=', workspaceId).where('folder', '=', folder).executeTakeFirst())?.m ?? 0);

  beforeAll(async () => {
    h = await startMailHarness({ MAILROOM_RETENTION_BATCH: '2' });
    acme = await createTenant(h, 'Acme');
    other = await createTenant(h, 'Other');
    acmeOwner = await login(h, acme.ownerEmail, acme.password);
    otherOwner = await login(h, other.ownerEmail, other.password);
    expect((await api(acme, 'POST', '/mailboxes', { address: ACME })).statusCode).toBe(201);
    expect((await api(other, 'POST', '/mailboxes', { address: OTHER })).statusCode).toBe(201);
  });
  afterAll(async () => {
    await h.close();
  });

  describe('GET and PATCH /app/api/retention', () => {
    it('shows the defaults, lets an owner or admin set each folder (0 or null: never), refuses members and bad values', async () => {
      const first = await app(acmeOwner, 'GET', '/app/api/retention');
      expect(first.statusCode, first.body).toBe(200);
      expect(first.json<RetentionView>()).toEqual({
        trash_days: 30,
        spam_days: 30,
        trash_custom: false,
        spam_custom: false,
        defaults: { trash_days: 30, spam_days: 30 },
        records: { events_days: 30, webhook_attempts_days: 30, dead_jobs_days: 30, idempotency_days: 30 },
      });
      const admin = (await memberSession(h, acme.workspaceId, 'admin')).token;
      const set = await app(admin, 'PATCH', '/app/api/retention', { spam_days: 0 });
      expect(set.statusCode, set.body).toBe(200);
      expect(set.json<RetentionView>()).toMatchObject({ trash_days: 30, trash_custom: false, spam_days: null, spam_custom: true });
      const never = await app(acmeOwner, 'PATCH', '/app/api/retention', { spam_days: null, trash_days: 7 });
      expect(never.json<RetentionView>()).toMatchObject({ trash_days: 7, trash_custom: true, spam_days: null, spam_custom: true });
      // Each change is in the audit log, by whom, with the periods before and after (0 = never).
      const audit = await h.services.audit.list({ workspaceId: acme.workspaceId, role: 'owner', userId: null }, { action: 'retention.set' });
      expect(audit.entries.map((e) => [e.actor.kind, e.details])).toEqual([
        ['user', { before: { trash_days: null, spam_days: 0 }, after: { trash_days: 7, spam_days: 0 } }],
        ['user', { before: { spam_days: null }, after: { spam_days: 0 } }],
      ]);

      const member = (await memberSession(h, acme.workspaceId, 'member')).token;
      expect(errorOf(await app(member, 'PATCH', '/app/api/retention', { trash_days: 1 }))).toMatchObject({ status: 403, error: 'forbidden_role' });
      expect((await app(member, 'GET', '/app/api/retention')).json<RetentionView>().trash_days).toBe(7);
      for (const bad of [{ trash_days: -1 }, { trash_days: 3651 }, { trash_days: 1.5 }, { spam_days: 'never' }, { keep: 1 }]) {
        expect(errorOf(await app(acmeOwner, 'PATCH', '/app/api/retention', bad)).status, JSON.stringify(bad)).toBe(400);
      }
      // The other workspace is untouched and cannot touch this one.
      expect((await app(otherOwner, 'GET', '/app/api/retention')).json<RetentionView>()).toMatchObject({ trash_days: 30, spam_days: 30, trash_custom: false });
      expect((await app(otherOwner, 'PATCH', '/app/api/retention', { trash_days: 90 })).json<RetentionView>().trash_days).toBe(90);
      expect((await app(acmeOwner, 'GET', '/app/api/retention')).json<RetentionView>().trash_days).toBe(7);
      // Back to what the sweep tests below expect: acme trash 7 days, spam 30 (set, as the default); other trash 90.
      expect((await app(acmeOwner, 'PATCH', '/app/api/retention', { spam_days: 30 })).statusCode).toBe(200);
      expect(errorOf(await h.app.inject({ method: 'GET', url: '/app/api/retention' })).status).toBe(401);
    });
  });

  describe('the sweep', () => {
    const ids: Record<string, string> = {};

    beforeAll(async () => {
      // Acme: old mail in trash and spam, one thread split between trash and the inbox, old mail in the inbox.
      ids.oldTrash = await deliver(T0, { from: 'a@sender.test', to: ACME, subject: 'Zebra invoice one', text: 'zebra' });
      ids.oldTrashRead = await deliver(T0 + 1000, { from: 'b@sender.test', to: ACME, subject: 'Okapi note', text: 'okapi' });
      ids.oldSpam = await deliver(T0 + 2000, { from: 'c@sender.test', to: ACME, subject: 'Cheap zebra pills', text: 'zebra' });
      ids.threadHead = await deliver(T0 + 3000, { from: 'd@sender.test', to: ACME, subject: 'Gnu plans', text: 'gnu', messageId: '<gnu-1@sender.test>' });
      ids.threadReply = await deliver(T0 + 4000, { from: 'd@sender.test', to: ACME, subject: 'Re: Gnu plans', text: 'gnu again', inReplyTo: '<gnu-1@sender.test>', references: ['<gnu-1@sender.test>'] });
      ids.oldInbox = await deliver(T0 + 5000, { from: 'e@sender.test', to: ACME, subject: 'Zebra in the inbox', text: 'zebra' });
      expect((await api(acme, 'POST', `/messages/${ids.oldTrash}/labels`, { add: ['keep-me'] })).statusCode).toBe(200);
      expect((await api(acme, 'POST', `/messages/${ids.oldTrashRead}/read`, { read: true })).statusCode).toBe(200);
      await move(acme, ids.oldTrash, 'trash', T0 + DAY);
      await move(acme, ids.oldTrashRead, 'trash', T0 + DAY);
      await move(acme, ids.oldSpam, 'spam', T0 + DAY);
      await move(acme, ids.threadHead, 'trash', T0 + DAY);
      // Other: old trash, kept by its own 90 days.
      ids.otherTrash = await deliver(T0, { from: 'f@sender.test', to: OTHER, subject: 'Zebra for other', text: 'zebra' });
      await move(other, ids.otherTrash, 'trash', T0 + DAY);
      // Recent: moved to trash 3 days before the sweep, and a spam message of 20 days.
      ids.newTrash = await deliver(T0 + 40 * DAY, { from: 'g@sender.test', to: ACME, subject: 'Zebra recent', text: 'zebra' });
      await move(acme, ids.newTrash, 'trash', T0 + 40 * DAY);
      ids.newSpam = await deliver(T0 + 25 * DAY, { from: 'h@sender.test', to: ACME, subject: 'Zebra spam recent', text: 'zebra' });
      await move(acme, ids.newSpam, 'spam', T0 + 25 * DAY);
      h.clock.set(T0 + 43 * DAY);
    });

    it('removes trash and spam past each workspace\'s period in several batches, keeps the rest, and keeps counters, threads and search true', async () => {
      expect(await searchSubjects(acme, 'zebra')).toEqual(['Cheap zebra pills', 'Zebra in the inbox', 'Zebra invoice one', 'Zebra recent', 'Zebra spam recent']);
      const trashBefore = await modseq(acme.workspaceId, 'trash');

      const report = await h.services.retention.sweep.sweep();
      expect(report.messages).toBe(4);
      expect(report.batches).toBeGreaterThan(2);
      for (const gone of ['oldTrash', 'oldTrashRead', 'oldSpam', 'threadHead']) expect(await exists(acme, ids[gone]!), gone).toBe(false);
      for (const kept of ['threadReply', 'oldInbox', 'newTrash', 'newSpam']) expect(await exists(acme, ids[kept]!), kept).toBe(true);
      expect(await exists(other, ids.otherTrash!)).toBe(true);

      // Search, counters, threads, labels, contents: as if each had been deleted by hand.
      expect(await searchSubjects(acme, 'zebra')).toEqual(['Zebra in the inbox', 'Zebra recent', 'Zebra spam recent']);
      expect(await searchSubjects(other, 'zebra')).toEqual(['Zebra for other']);
      await countersTrue(acme.workspaceId);
      await countersTrue(other.workspaceId);
      const stats = (await api(acme, 'GET', '/stats')).json<{ folders: Record<string, { total: number }> }>();
      expect([stats.folders.trash!.total, stats.folders.spam!.total, stats.folders.inbox!.total]).toEqual([1, 1, 2]);
      expect(await modseq(acme.workspaceId, 'trash')).toBeGreaterThan(trashBefore);
      const thread = await api(acme, 'GET', `/messages/${ids.threadReply}/thread`);
      expect(thread.json<{ message_count: number }>().message_count).toBe(1);
      const gone = [ids.oldTrash!, ids.oldTrashRead!, ids.oldSpam!, ids.threadHead!];
      expect(await db().selectFrom('message_labels').select('label').where('message_id', 'in', gone).execute()).toEqual([]);
      expect(await db().selectFrom('message_contents').select('message_id').where('message_id', 'in', gone).execute()).toEqual([]);

      // Nothing more to do: a second sweep removes nothing.
      expect((await h.services.retention.sweep.sweep()).messages).toBe(0);
      // A user's delete goes the same way: the thread goes with its last message, the counters follow.
      expect((await api(acme, 'DELETE', `/messages/${ids.threadReply}`)).statusCode).toBe(200);
      expect(await db().selectFrom('threads').select('id').where('id', '=', thread.json<{ thread_id: string }>().thread_id).execute()).toEqual([]);
      await countersTrue(acme.workspaceId);
    });

    it('keeps a message a delivery or a draft still needs until it no longer does', async () => {
      h.clock.set(T0 + 50 * DAY);
      const send = await api(acme, 'POST', '/send', { from_mailbox: ACME, to: 'later@peer.test', subject: 'Scheduled far', body: 'x', send_at: new Date(T0 + 70 * DAY).toISOString() });
      expect(send.statusCode, send.body).toBe(202);
      const scheduled = send.json<{ message_id: string }>().message_id;
      await move(acme, scheduled, 'trash', T0 + 50 * DAY);
      const answered = await deliver(T0 + 50 * DAY, { from: 'i@sender.test', to: ACME, subject: 'Answer me', text: 'please' });
      await move(acme, answered, 'trash', T0 + 50 * DAY);
      const owner = await ownerNow(acme);
      const draft = await app(owner, 'POST', '/app/api/drafts', { mailbox: ACME, to: ['i@sender.test'], in_reply_to: answered });
      expect(draft.statusCode, draft.body).toBe(201);

      h.clock.set(T0 + 60 * DAY);
      await h.services.retention.sweep.sweep();
      expect(await exists(acme, scheduled)).toBe(true);
      expect(await exists(acme, answered)).toBe(true);

      expect((await api(acme, 'POST', `/messages/${scheduled}/cancel`)).statusCode).toBe(200);
      expect((await app(owner, 'DELETE', `/app/api/drafts/${draft.json<{ draft_id: string }>().draft_id}`)).statusCode).toBe(200);
      expect((await h.services.retention.sweep.sweep()).messages).toBeGreaterThanOrEqual(2);
      expect(await exists(acme, scheduled)).toBe(false);
      expect(await exists(acme, answered)).toBe(false);
      await countersTrue(acme.workspaceId);
    });
  });

  // PostgreSQL only: SQLite is the one-process mode, where a second sweep waits for the first (one connection).
  describe.skipIf(TEST_DIALECT !== 'postgres')('two sweeps at once', () => {
    it('remove each message once, whichever process takes it, and leave the counters true', async () => {
      const at = T0 + 300 * DAY;
      // Whatever else is due by then goes first, so the two sweeps below find exactly these nine.
      h.clock.set(at + 40 * DAY);
      await h.services.retention.sweep.sweep();
      const swept: string[] = [];
      for (let i = 0; i < 9; i++) {
        const id = await deliver(at, { from: 'j@sender.test', to: ACME, subject: `Twice ${i % 3}`, text: 'twice' });
        await move(acme, id, i % 2 === 0 ? 'trash' : 'spam', at);
        swept.push(id);
      }
      h.clock.set(at + 40 * DAY);
      const second = await createServices(h.config, { clock: h.clock });
      try {
        const [a, b] = await Promise.all([h.services.retention.sweep.sweep(), second.retention.sweep.sweep()]);
        expect(a.messages + b.messages).toBe(9);
      } finally {
        await second.database.destroy();
      }
      for (const id of swept) expect(await exists(acme, id)).toBe(false);
      await countersTrue(acme.workspaceId);
    });
  });

  describe("the service's own records", () => {
    it('removes events, webhook attempts, dead jobs and idempotency keys past their periods, and nothing newer', async () => {
      const now = T0 + 100 * DAY;
      const old = now - 31 * DAY;
      const recent = now - 29 * DAY;
      const w = acme.workspaceId;
      const mailbox = await db().selectFrom('mailboxes').select('id').where('address', '=', ACME).executeTakeFirstOrThrow();
      await db().deleteFrom('events').execute();
      // Rows are written oldest first, as the service writes them (ids sort by time).
      const events = [old, old, recent].map((at) => ({ id: newId('evt'), workspace_id: w, type: 'message.received', payload: '{}', created_at: at }));
      await db().insertInto('events').values(events).execute();
      const webhook = newId('whk');
      await db().insertInto('webhooks').values({ id: webhook, workspace_id: w, url: 'https://hooks.example/x', event_types: '[]', active: 1, secret: null, previous_secrets: '[]', created_at: old, updated_at: old, failing_since: null, disabled_at: null, disabled_reason: null }).execute();
      const attempt = (at: number) => ({ id: newId('dlv'), workspace_id: w, webhook_id: webhook, event_id: 'evt_x', event_type: 'message.received', attempt: 1, status_code: 200, error: null, success: 1, duration_ms: 5, delivered_at: at });
      await db().insertInto('webhook_deliveries').values([attempt(old), attempt(old), attempt(old), attempt(recent)]).execute();
      const job = (state: 'dead' | 'pending', at: number) => ({
        id: newId('job'), queue: 'webhook', workspace_id: w, payload: '{}', state, attempts: 8, max_attempts: 8, run_at: at, lease_token: null, interrupted: 0, last_error: 'gave up', group_key: webhook, dedup_key: null, created_at: at, updated_at: at,
      });
      const pendingOld = job('pending', old);
      await db().insertInto('jobs').values([job('dead', old), job('dead', old), job('dead', recent), pendingOld]).execute();
      const domain = newId('dom');
      await db().insertInto('sending_domains').values({ id: domain, workspace_id: w, domain: 'acme.test', status: 'verified', verification_hash: 'x', dkim_selector: 's', dkim_private_key: 'x', dkim_public_key: 'x', created_at: old, verified_at: old }).execute();
      const token = newId('tok');
      await db().insertInto('service_tokens').values({ id: token, workspace_id: w, name: 't', scope: 'message:send', domain_id: domain, mailbox_id: mailbox.id, token_hash: `h${token}`, created_at: old, rotated_at: null, last_used_at: null }).execute();
      const key = (at: number, n: number) => ({ token_id: token, idempotency_key: `k${n}`, workspace_id: w, request_hash: 'x', message_id: newId('msg'), response_json: '{}', created_at: at });
      await db().insertInto('idempotency_keys').values([key(old, 1), key(old, 2), key(old, 3), key(recent, 4)]).execute();

      h.clock.set(now);
      const report = await h.services.retention.sweep.sweep();
      expect(report).toMatchObject({ events: 2, webhookAttempts: 3, deadJobs: 2, idempotencyKeys: 3 });
      expect((await db().selectFrom('events').select('created_at').execute()).map((r) => Number(r.created_at))).toEqual([recent]);
      expect((await db().selectFrom('webhook_deliveries').select('delivered_at').execute()).map((r) => Number(r.delivered_at))).toEqual([recent]);
      const jobs = await db().selectFrom('jobs').select(['id', 'state']).where('queue', '=', 'webhook').execute();
      expect(jobs.map((j) => j.state).sort()).toEqual(['dead', 'pending']);
      expect(jobs.some((j) => j.id === pendingOld.id)).toBe(true);
      expect((await db().selectFrom('idempotency_keys').select('idempotency_key').execute()).map((r) => r.idempotency_key)).toEqual(['k4']);
    });
  });

  describe.skipIf(TEST_DIALECT !== 'sqlite')('storage (SQLite)', () => {
    it('gives the space of swept messages back to the file system (incremental vacuum)', async () => {
      const pragma = async (name: string) => Number(Object.values((await sql<Record<string, number>>`select * from ${sql.raw(`pragma_${name}()`)}`.execute(db())).rows[0]!)[0]);
      expect(await pragma('auto_vacuum')).toBe(2);
      const at = T0 + 200 * DAY;
      // Random bytes: stored contents may be compressed, and these do not shrink.
      const big = randomBytes(200 * 1024);
      for (let i = 0; i < 12; i++) {
        const id = await deliver(at, { from: 'big@sender.test', to: ACME, subject: `Big ${i}`, text: 'big', attachments: [{ filename: `big-${i}.txt`, content: big }] });
        await move(acme, id, 'trash', at);
      }
      const before = await pragma('page_count');
      h.clock.set(at + 8 * DAY);
      const report = await h.services.retention.sweep.sweep();
      expect(report.messages).toBe(12);
      expect(report.pagesFreed).toBeGreaterThan(0);
      const after = await pragma('page_count');
      // 12 × 200 KiB of attachments (and their raw sources) gone: the file is at least 2 MiB smaller.
      expect((before - after) * (await pragma('page_size'))).toBeGreaterThan(2 * 1024 * 1024);
      expect(await pragma('freelist_count')).toBe(0);
    });
  });
});
