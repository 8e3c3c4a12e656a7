import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type DbHandle } from '../src/db/database.js';
import { asWork } from '../src/db/tables.js';
import { createQueue, type Queue } from '../src/jobs/queue.js';
import { systemClock } from '../src/lib/clock.js';
import { runCli, startServe } from './helpers/cli.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from './helpers/database.js';
import { startDnsServer, type TestDnsServer } from './helpers/dns-server.js';
import { bearer } from './helpers/harness.js';
import { startSmtpPeer, type SmtpPeer } from './helpers/smtp-peer.js';
import { mailWorld } from './helpers/world.js';

/**
 * Delivery states under a real crash: `mailroom serve` child processes deliver to a loopback SMTP peer (MX
 * from a loopback DNS server), and the worker is killed with SIGKILL in the middle of a delivery.
 * Killed after the final dot (before the reply), the message becomes `unknown` and is never sent
 * again; killed before DATA began, it is retried and delivered once. Then, in-process and step by step,
 * the case a restart can cause: a job claimed again while an earlier run of it is still going.
 */

const LEASE_MS = 1000;
const RETRY_BASE_MS = 200;
const PASSWORD = 'crash-test-pass';
const EMAIL = 'owner@crash.example';
const FROM = 'newsletter@mailroom.localhost';

interface OutboundRow {
  status: string;
  data_started_at: number | null;
  attempts_json: string;
}

type Serve = Awaited<ReturnType<typeof startServe>>;

