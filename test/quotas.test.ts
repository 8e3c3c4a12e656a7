import { describe, expect, it } from 'vitest';
import { createServices, type Services } from '../src/main.js';
import { isQuotaExceeded } from '../src/modules/quotas/quota.types.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, errorOf, memberSession, session, type Tenant } from './helpers/harness.js';
import { mailWorld } from './helpers/world.js';

type UsageReport = { usage: Record<string, number>; quotas: Record<string, number | null> };

const HOUR_MS = 3_600_000;

describe(`quotas per workspace (${TEST_DIALECT})`, () => {
  const world = mailWorld({ env: { MAILROOM_DELIVERY_RETRY_BASE_MS: '60000' } });
  const h = () => world.h;
  const setQuota = (tenant: Tenant, name: string, value: string) => h().services.quotas.set(tenant.workspaceId, name, value);
  const send = (tenant: Tenant, from: string, n: number | string, url = '/send', headers: Record<string, string> = bearer(tenant.apiKey)) =>
    h().app.inject({ method: 'POST', url, headers, payload: { from_mailbox: from, to: `rcpt-${n}@peer.test`, subject: `Quota ${n}`, body: `Hello ${n}` } });
  const usage = async (tenant: Tenant): Promise<UsageReport> => {
    const res = await h().app.inject({ method: 'GET', url: '/usage', headers: bearer(tenant.apiKey) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<UsageReport>();
  };
  /** Seconds until the clock's current hour ends, as Retry-After states them. */
  const untilHourEnds = () => Math.ceil((HOUR_MS - (h().clock.now() % HOUR_MS)) / 1000);
  const quotaOf = (res: { json: <T>() => T }) => res.json<{ quota?: string }>().quota;

  it('refuses a mailbox past the mailboxes quota (429, no Retry-After); another workspace and the operator are not held', async () => {
    const acme = await world.tenant('Boxes');
    const other = await world.tenant('Other boxes');
    await setQuota(acme, 'mailboxes', '2');
    await world.mailbox(acme, 'one@mailroom.localhost');
    await world.mailbox(acme, 'two@mailroom.localhost');
    const third = await h().app.inject({ method: 'POST', url: '/mailboxes?address=three@mailroom.localhost', headers: bearer(acme.apiKey) });
    expect(errorOf(third)).toMatchObject({ status: 429, error: 'quota_exceeded' });
    expect(quotaOf(third)).toBe('mailboxes');
    expect(third.headers['retry-after']).toBeUndefined();
    const owner = await world.ownerSession(acme);
    const bySession = await h().app.inject({ method: 'POST', url: '/app/api/mailboxes', headers: session(owner), payload: { address: 'three@mailroom.localhost' } });
    expect(errorOf(bySession)).toMatchObject({ status: 429, error: 'quota_exceeded' });
    for (const n of [1, 2, 3]) await world.mailbox(other, `other-${n}@mailroom.localhost`);
    await h().services.mailboxes.createAsOperator(acme.workspaceId, { address: 'postmaster-acme@mailroom.localhost' });
    expect((await usage(acme)).usage.mailboxes).toBe(3);
    await setQuota(acme, 'mailboxes', 'default');
    await world.mailbox(acme, 'three@mailroom.localhost');
    expect((await usage(acme)).quotas.mailboxes).toBeNull();
  });

  it('refuses sends past sent_per_hour on every send path, with Retry-After until the hour ends; the next hour sends again', async () => {
    const acme = await world.tenant('Hourly', ['hourly@mailroom.localhost']);
    const other = await world.tenant('Other hourly', ['other-hourly@mailroom.localhost']);
    await setQuota(acme, 'sent_per_hour', '3');
    const from = 'hourly@mailroom.localhost';
    for (const n of [1, 2, 3]) expect((await send(acme, from, n)).statusCode).toBe(202);
    const over = await send(acme, from, 4);
    expect(errorOf(over)).toMatchObject({ status: 429, error: 'quota_exceeded' });
    expect(quotaOf(over)).toBe('sent_per_hour');
    expect(Number(over.headers['retry-after'])).toBe(untilHourEnds());

    const owner = await world.ownerSession(acme);
    expect(quotaOf(await send(acme, from, 5, '/app/api/send', session(owner)))).toBe('sent_per_hour');
    const batch = await h().app.inject({ method: 'POST', url: '/send/batch', headers: bearer(acme.apiKey), payload: { messages: [{ from_mailbox: from, to: 'b@peer.test', subject: 'b', body: 'b' }] } });
    expect(errorOf(batch)).toMatchObject({ status: 429, error: 'quota_exceeded' });
    const later = new Date(h().clock.now() + 2 * HOUR_MS).toISOString();
    const scheduled = await h().app.inject({ method: 'POST', url: '/send', headers: bearer(acme.apiKey), payload: { from_mailbox: from, to: 's@peer.test', subject: 's', body: 's', send_at: later } });
    expect(quotaOf(scheduled)).toBe('sent_per_hour');
    const draft = await h().app.inject({ method: 'POST', url: '/app/api/drafts', headers: session(owner), payload: { mailbox: from, to: ['d@peer.test'], subject: 'draft', body: 'draft' } });
    expect(draft.statusCode, draft.body).toBe(201);
    const draftId = draft.json<{ draft_id: string }>().draft_id;
    const sentDraft = await h().app.inject({ method: 'POST', url: `/app/api/drafts/${draftId}/send`, headers: session(owner) });
    expect(quotaOf(sentDraft)).toBe('sent_per_hour');
    expect(await world.sentCount(acme)).toBe(3);

    // The other workspace is not held by this one's quota.
    for (const n of [1, 2, 3, 4, 5]) expect((await send(other, 'other-hourly@mailroom.localhost', n)).statusCode).toBe(202);

    expect((await usage(acme)).usage).toMatchObject({ sent_last_hour: 3, sent_last_day: 3 });
    h().clock.advance(untilHourEnds() * 1000);
    expect((await h().app.inject({ method: 'POST', url: `/app/api/drafts/${draftId}/send`, headers: session(owner) })).statusCode).toBe(202);
    expect((await usage(acme)).usage).toMatchObject({ sent_last_hour: 1, sent_last_day: 4 });
  });

  it('refuses sends past sent_per_day, Retry-After until the oldest hour that holds the excess leaves the day', async () => {
    const acme = await world.tenant('Daily', ['daily@mailroom.localhost']);
    await setQuota(acme, 'sent_per_day', '5');
    const from = 'daily@mailroom.localhost';
    const firstHour = h().clock.now() - (h().clock.now() % HOUR_MS);
    for (const n of [1, 2, 3]) expect((await send(acme, from, n)).statusCode).toBe(202);
    h().clock.advance(HOUR_MS);
    for (const n of [4, 5]) expect((await send(acme, from, n)).statusCode).toBe(202);
    const over = await send(acme, from, 6);
    expect(quotaOf(over)).toBe('sent_per_day');
    expect(Number(over.headers['retry-after'])).toBe(Math.ceil((firstHour + 24 * HOUR_MS - h().clock.now()) / 1000));
    // A batch of two is refused whole: nothing of it is sent.
    const batch = await h().app.inject({ method: 'POST', url: '/send/batch', headers: bearer(acme.apiKey), payload: { messages: [1, 2].map((n) => ({ from_mailbox: from, to: `b${n}@peer.test`, subject: 'b', body: 'b' })) } });
    expect(quotaOf(batch)).toBe('sent_per_day');
    expect(await world.sentCount(acme)).toBe(5);
    h().clock.set(firstHour + 24 * HOUR_MS);
    expect((await send(acme, from, 7)).statusCode).toBe(202);
    expect((await usage(acme)).usage).toMatchObject({ sent_last_day: 3 });
  });

  it('lets no burst of concurrent sends in one process past the hourly quota', async () => {
    const acme = await world.tenant('Burst', ['burst@mailroom.localhost']);
    await setQuota(acme, 'sent_per_hour', '10');
    const answers = await Promise.all(Array.from({ length: 30 }, (_, n) => send(acme, 'burst@mailroom.localhost', `burst-${n}`)));
    const statuses = answers.map((a) => a.statusCode);
    expect(statuses.filter((s) => s === 202)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20);
    expect(await world.sentCount(acme)).toBe(10);
    expect((await usage(acme)).usage.sent_last_hour).toBe(10);
  });

  it('lets no burst past the daily quota: the count in the send counts the earlier hours of the day too', async () => {
    const acme = await world.tenant('Daily burst', ['dayburst@mailroom.localhost']);
    await setQuota(acme, 'sent_per_day', '5');
    const from = 'dayburst@mailroom.localhost';
    for (const n of [1, 2, 3]) expect((await send(acme, from, n)).statusCode).toBe(202);
    h().clock.advance(HOUR_MS);
    // All of them pass the check before composing (3 of 5 sent); the count in each send's transaction holds.
    const answers = await Promise.all(Array.from({ length: 12 }, (_, n) => send(acme, from, `day-burst-${n}`)));
    expect(answers.filter((a) => a.statusCode === 202)).toHaveLength(2);
    expect(answers.filter((a) => a.statusCode !== 202).map(quotaOf)).toEqual(Array.from({ length: 10 }, () => 'sent_per_day'));
    expect(await world.sentCount(acme)).toBe(5);
  });

  it.runIf(TEST_DIALECT === 'postgres')('counts sends of two service instances sharing the database together', async () => {
    const acme = await world.tenant('Two processes', ['twice@mailroom.localhost']);
    await setQuota(acme, 'sent_per_hour', '12');
    const second: Services = await createServices(h().config, { clock: h().clock });
    try {
      const tenant = { workspaceId: acme.workspaceId, role: 'api_key' as const, userId: null };
      const attempt = (services: Services, n: number) =>
        services.sending.enqueue(tenant, { from_mailbox: 'twice@mailroom.localhost', to: `p${n}@peer.test`, subject: `Twice ${n}`, body: 'b' }).then(
          () => 'sent' as const,
          (err: unknown) => {
            if (isQuotaExceeded(err)) return 'refused' as const;
            throw err;
          },
        );
      const outcomes = await Promise.all(Array.from({ length: 40 }, (_, n) => attempt(n % 2 === 0 ? h().services : second, n)));
      const sent = outcomes.filter((o) => o === 'sent').length;
      // At most the quota plus one per process; counted in the database, in each send's transaction, it is exact.
      expect(sent).toBeLessThanOrEqual(12 + 2);
      expect(sent).toBe(12);
      expect(await world.sentCount(acme)).toBe(sent);
    } finally {
      second.deliverer.close?.();
      await second.analyzer.close();
      await second.signer.close();
      await second.composer.close();
      await second.database.destroy();
    }
  });

  it('counts API requests per minute per workspace (every credential together), with Retry-After', async () => {
    const acme = await world.tenant('Chatty');
    const other = await world.tenant('Quiet');
    await setQuota(acme, 'api_requests_per_minute', '4');
    const member = (await memberSession(h(), acme.workspaceId, 'member')).token;
    const get = (url: string, headers: Record<string, string>) => h().app.inject({ method: 'GET', url, headers });
    for (let i = 0; i < 2; i++) expect((await get('/mailboxes', bearer(acme.apiKey))).statusCode).toBe(200);
    for (let i = 0; i < 2; i++) expect((await get('/app/api/mailboxes', session(member))).statusCode).toBe(200);
    const over = await get('/mailboxes', bearer(acme.apiKey));
    expect(errorOf(over)).toMatchObject({ status: 429, error: 'quota_exceeded' });
    expect(quotaOf(over)).toBe('api_requests_per_minute');
    expect(Number(over.headers['retry-after'])).toBe(Math.ceil((60_000 - (h().clock.now() % 60_000)) / 1000));
    expect(quotaOf(await get('/app/api/usage', session(member)))).toBe('api_requests_per_minute');
    for (let i = 0; i < 6; i++) expect((await get('/mailboxes', bearer(other.apiKey))).statusCode).toBe(200);
    h().clock.advance(60_000);
    expect((await get('/mailboxes', bearer(acme.apiKey))).statusCode).toBe(200);
    await setQuota(acme, 'api_requests_per_minute', 'unlimited');
  });

  it('shows usage and quotas to any member (session) and to API keys, each workspace its own', async () => {
    const acme = await world.tenant('Usage', ['usage@mailroom.localhost']);
    const other = await world.tenant('Other usage');
    await setQuota(acme, 'sent_per_hour', '100');
    await setQuota(acme, 'stored_bytes', 'unlimited');
    expect((await send(acme, 'usage@mailroom.localhost', 1)).statusCode).toBe(202);
    const member = (await memberSession(h(), acme.workspaceId, 'member')).token;
    const res = await h().app.inject({ method: 'GET', url: '/app/api/usage', headers: session(member) });
    expect(res.statusCode).toBe(200);
    const report = res.json<UsageReport>();
    expect(Object.keys(report.usage).sort()).toEqual(['mailboxes', 'sent_last_day', 'sent_last_hour', 'stored_bytes']);
    expect(Object.keys(report.quotas).sort()).toEqual(['api_requests_per_minute', 'mailboxes', 'sent_per_day', 'sent_per_hour', 'stored_bytes']);
    expect(report.usage).toMatchObject({ mailboxes: 1, sent_last_hour: 1, sent_last_day: 1 });
    const sent = await world.sentMessages(acme);
    expect(report.usage.stored_bytes).toBe(sent.reduce((sum, m) => sum + Number(m.size), 0));
    expect(report.quotas).toMatchObject({ sent_per_hour: 100, stored_bytes: null, mailboxes: null });
    expect(await usage(acme)).toEqual(report);
    const theirs = await usage(other);
    expect(theirs.usage).toEqual({ mailboxes: 0, stored_bytes: 0, sent_last_hour: 0, sent_last_day: 0 });
    expect(theirs.quotas.sent_per_hour).toBeNull();
    expect((await h().services.quotas.usageOf(acme.workspaceId)).usage.sent_last_hour).toBe(1);
  });

  it('refuses a quota the service does not know and a value that is no number', async () => {
    const acme = await world.tenant('Settings');
    await expect(setQuota(acme, 'messages', '3')).rejects.toMatchObject({ code: 'unknown_quota' });
    await expect(setQuota(acme, 'sent_per_hour', 'lots')).rejects.toMatchObject({ code: 'invalid_quota_value' });
    await expect(h().services.quotas.set('ws_nope', 'sent_per_hour', '3')).rejects.toMatchObject({ code: 'workspace_not_found' });
  });

  it('records each quota set in the workspace audit log, by the operator', async () => {
    const acme = await world.tenant('Audited');
    await setQuota(acme, 'sent_per_hour', '7');
    await setQuota(acme, 'sent_per_hour', 'default');
    const log = await h().services.audit.list({ workspaceId: acme.workspaceId, role: 'owner', userId: null }, { action: 'quota.set' });
    expect(log.entries.map((e) => [e.actor.kind, e.target, e.details])).toEqual([
      ['operator', { kind: 'quota', id: 'sent_per_hour' }, { before: 7, after: 'default' }],
      ['operator', { kind: 'quota', id: 'sent_per_hour' }, { before: null, after: 7 }],
    ]);
  });
});

describe(`stored bytes over SMTP (${TEST_DIALECT})`, () => {
  const world = mailWorld({ peer: false, worker: false });
  const h = () => world.h;
  const raw = (to: string, subject: string, size: number) =>
    `From: sender@example.org\r\nTo: ${to}\r\nSubject: ${subject}\r\nMessage-ID: <${subject.replace(/\W/g, '')}@example.org>\r\n\r\n${'x'.repeat(size)}\r\n`;
  const stored = async (tenant: Tenant) => (await h().services.quotas.usageOf(tenant.workspaceId)).usage.stored_bytes;
  const messages = async (tenant: Tenant) => (await h().app.inject({ method: 'GET', url: '/stats', headers: bearer(tenant.apiKey) })).json<{ messages: number }>().messages;
  const smtpError = (err: unknown) => err as { responseCode?: number; response?: string; rejected?: string[] };

  it('defers mail at the end of DATA that would take the workspace over, and at RCPT once it is over; nothing stored is lost', async () => {
    const full = await world.tenant('Full', ['full@mailroom.localhost']);
    const free = await world.tenant('Free', ['free@mailroom.localhost']);
    await h().services.quotas.set(full.workspaceId, 'stored_bytes', '3000');
    await h().sendRaw(raw('full@mailroom.localhost', 'first', 1000), { from: 'sender@example.org', to: ['full@mailroom.localhost'] });
    const first = await stored(full);
    expect(first).toBeGreaterThan(1000);

    // This one would take it over: refused at the end of DATA (452 4.2.2), nothing stored.
    const big = await h().sendRaw(raw('full@mailroom.localhost', 'big', 2500), { from: 'sender@example.org', to: ['full@mailroom.localhost'] }).catch(smtpError);
    expect(smtpError(big).responseCode).toBe(452);
    expect(smtpError(big).response).toContain('4.2.2');
    expect(await stored(full)).toBe(first);

    // Fill it to the brim: from now on refused at RCPT.
    await h().services.quotas.set(full.workspaceId, 'stored_bytes', String(first));
    const atRcpt = await h().sendRaw(raw('full@mailroom.localhost', 'small', 10), { from: 'sender@example.org', to: ['full@mailroom.localhost'] }).catch(smtpError);
    expect(smtpError(atRcpt).responseCode).toBe(452);
    expect(smtpError(atRcpt).response).toContain('4.2.2');
    expect(await messages(full)).toBe(1);

    // The other workspace takes mail as before, alone or beside the full one (the full one's recipient deferred).
    await h().sendRaw(raw('free@mailroom.localhost', 'free-one', 5000), { from: 'sender@example.org', to: ['free@mailroom.localhost'] });
    const both = await h().sendRaw(raw('free@mailroom.localhost', 'both', 100), { from: 'sender@example.org', to: ['free@mailroom.localhost', 'full@mailroom.localhost'] });
    expect(both.rejected).toEqual(['full@mailroom.localhost']);
    expect(await messages(free)).toBe(2);
    expect(await messages(full)).toBe(1);

    // A delete frees the bytes again.
    const list = (await h().app.inject({ method: 'GET', url: '/inbox?limit=10', headers: bearer(full.apiKey) })).json<{ messages: Array<{ message_id: string }> }>();
    const deleted = await h().app.inject({ method: 'DELETE', url: `/messages/${list.messages[0]!.message_id}`, headers: bearer(full.apiKey) });
    expect(deleted.statusCode).toBe(200);
    expect(await stored(full)).toBe(0);
    await h().sendRaw(raw('full@mailroom.localhost', 'after', 10), { from: 'sender@example.org', to: ['full@mailroom.localhost'] });
    expect(await messages(full)).toBe(1);
  });

  it('keeps a storage-limited workspace out of a transaction with another workspace (452 4.5.3), so its refusal holds no one else', async () => {
    const limited = await world.tenant('Limited', ['limited@mailroom.localhost']);
    const open = await world.tenant('Open', ['open@mailroom.localhost']);
    await h().services.quotas.set(limited.workspaceId, 'stored_bytes', '100000');
    const info = await h().sendRaw(raw('open@mailroom.localhost', 'mixed', 100), { from: 'sender@example.org', to: ['open@mailroom.localhost', 'limited@mailroom.localhost'] });
    expect(info.rejected).toEqual(['limited@mailroom.localhost']);
    expect(smtpError(info).response ?? '').not.toContain('4.2.2');
    expect(await messages(open)).toBe(1);
    // Alone, it is taken.
    await h().sendRaw(raw('limited@mailroom.localhost', 'alone', 100), { from: 'sender@example.org', to: ['limited@mailroom.localhost'] });
    expect(await messages(limited)).toBe(1);
  });
});
