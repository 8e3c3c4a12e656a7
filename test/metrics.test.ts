import { connect, type Socket } from 'node:net';
import nodemailer from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.js';
import { createMigrator } from '../src/db/migrator.js';
import { asWork } from '../src/db/tables.js';
import { createLogger } from '../src/lib/logger.js';
import { createMetrics } from '../src/lib/metrics.js';
import { createHttpApp, createServices, startService, type RunningService } from '../src/main.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from './helpers/database.js';
import { startDnsServer, type TestDnsServer } from './helpers/dns-server.js';
import { createTenant, startHarness, type Harness } from './helpers/harness.js';
import { TEST_SERVICE_ENV } from './helpers/service-env.js';
import { startSmtpPeer, type SmtpPeer } from './helpers/smtp-peer.js';
import { startReceiver, type WebhookReceiver } from './helpers/webhook-receiver.js';
import { eventually } from './helpers/webhooks.js';

// GET /metrics on a listener of its own, with real traffic through every role of one process; /health/live and
// /health/ready on both listeners.

interface Owner {
  workspaceId: string;
  email: string;
  password: string;
  apiKey: string;
}

/** One sample's value from the exposition: the line `name{labels} value` (labels exactly, in prom-client's order). */
function sample(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels ? `{${labels}}` : ''} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

async function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; type: string; text: string }> {
  const res = await fetch(url, { headers });
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
}