/** Poll until `check` gives a value, for at most `timeoutMs`; the error says what was awaited. */
async function waitFor<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe(`kill -9 of the delivery worker never produces two copies (${TEST_DIALECT})`, () => {
  let database: TestDatabase;
  let dns: TestDnsServer;
  let peer: SmtpPeer;
  let reader: DbHandle;
  /** The queue as the children see it, read beside them (this process claims nothing). */
  let queue: Queue;
  let env: Record<string, string>;
  let apiKey: string;
  let sessionToken: string;
  const children = new Set<ChildProcess>();

  /** `mailroom serve --role api,worker` as a child process (startServe waits for the HTTP listener). */
  async function serve(): Promise<Serve> {
    const server = await startServe(['--role', 'api,worker'], { ...env, MAILROOM_HTTP_PORT: '0' }, 15_000);
    children.add(server.child);
    void server.exited.then(() => children.delete(server.child));
    return server;
  }

  async function kill9(server: Serve): Promise<void> {
    server.child.kill('SIGKILL');
    const exit = await Promise.race([server.exited, sleep(5000).then(() => 'still running' as const)]);
    if (exit === 'still running') throw new Error('the worker did not die on SIGKILL');
  }

  /** Stop a child gracefully (SIGTERM), or kill it if it does not exit within 5 s. */
  async function stop(server: Serve): Promise<void> {
    if (server.child.exitCode !== null || server.child.signalCode !== null) return;
    server.child.kill('SIGTERM');
    const exit = await Promise.race([server.exited, sleep(5000).then(() => 'still running' as const)]);
    if (exit === 'still running') {
      server.child.kill('SIGKILL');
      await Promise.race([server.exited, sleep(5000)]);
    }
  }

  const outbound = (id: string) =>
    reader.db.selectFrom('outbound').select(['status', 'data_started_at', 'attempts_json']).where('message_id', '=', id).executeTakeFirstOrThrow() as Promise<OutboundRow>;
  const jobsOf = async (id: string) =>
    (await queue.inspect<{ message_id?: string }>(asWork(reader.db), { queue: 'delivery' })).filter((j) => j.payload.message_id === id);
  const eventsOf = async (type: string, id: string) =>
    (await reader.db.selectFrom('events').select('payload').where('type', '=', type).execute())
      .map((e) => JSON.parse(e.payload) as { data: { message_id?: string } })
      .filter((e) => e.data.message_id === id);
  const copies = (list: SmtpPeer['received'], recipient: string) => list.filter((m) => m.recipients.includes(recipient)).length;

  async function send(server: Serve, to: string, subject: string): Promise<string> {
    const res = await fetch(`${server.url}/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ from_mailbox: FROM, to, subject, body: 'exactly once, please' }),
    });
    expect(res.status).toBe(202);
    return ((await res.json()) as { message_id: string }).message_id;
  }

  /** The status GET /app/api/sent shows for a message (the owner's session, kept in the database across processes). */
  async function sentStatus(server: Serve, id: string): Promise<string | undefined> {
    const res = await fetch(`${server.url}/app/api/sent`, { headers: { 'x-service-session': sessionToken } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { messages: Array<{ message_id: string; status: string }> };
    return body.messages.find((m) => m.message_id === id)?.status;
  }

  beforeAll(async () => {
    database = await createTestDatabase();
    dns = await startDnsServer();
    dns.set('peer.test', { MX: [{ exchange: 'mx1.peer.test', priority: 10 }] });
    dns.set('mx1.peer.test', { A: ['127.0.0.1'] });
    peer = await startSmtpPeer();
    env = {
      MAILROOM_DATABASE_URL: database.url,
      ...database.secretEnv,
      MAILROOM_LOG_LEVEL: 'info',
      MAILROOM_DNS_SERVERS: dns.address,
      MAILROOM_MX_PORT: String(peer.port),
      MAILROOM_SMTP_HOSTNAME: 'mx.mailroom.test',
      MAILROOM_LEASE_MS: String(LEASE_MS),
      MAILROOM_DELIVERY_RETRY_BASE_MS: String(RETRY_BASE_MS),
      MAILROOM_RATE_LIMIT_PER_MINUTE: '0',
    };
    const boot = await runCli(['admin', 'bootstrap', '--email', EMAIL, '--password', PASSWORD, '--workspace', 'Crash', '--json'], env);
    expect(boot.code, boot.stderr).toBe(0);
    apiKey = (JSON.parse(boot.stdout) as { api_key: string }).api_key;
    // The CLI has migrated the database; the test reads it beside the children.
    reader = createDb(database.url, { poolSize: 2 });
    queue = createQueue({ work: asWork(reader.db), dialect: reader.dialect, clock: systemClock, leaseMs: LEASE_MS });
  });

  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await reader?.destroy();
    await peer?.close();
    await dns?.close();
    await database?.drop();
  });

  it('killed after the final dot, before the reply: unknown, one copy, never tried again', { timeout: 30_000 }, async () => {
    const first = await serve();
    let second: Serve | undefined;
    try {
      const mailbox = await fetch(`${first.url}/mailboxes?address=${FROM}`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}` } });
      expect(mailbox.status).toBe(201);
      const login = await fetch(`${first.url}/app/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: EMAIL, password: PASSWORD }) });
      expect(login.status).toBe(200);
      sessionToken = ((await login.json()) as { session_token: string }).session_token;

      peer.behaviour = 'hang-after-dot';
      const id = await send(first, 'after-dot@peer.test', 'killed after the dot');
      // The peer has the whole message (final dot included) and never answers; the worker waits for the reply.
      await waitFor('the peer to receive the complete message', () => (copies(peer.received, 'after-dot@peer.test') === 1 ? true : undefined));
      const before = await outbound(id);
      expect(before.status).toBe('processing');
      expect(before.data_started_at).not.toBeNull(); // the durable "DATA began" marker
      expect(await sentStatus(first, id)).toBe('processing');

      await kill9(first);
      // From here a peer that answers 250 would take any second copy: a resend could not go unnoticed.
      peer.behaviour = 'accept';
      second = await serve();

      // The dead worker's lease runs out (it is no longer renewed) and the new worker claims the job.
      const settled = await waitFor('the message to leave processing', async () => {
        const row = await outbound(id);
        return row.status === 'processing' ? undefined : row;
      }, LEASE_MS + 8000);
      expect(settled.status).toBe('unknown');
      expect(settled.data_started_at).toBeNull();
      const attempts = JSON.parse(settled.attempts_json) as Array<{ outcome: string; response: string }>;
      expect(attempts).toEqual([expect.objectContaining({ outcome: 'ambiguous', response: 'delivery interrupted after DATA began' })]);
      expect(await sentStatus(second, id)).toBe('unknown');

      // Several retry periods and more than a lease later: still one copy, no job left, no acceptance claimed.
      await sleep(Math.max(8 * RETRY_BASE_MS, 2 * LEASE_MS));
      expect((await outbound(id)).status).toBe('unknown');
      expect(copies(peer.received, 'after-dot@peer.test')).toBe(1);
      expect(copies(peer.accepted, 'after-dot@peer.test')).toBe(0);
      expect(await jobsOf(id)).toEqual([]);
      expect(await eventsOf('message.accepted', id)).toEqual([]);
      expect(await sentStatus(second, id)).toBe('unknown');
    } finally {
      await stop(first);
      if (second) await stop(second);
    }
  });

  it('killed before DATA began: retried by the next worker and accepted, exactly one copy', { timeout: 30_000 }, async () => {
    const first = await serve();
    let second: Serve | undefined;
    try {
      peer.behaviour = 'hang-at-rcpt';
      const id = await send(first, 'before-data@peer.test', 'killed at RCPT');
      await waitFor('the peer to hold the RCPT', () => (peer.held.includes('before-data@peer.test') ? true : undefined));
      const before = await outbound(id);
      expect(before.status).toBe('processing');
      expect(before.data_started_at).toBeNull(); // DATA never began: the peer cannot have the message
      const [job] = await jobsOf(id);
      expect(job).toMatchObject({ state: 'pending', attempts: 1 });
      expect(job!.leaseToken).not.toBeNull();

      await kill9(first);
      expect(copies(peer.received, 'before-data@peer.test')).toBe(0);
      peer.behaviour = 'accept';
      second = await serve();

      const settled = await waitFor('the message to be delivered', async () => {
        const row = await outbound(id);
        return row.status === 'processing' || row.status === 'queued' ? undefined : row;
      }, LEASE_MS + 8000);
      expect(settled.status).toBe('accepted');
      expect(settled.data_started_at).toBeNull();
      // The killed attempt left no record; the last one got 250. (A run that found its lease already run
      // out when it reached DATA, as a worker busy starting up may, stops there and is retried: 'deferred'.)
      const outcomes = (JSON.parse(settled.attempts_json) as Array<{ outcome: string }>).map((a) => a.outcome);
      expect(outcomes.at(-1)).toBe('sent');
      expect(outcomes.slice(0, -1).every((o) => o === 'deferred')).toBe(true);
      expect(await sentStatus(second, id)).toBe('accepted');

      await sleep(Math.max(8 * RETRY_BASE_MS, 2 * LEASE_MS));
      expect(copies(peer.received, 'before-data@peer.test')).toBe(1);
      expect(copies(peer.accepted, 'before-data@peer.test')).toBe(1);
      expect(await jobsOf(id)).toEqual([]);
      expect(await eventsOf('message.accepted', id)).toHaveLength(1);
    } finally {
      await stop(first);
      if (second) await stop(second);
    }
  });
  it('a transactional message killed after the final dot: unknown on its status lookup, one copy, a replay sends nothing', { timeout: 30_000 }, async () => {
    const first = await serve();
    let second: Serve | undefined;
    try {
      const owner = { 'x-service-session': sessionToken, 'content-type': 'application/json' };
      // A verified sending domain (TXT on the loopback DNS), a mailbox in it and a service token for both.
      const domain = (await (await fetch(`${first.url}/app/api/sending-domains`, { method: 'POST', headers: owner, body: JSON.stringify({ domain: 'crash.example' }) })).json()) as {
        domain_id: string;
        verification: { record_name: string; record_value: string };
      };
      dns.set(domain.verification.record_name, { TXT: [domain.verification.record_value] });
      expect(((await (await fetch(`${first.url}/app/api/sending-domains/${domain.domain_id}/verify`, { method: 'POST', headers: { 'x-service-session': sessionToken } })).json()) as { status: string }).status).toBe('verified');
      expect((await fetch(`${first.url}/app/api/mailboxes`, { method: 'POST', headers: owner, body: JSON.stringify({ address: 'codes@crash.example' }) })).status).toBe(201);
      const tokenRes = await fetch(`${first.url}/app/api/service-tokens`, { method: 'POST', headers: owner, body: JSON.stringify({ name: 'codes', domain_id: domain.domain_id, mailbox: 'codes@crash.example' }) });
      expect(tokenRes.status).toBe(201);
      const serviceToken = ((await tokenRes.json()) as { token: string }).token;
      const payload = JSON.stringify({ from_mailbox: 'codes@crash.example', to: 'tx-after-dot@peer.test', subject: 'Your code', body: '424242' });
      const post = (server: Serve) =>
        fetch(`${server.url}/v1/transactional/messages`, { method: 'POST', headers: { authorization: `Bearer ${serviceToken}`, 'idempotency-key': 'login-7', 'content-type': 'application/json' }, body: payload });
      const status = async (server: Serve, id: string) =>
        ((await (await fetch(`${server.url}/v1/transactional/messages/${id}`, { headers: { authorization: `Bearer ${serviceToken}` } })).json()) as { status: string; attempts: unknown[] }).status;

      peer.behaviour = 'hang-after-dot';
      const created = await post(first);
      expect(created.status).toBe(202);
      const id = ((await created.json()) as { message_id: string }).message_id;
      await waitFor('the peer to receive the complete message', () => (copies(peer.received, 'tx-after-dot@peer.test') === 1 ? true : undefined));
      expect(await status(first, id)).toBe('processing');

      await kill9(first);
      peer.behaviour = 'accept';
      second = await serve();
      const live = second;
      await waitFor('the status to leave processing', async () => ((await status(live, id)) === 'processing' ? undefined : true), LEASE_MS + 8000);
      expect(await status(second, id)).toBe('unknown');

      // The caller retries its request: the original 202 comes back and nothing is sent again.
      const retried = await post(second);
      expect(retried.status).toBe(202);
      expect(retried.headers.get('idempotent-replayed')).toBe('true');
      expect(((await retried.json()) as { message_id: string }).message_id).toBe(id);
      await sleep(Math.max(8 * RETRY_BASE_MS, 2 * LEASE_MS));
      expect(await status(second, id)).toBe('unknown');
      expect(copies(peer.received, 'tx-after-dot@peer.test')).toBe(1);
      expect(copies(peer.accepted, 'tx-after-dot@peer.test')).toBe(0);
      expect(await jobsOf(id)).toEqual([]);
    } finally {
      await stop(first);
      if (second) await stop(second);
    }
  });
});

describe(`a delivery run whose job was claimed again sends nothing (${TEST_DIALECT})`, () => {
  // A worker that starts while its event loop is busy can receive a claim whose lease has already run
  // out, and claim the job again; a stalled worker's lease can run out too. Of two runs of one message,
  // only the one holding the lease may start DATA, and the other's outcome is not recorded.
  // No worker: the test plays the workers, claiming and running the job itself.
  const world = mailWorld({ env: { MAILROOM_LEASE_MS: String(LEASE_MS) }, worker: false });

  it('the superseded run stops before DATA; the current one delivers exactly once', { timeout: 20_000 }, async () => {
    const { h, peer } = world;
    const tenant = await world.tenant('Acme', [FROM]);
    const handler = h.services.handlers.find((x) => x.queue === 'delivery')!;
    const outbound = () => h.services.database.db.selectFrom('outbound').selectAll().executeTakeFirstOrThrow();

    peer.behaviour = 'hang-at-rcpt';
    const res = await h.app.inject({ method: 'POST', url: '/send', headers: bearer(tenant.apiKey), payload: { from_mailbox: FROM, to: 'twice@peer.test', subject: 'claimed twice', body: 'once' } });
    expect(res.statusCode).toBe(202);
    const [first] = await h.services.queue.claim('delivery', 1);
    const firstRun = handler.handle(first!, new AbortController().signal);
    await waitFor('the first run to wait at RCPT', () => (peer.held.length === 1 ? true : undefined));

    // Its lease runs out (never renewed here) and the job is claimed again.
    h.clock.advance(LEASE_MS + 1);
    const [second] = await h.services.queue.claim('delivery', 1);
    expect(second).toMatchObject({ id: first!.id, attempt: 2, interrupted: true });
    peer.behaviour = 'accept';
    // The run settles its job itself, in the transaction that records the outcome.
    expect(await handler.handle(second!, new AbortController().signal)).toEqual({ type: 'settled' });
    expect((await outbound()).status).toBe('accepted');
    expect(await h.services.queue.inspect(asWork(h.services.database.db), { id: second!.id })).toEqual([]);

    // The first run gets its RCPT answer now and would go on to DATA: it must not.
    peer.releaseHeld();
    expect(await Promise.race([firstRun, sleep(10_000).then(() => 'still running' as const)])).toEqual({ type: 'settled' });
    expect(peer.received.filter((m) => m.recipients.includes('twice@peer.test'))).toHaveLength(1);
    const row = await outbound();
    expect(row.status).toBe('accepted'); // the superseded run did not overwrite the outcome
    expect(row.data_started_at).toBeNull();
    expect((JSON.parse(row.attempts_json) as Array<{ outcome: string }>).map((a) => a.outcome)).toEqual(['sent']);
    const accepted = world.events('message.accepted').length;
    expect(accepted).toBe(1);
  });
});