describe(`metrics and health listeners (${TEST_DIALECT})`, () => {
  let database: TestDatabase;
  let dns: TestDnsServer;
  let peer: SmtpPeer;
  let receiver: WebhookReceiver;
  let running: RunningService;
  let owners: Owner[];
  let stopped = false;

  beforeAll(async () => {
    database = await createTestDatabase();
    // Lookups of the inbound checks (SPF, DMARC) answered on loopback, never by the machine's resolver.
    dns = await startDnsServer();
    peer = await startSmtpPeer();
    receiver = await startReceiver();
    const env = {
      ...TEST_SERVICE_ENV,
      MAILROOM_DATABASE_URL: database.url,
      ...database.secretEnv,
      MAILROOM_LOG_LEVEL: 'silent',
      MAILROOM_HTTP_PORT: '0',
      MAILROOM_SMTP_PORT: '0',
      MAILROOM_METRICS_PORT: '0',
      MAILROOM_SMTP_PARSER_THREADS: '0',
      MAILROOM_DKIM_THREADS: '0',
      MAILROOM_BODY_THREADS: '0',
      MAILROOM_RATE_LIMIT_PER_MINUTE: '0',
      MAILROOM_WORKER_POLL_MS: '50',
      MAILROOM_DNS_SERVERS: dns.address,
      MAILROOM_SMTP_RELAY: `smtp://127.0.0.1:${peer.port}`,
      MAILROOM_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
      // Long enough for the stop below to be seen from outside: an open SMTP session holds it this long.
      MAILROOM_SHUTDOWN_TIMEOUT_MS: '4000',
    };
    const config = loadConfig(env);
    // Two workspaces, made as `mailroom admin bootstrap` makes them, before the service starts.
    const setup = await createServices(config);
    owners = [];
    for (const name of ['Acme', 'Globex']) {
      const email = `owner-${name.toLowerCase()}@example.com`;
      const made = await setup.tenancy.admin.bootstrap({ email, password: 'correct horse battery', workspace: name });
      owners.push({ workspaceId: made.workspace_id, email, password: 'correct horse battery', apiKey: made.api_key });
    }
    await setup.database.destroy();
    running = await startService(config, ['api', 'smtp', 'worker'], createLogger('silent'));
  });

  afterAll(async () => {
    if (!stopped) await running?.stop();
    await peer?.close();
    await receiver?.close();
    await dns?.close();
    await database?.drop();
  });

  const api = (path: string, owner: Owner, init: RequestInit = {}) =>
    fetch(`${running.httpUrl}${path}`, { ...init, headers: { authorization: `Bearer ${owner.apiKey}`, 'content-type': 'application/json', ...(init.headers as Record<string, string> | undefined) } });

  it('counts real HTTP, SMTP, delivery and webhook traffic, by route pattern and outcome, with no tenant in any label', async () => {
    const [acme, globex] = owners as [Owner, Owner];
    for (const [owner, local] of [[acme, 'acme'], [globex, 'globex']] as const) {
      const created = await api('/mailboxes', owner, { method: 'POST', body: JSON.stringify({ address: `${local}@mailroom.localhost` }) });
      expect(created.status).toBe(201);
    }
    // A webhook endpoint of Acme's, through its owner's session.
    const login = await fetch(`${running.httpUrl}/app/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: acme.email, password: acme.password }) });
    const { session_token: token } = (await login.json()) as { session_token: string };
    const hook = await fetch(`${running.httpUrl}/app/api/webhooks`, { method: 'POST', headers: { 'x-service-session': token, 'content-type': 'application/json' }, body: JSON.stringify({ url: `${receiver.url}/hook`, event_types: ['message.received'] }) });
    expect(hook.status).toBe(201);
    // Inbound mail for both workspaces, and one refused recipient.
    const transport = nodemailer.createTransport({ host: '127.0.0.1', port: running.smtpPort!, secure: false, ignoreTLS: true, name: 'client.test' });
    await transport.sendMail({ from: 'someone@sender.test', to: ['acme@mailroom.localhost', 'globex@mailroom.localhost'], subject: 'hello', text: 'hi' });
    await expect(transport.sendMail({ from: 'someone@sender.test', to: 'nobody@mailroom.localhost', subject: 'x', text: 'x' })).rejects.toThrow(/550/);
    // A send from Globex, delivered through the worker to the relay.
    const sent = await api('/send', globex, { method: 'POST', body: JSON.stringify({ from_mailbox: 'globex@mailroom.localhost', to: 'friend@peer.test', subject: 'Hi', body: 'Hello' }) });
    expect(sent.status).toBe(202);
    await receiver.waitFor(1, 20_000);
    await eventually('the delivery at the peer', () => (peer.accepted.length > 0 ? true : undefined), 20_000);

    const metricsUrl = running.metricsUrl!;
    const scrape = await eventually('the delivery and webhook attempt counted', async () => {
      const text = (await get(`${metricsUrl}/metrics`)).text;
      return (sample(text, 'mailroom_deliveries_total', 'outcome="accepted"') ?? 0) >= 1 && (sample(text, 'mailroom_webhook_attempts_total', 'outcome="delivered"') ?? 0) >= 1 ? text : undefined;
    }, 20_000);
    const res = await get(`${metricsUrl}/metrics`);
    expect(res.status).toBe(200);
    expect(res.type).toMatch(/^text\/plain; version=0\.0\.4/);

    expect(sample(scrape, 'mailroom_http_requests_total', 'route="/mailboxes",method="POST",status="201"')).toBe(2);
    expect(sample(scrape, 'mailroom_http_requests_total', 'route="/send",method="POST",status="202"')).toBe(1);
    expect(sample(scrape, 'mailroom_http_request_duration_seconds_count', 'route="/send",method="POST"')).toBe(1);
    expect(sample(scrape, 'mailroom_smtp_sessions_total', 'result="admitted"')).toBeGreaterThanOrEqual(2);
    expect(sample(scrape, 'mailroom_smtp_messages_total', 'result="accepted",code="250"')).toBe(1);
    expect(sample(scrape, 'mailroom_smtp_recipients_total', 'result="accepted",code="250"')).toBe(2);
    expect(sample(scrape, 'mailroom_smtp_recipients_total', 'result="refused",code="550"')).toBe(1);
    expect(sample(scrape, 'mailroom_smtp_ingest_duration_seconds_count')).toBe(1);
    expect(sample(scrape, 'mailroom_smtp_sessions_open')).toBeGreaterThanOrEqual(0);
    expect(sample(scrape, 'mailroom_deliveries_total', 'outcome="accepted"')).toBe(1);
    expect(sample(scrape, 'mailroom_webhook_attempts_total', 'outcome="delivered"')).toBeGreaterThanOrEqual(1);
    for (const queue of ['delivery', 'webhook']) {
      for (const family of ['mailroom_queue_depth', 'mailroom_queue_due', 'mailroom_queue_oldest_due_age_seconds', 'mailroom_queue_expired_leases', 'mailroom_queue_dead']) {
        expect(sample(scrape, family, `queue="${queue}"`), `${family}{queue="${queue}"}`).toBeTypeOf('number');
      }
    }
    for (const family of ['mailroom_analysis_waiting', 'mailroom_analysis_active', 'mailroom_analysis_thread_queue', 'mailroom_analysis_thread_restarts_total', 'mailroom_event_streams_open', 'nodejs_eventloop_lag_seconds', 'process_cpu_user_seconds_total']) {
      expect(sample(scrape, family), family).toBeTypeOf('number');
    }
    expect(scrape).toContain('# TYPE mailroom_queue_lease_expiries_total counter');
    expect(sample(scrape, 'mailroom_db_commit_queue', 'group="writes"')).toBeTypeOf('number');
    if (TEST_DIALECT === 'postgres') {
      expect(sample(scrape, 'mailroom_db_pool_connections', 'state="total"')).toBeGreaterThan(0);
      expect(sample(scrape, 'mailroom_db_pool_connections', 'state="waiting"')).toBeTypeOf('number');
    } else {
      expect(scrape).not.toMatch(/^mailroom_db_pool_connections\{/m);
    }
    // No tenant anywhere: neither workspace, nor an address, nor a key.
    for (const owner of owners) {
      expect(scrape).not.toContain(owner.workspaceId);
      expect(scrape).not.toContain(owner.apiKey);
    }
    expect(scrape).not.toMatch(/@|acme|globex|peer\.test/i);
  }, 90_000);

  it('serves /metrics on its own listener only: the API answers 404, to a browser too', async () => {
    for (const accept of ['application/json', 'text/html']) {
      const res = await get(`${running.httpUrl}/metrics`, { accept });
      expect(res.status).toBe(404);
      expect(JSON.parse(res.text)).toMatchObject({ error: 'not_found' });
    }
    expect((await get(`${running.metricsUrl}/nothing`)).status).toBe(404);
    expect((await get(`${running.metricsUrl}/health`)).status).toBe(404);
  });

  it('answers /health/live and /health/ready on both listeners; /health keeps its answer', async () => {
    for (const base of [running.httpUrl!, running.metricsUrl!]) {
      const live = await get(`${base}/health/live`);
      expect([live.status, JSON.parse(live.text)]).toEqual([200, { ok: true }]);
      const ready = await get(`${base}/health/ready`);
      expect([ready.status, JSON.parse(ready.text)]).toEqual([200, { ok: true, checks: { database: 'ok', migrations: 'ok', listeners: 'ok', running: 'ok' } }]);
    }
    const health = await get(`${running.httpUrl}/health`);
    expect([health.status, JSON.parse(health.text)]).toEqual([200, { ok: true, database: 'ok' }]);
  });

  it('turns unready at once when stopping, while the metrics listener still answers', async () => {
    // An idle SMTP session holds the stop for the SMTP close time-out, so the stopping process can be asked.
    const session: Socket = connect(running.smtpPort!, '127.0.0.1');
    await new Promise<void>((resolve) => session.once('data', () => resolve()));
    const stopping = running.stop();
    stopped = true;
    const ready = await get(`${running.metricsUrl}/health/ready`);
    expect(ready.status).toBe(503);
    const body = JSON.parse(ready.text) as { ok: boolean; checks: Record<string, string> };
    expect(body.ok).toBe(false);
    expect(body.checks.running).toBe('shutting down');
    expect(body.checks.listeners).toMatch(/^not listening: .*smtp/);
    expect((await get(`${running.metricsUrl}/health/live`)).status).toBe(200);
    session.destroy();
    await stopping;
    await expect(fetch(`${running.metricsUrl}/health/live`)).rejects.toThrow();
  }, 30_000);
});

describe(`readiness without the database, and with a migration missing (${TEST_DIALECT})`, () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h.app.close();
    await h.services.composer.close();
    await h.database.drop();
  });

  it('answers 503 with the failing check named, /health/live still 200', async () => {
    const down = await createMigrator(h.services.database.db).migrateDown();
    expect(down.error).toBeUndefined();
    const missing = await h.app.inject({ method: 'GET', url: '/health/ready' });
    expect(missing.statusCode).toBe(503);
    expect(missing.json()).toEqual({ ok: false, checks: { database: 'ok', migrations: '1 not applied (run mailroom migrate)', running: 'ok' } });

    await h.services.database.destroy();
    // A fresh app: its readiness has no answer cached from before the database went away.
    const app = await createHttpApp(h.config, h.services, createLogger('silent'));
    try {
      const gone = await app.inject({ method: 'GET', url: '/health/ready' });
      expect(gone.statusCode).toBe(503);
      expect(gone.json()).toMatchObject({ ok: false, checks: { database: 'the database does not answer', running: 'ok' } });
      expect((await app.inject({ method: 'GET', url: '/health/live' })).json()).toEqual({ ok: true });
    } finally {
      await app.close();
    }
  });
});

describe(`the queues' standing at scrape time (${TEST_DIALECT})`, () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => h.close());

  it('counts pending, due, expired and dead jobs per queue over every workspace, and reads once per scrape storm', async () => {
    // Over every workspace: the gauges are per queue, and never name a workspace.
    const { queue } = h.services;
    const { clock } = h;
    const work = asWork(h.services.database.db);
    const name = `metrics-${Math.random().toString(36).slice(2, 8)}`;
    const [a, b, c] = [await createTenant(h, 'A'), await createTenant(h, 'B'), await createTenant(h, 'C')];
    const now = clock.now();
    // A job given up first (the earliest due, so the first claim takes it).
    await queue.enqueue(work, { queue: name, payload: 0, workspaceId: c.workspaceId, runAt: now - 60_000 });
    const [doomed] = await queue.claim(name, 1);
    expect(await queue.bury(doomed!, 'given up')).toBe(true);
    // Workspace A: two due (one 30 s late) and one scheduled; workspace B: one due, 10 s late.
    await queue.enqueue(work, { queue: name, payload: 1, workspaceId: a.workspaceId, runAt: now - 30_000 });
    await queue.enqueue(work, { queue: name, payload: 2, workspaceId: a.workspaceId, runAt: now });
    await queue.enqueue(work, { queue: name, payload: 3, workspaceId: a.workspaceId, runAt: now + 60_000 });
    await queue.enqueue(work, { queue: name, payload: 4, workspaceId: b.workspaceId, runAt: now - 10_000 });
    expect(await queue.stats([name])).toEqual([{ queue: name, pending: 4, due: 3, oldestDueSeconds: 30, expiredLeases: 0, dead: 1 }]);

    // The 30 s late one is leased, then its lease runs out with nobody taking it over.
    const [leased] = await queue.claim(name, 1);
    expect(leased?.payload).toBe(1);
    expect((await queue.stats([name]))[0]).toMatchObject({ pending: 4, due: 2, oldestDueSeconds: 10, expiredLeases: 0 });
    clock.advance(h.config.leaseMs + 1000);
    const later = clock.now();
    expect(await queue.stats([name])).toEqual([{ queue: name, pending: 4, due: 3, oldestDueSeconds: (later - (now - 10_000)) / 1000, expiredLeases: 1, dead: 1 }]);

    let reads = 0;
    const metrics = createMetrics();
    metrics.read({
      queues: async () => {
        reads += 1;
        return queue.stats([name]);
      },
    });
    const scrapes = await Promise.all(Array.from({ length: 5 }, () => metrics.scrape()));
    expect(reads).toBe(1);
    expect(sample(scrapes[0]!.body, 'mailroom_queue_dead', `queue="${name}"`)).toBe(1);
    for (const tenant of [a, b, c]) expect(scrapes[0]!.body).not.toContain(tenant.workspaceId);
  });
});
