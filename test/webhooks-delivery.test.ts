import { createServer, type Server } from 'node:http';
import { asWork } from '../src/db/tables.js';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createSecureContext } from 'node:tls';
import selfsigned from 'selfsigned';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENDPOINT_CONCURRENCY } from '../src/modules/webhooks/webhook.types.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, memberSession, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';
import { startReceiver, type ReceivedRequest, type WebhookReceiver } from './helpers/webhook-receiver.js';
import { capturingLogger, eventually, SECRET_A, SECRET_B, sleep, startWorker, webhookApi, type DeliveryBody } from './helpers/webhooks.js';

/**
 * Webhook delivery end to end: the service's own worker POSTs to real HTTP receivers on
 * loopback (reached through MAILROOM_WEBHOOK_ALLOW_CIDRS=127.0.0.0/8), with host names answered by a
 * loopback DNS server. Nothing is mocked: signatures are checked with the `standardwebhooks` package.
 */

const TIMEOUT_MS = 2500;
const BACKOFF_BASE_MS = 1000;
const env = {
  MAILROOM_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
  MAILROOM_WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
  MAILROOM_WEBHOOK_BACKOFF_BASE_MS: String(BACKOFF_BASE_MS),
};

type Api = ReturnType<typeof webhookApi>;

const headerOf = (r: ReceivedRequest, name: string) => {
  const value = r.headers[name];
  return typeof value === 'string' ? value : '';
};
const eventIdOf = (r: ReceivedRequest) => (JSON.parse(r.body) as { event_id: string }).event_id;

async function settle(h: MailHarness, api: Api, webhookId: string, count: number, timeoutMs = 10_000): Promise<DeliveryBody[]> {
  return eventually(`${count} recorded attempts of ${webhookId}`, async () => {
    const history = await api.history(webhookId);
    return history.length >= count ? history : undefined;
  }, timeoutMs);
}

const webhookJobs = (h: MailHarness, webhookId: string) => h.services.queue.inspect(asWork(h.services.database.db), { queue: 'webhook', groupKey: webhookId });

describe(`webhook delivery (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let worker: ReturnType<typeof startWorker>;
  let receiver: WebhookReceiver;
  const receivers: WebhookReceiver[] = [];
  const logged = capturingLogger();

  async function tenantApi(name: string): Promise<{ tenant: Tenant; api: Api }> {
    const tenant = await createTenant(h, name);
    return { tenant, api: webhookApi(h, (await memberSession(h, tenant.workspaceId, 'member')).token) };
  }

  async function newReceiver(options: Parameters<typeof startReceiver>[0] = {}): Promise<WebhookReceiver> {
    const r = await startReceiver(options);
    receivers.push(r);
    return r;
  }

  beforeAll(async () => {
    h = await startMailHarness(env);
    // Signatures carry this clock's time; Standard Webhooks receivers refuse one more than 5 minutes off.
    h.clock.set(Date.now());
    worker = startWorker(h, 50, logged.logger);
    receiver = await newReceiver();
  });
  afterAll(async () => {
    await worker?.close();
    for (const r of receivers) await r.close();
    await h.services.webhooks.close();
    await h.close();
  });

  it('POSTs the stored event bytes, signed per Standard Webhooks, with webhook-id = event_id', async () => {
    const { api } = await tenantApi('Signed');
    const hook = await api.add({ url: `${receiver.url}/signed?x=1`, secret: SECRET_A });
    const { event_id } = (await api.test(hook.webhook_id, { event_type: 'message.received' })).json<{ event_id: string }>();
    const [request] = await receiver.waitFor(1, 5000, (r) => r.path === '/signed?x=1');
    const stored = await h.services.database.db.selectFrom('events').select('payload').where('id', '=', event_id).executeTakeFirstOrThrow();

    expect(request!.method).toBe('POST');
    expect(request!.body).toBe(stored.payload); // the very bytes stored once
    expect(headerOf(request!, 'content-type')).toBe('application/json');
    expect(headerOf(request!, 'webhook-id')).toBe(event_id);
    expect(headerOf(request!, 'webhook-timestamp')).toBe(String(Math.floor(h.clock.now() / 1000)));
    expect(headerOf(request!, 'webhook-signature')).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    const verified = new Webhook(SECRET_A).verify(request!.body, request!.headers as Record<string, string>);
    expect(verified).toEqual(JSON.parse(stored.payload));
    expect(() => new Webhook(SECRET_B).verify(request!.body, request!.headers as Record<string, string>)).toThrow();
    // A changed byte breaks it.
    expect(() => new Webhook(SECRET_A).verify(request!.body.replace('"test":true', '"test":false'), request!.headers as Record<string, string>)).toThrow();

    const [attempt] = await settle(h, api, hook.webhook_id, 1);
    expect(attempt).toMatchObject({ event_id, event_type: 'message.received', attempt: 1, status_code: 204, error: null, success: true, delivered_at: new Date(h.clock.now()).toISOString() });
    expect(attempt!.delivery_id).toMatch(/^dlv_/);
    expect(attempt!.duration_ms).toBeGreaterThanOrEqual(0);
    expect(await webhookJobs(h, hook.webhook_id)).toEqual([]);
  });

  it('fans every emitted event out in the producer’s transaction: one job per active endpoint whose filter takes it', async () => {
    const { tenant, api } = await tenantApi('Fanout');
    const own = await newReceiver();
    const everything = await api.add({ url: `${own.url}/all` });
    const received = await api.add({ url: `${own.url}/received`, event_types: ['message.received'] });
    const sentOnly = await api.add({ url: `${own.url}/sent`, event_types: ['message.sent', 'message.failed'] });
    const domains = await api.add({ url: `${own.url}/domains`, event_types: ['domain.verified'] });
    const inactive = await api.add({ url: `${own.url}/inactive`, active: false });
    const { api: otherApi } = await tenantApi('Bystander');
    const foreign = await otherApi.add({ url: `${own.url}/foreign` });
    const db = h.services.database.db;

    // Inside the producer's transaction the jobs are already there; a rollback takes them (and the event) away.
    const rolledBack = new Error('roll back');
    let seenInside: string[] = [];
    let eventId = '';
    await expect(
      db.transaction().execute(async (trx) => {
        const event = await h.services.events.emit(asWork(trx), { workspaceId: tenant.workspaceId, type: 'message.received', data: { n: 1 } });
        eventId = event.id;
        const jobs = await h.services.queue.inspect<{ event_id: string }>(asWork(trx), { queue: 'webhook' });
        seenInside = jobs.filter((j) => j.payload.event_id === event.id).map((j) => j.groupKey ?? '');
        throw rolledBack;
      }),
    ).rejects.toBe(rolledBack);
    expect(seenInside.sort()).toEqual([everything.webhook_id, received.webhook_id].sort());
    expect(await db.selectFrom('events').select('id').where('id', '=', eventId).execute()).toEqual([]);
    await sleep(200);
    expect(own.received).toEqual([]);

    // Real producers: inbound SMTP (message.received), POST /send (message.sent, then message.failed: no route).
    await h.app.inject({ method: 'POST', url: '/mailboxes?address=desk@mailroom.localhost', headers: bearer(tenant.apiKey) });
    await h.send({ from: 'alice@sender.test', to: 'desk@mailroom.localhost', subject: 'Hello hooks', text: 'hi' });
    const sent = await h.app.inject({ method: 'POST', url: '/send', headers: bearer(tenant.apiKey), payload: { from_mailbox: 'desk@mailroom.localhost', to: 'bob@nowhere.test', subject: 'Out', body: 'x' } });
    expect(sent.statusCode).toBe(202);
    const messageId = sent.json<{ message_id: string }>().message_id;

    const types = (path: string) => own.received.filter((r) => r.path === path).map((r) => (JSON.parse(r.body) as { event_type: string }).event_type).sort();
    await eventually('every delivery', () => (types('/all').length >= 3 && types('/received').length >= 1 && types('/sent').length >= 2 ? true : undefined));
    expect(types('/all')).toEqual(['message.failed', 'message.received', 'message.sent']);
    expect(types('/received')).toEqual(['message.received']);
    expect(types('/sent')).toEqual(['message.failed', 'message.sent']);
    await sleep(300);
    expect(types('/domains')).toEqual([]);
    expect(types('/inactive')).toEqual([]);
    expect(types('/foreign')).toEqual([]);
    const inbound = own.received.find((r) => r.path === '/received')!;
    const payload = JSON.parse(inbound.body) as { workspace_id: string; data: { subject: string; mailbox: string } };
    expect(payload).toMatchObject({ workspace_id: tenant.workspaceId, data: { subject: 'Hello hooks', mailbox: 'desk@mailroom.localhost' } });
    const failed = own.received.find((r) => r.path === '/sent' && r.body.includes('"message.failed"'))!;
    expect(JSON.parse(failed.body)).toMatchObject({ data: { message_id: messageId, status: 'failed', recipient: 'bob@nowhere.test' } });
    // Each endpoint's history holds its own events only.
    expect((await api.history(domains.webhook_id))).toEqual([]);
    expect((await api.history(sentOnly.webhook_id)).map((d) => d.event_type).sort()).toEqual(['message.failed', 'message.sent']);
    expect(await otherApi.history(foreign.webhook_id)).toEqual([]);
    expect(await api.history(inactive.webhook_id)).toEqual([]);
  });

  it('never follows a redirect: a 3xx is a failed attempt', async () => {
    const { api } = await tenantApi('Redirect');
    const target = await newReceiver();
    const bouncer = await newReceiver();
    bouncer.answer = (r) => ({ status: Number(r.path.slice(1)), headers: { location: `${target.url}/landed` } });
    for (const code of [301, 302, 303, 307, 308]) {
      const hook = await api.add({ url: `${bouncer.url}/${code}` });
      await api.test(hook.webhook_id, { event_type: 'message.sent' });
      const [attempt] = await settle(h, api, hook.webhook_id, 1);
      expect(attempt).toMatchObject({ status_code: code, success: false, attempt: 1 });
      expect(attempt!.error).toContain(`HTTP ${code} redirect (not followed)`);
    }
    expect(target.received).toEqual([]);
  });

  it('a slow endpoint holds at most its own slots; other endpoints are delivered meanwhile; time-outs are failed attempts', async () => {
    const { api } = await tenantApi('Slow');
    const slow = await newReceiver();
    slow.answer = () => ({ status: 200, hang: true });
    const fast = await newReceiver();
    const slowHook = await api.add({ url: `${slow.url}/slow` });
    const fastHook = await api.add({ url: `${fast.url}/fast` });
    const queued = ENDPOINT_CONCURRENCY + 4;
    await Promise.all(Array.from({ length: queued }, () => api.test(slowHook.webhook_id, { event_type: 'message.sent' })));
    await slow.waitFor(ENDPOINT_CONCURRENCY, 3000);
    const started = Date.now();
    for (let i = 0; i < 5; i += 1) await api.test(fastHook.webhook_id, { event_type: 'message.sent' });
    await fast.waitFor(5, 3000);
    // Delivered while the slow endpoint's requests were still hanging, and well inside its time-out.
    expect(Date.now() - started).toBeLessThan(TIMEOUT_MS);
    expect(slow.received).toHaveLength(ENDPOINT_CONCURRENCY);

    // Two rounds of time-outs: the endpoint's slots, then the rest of its backlog.
    const timedOut = await settle(h, api, slowHook.webhook_id, queued, 20_000);
    for (const attempt of timedOut) {
      expect(attempt).toMatchObject({ status_code: null, success: false, attempt: 1 });
      expect(attempt.error).toBe(`timed out after ${TIMEOUT_MS} ms (127.0.0.1)`);
      expect(attempt.duration_ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
      expect(attempt.duration_ms).toBeLessThan(TIMEOUT_MS + 1000);
    }
    expect((await api.history(fastHook.webhook_id)).every((d) => d.success)).toBe(true);
  });

  it('reads at most 64 KiB of an answer and keeps a short excerpt of a failure’s body', async () => {
    const { api } = await tenantApi('Big');
    const OFFERED = 64 * 1024 * 1024;
    /** Bytes each answer got out before the client went away (or all it offered). */
    const written: number[] = [];
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const server: Server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        let sent = 0;
        res.on('close', () => written.push(sent));
        res.writeHead(req.url === '/ok' ? 200 : 500, { 'content-type': 'text/plain' });
        res.write('oops '.repeat(100));
        // An endless-looking answer, written only as fast as the client reads it.
        const pump = () => {
          while (sent < OFFERED && !res.destroyed) {
            sent += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        pump();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const failing = await api.add({ url: `${base}/fail` });
      const ok = await api.add({ url: `${base}/ok` });
      await api.test(failing.webhook_id, { event_type: 'message.sent' });
      await api.test(ok.webhook_id, { event_type: 'message.sent' });
      const [failed] = await settle(h, api, failing.webhook_id, 1);
      const [succeeded] = await settle(h, api, ok.webhook_id, 1);
      expect(failed).toMatchObject({ status_code: 500, success: false });
      expect(failed!.error).toMatch(/^HTTP 500: (oops ){10}/);
      expect(failed!.error!.length).toBeLessThanOrEqual('HTTP 500: '.length + 257);
      expect(succeeded).toMatchObject({ status_code: 200, success: true, error: null });
      // The client stopped reading early: far less than offered left the server (socket buffers aside).
      await eventually('both answers to end', () => (written.length === 2 ? true : undefined));
      for (const bytes of written) expect(bytes).toBeLessThan(OFFERED / 2);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('410 Gone sets the endpoint inactive and drops its pending retries', async () => {
    const { api } = await tenantApi('Gone');
    const r = await newReceiver();
    r.answer = () => ({ status: 500 });
    const hook = await api.add({ url: `${r.url}/gone` });
    await api.test(hook.webhook_id, { event_type: 'message.sent' });
    await settle(h, api, hook.webhook_id, 1);
    // The failed event waits for its retry (the clock does not move here).
    expect((await webhookJobs(h, hook.webhook_id)).map((j) => j.state)).toEqual(['pending']);
    r.answer = () => ({ status: 410, body: 'no such hook' });
    await api.test(hook.webhook_id, { event_type: 'message.accepted' });
    const [gone] = await settle(h, api, hook.webhook_id, 2);
    expect(gone).toMatchObject({ status_code: 410, success: false, event_type: 'message.accepted' });
    expect(gone!.error).toBe('HTTP 410: no such hook (the endpoint is now inactive)');
    expect((await api.get(hook.webhook_id)).json<{ active: boolean }>().active).toBe(false);
    expect(await webhookJobs(h, hook.webhook_id)).toEqual([]);
    expect((await api.test(hook.webhook_id, { event_type: 'message.sent' })).statusCode).toBe(409);
  });

  it('checks the address rules again at every attempt: a refused address is a failed attempt naming it', async () => {
    const { api } = await tenantApi('Turncoat');
    const r = await newReceiver();
    h.dns.set('turns.test', { A: ['127.0.0.1'] });
    const hook = await api.add({ url: `http://turns.test:${r.port}/hook` });
    await api.test(hook.webhook_id, { event_type: 'message.sent' });
    // Delivered by name: the host is known only to the test's DNS server, so the connection used the checked answer.
    await r.waitFor(1, 5000);
    expect(headerOf(r.received[0]!, 'host')).toBe(`turns.test:${r.port}`);

    h.dns.set('turns.test', { A: ['10.1.2.3'] });
    await api.test(hook.webhook_id, { event_type: 'message.sent' });
    const [refused, first] = await settle(h, api, hook.webhook_id, 2);
    expect(first).toMatchObject({ success: true, status_code: 204 });
    expect(refused).toMatchObject({ success: false, status_code: null, attempt: 1 });
    expect(refused!.error).toBe('refused by the address rules: turns.test resolves to 10.1.2.3, a private address');
    expect(r.received).toHaveLength(1);
  });

  it('pins the connection to the validated address: a DNS answer that changes after the check is not used', async () => {
    const { api } = await tenantApi('Rebind');
    const first = await newReceiver({ host: '127.0.0.1' });
    const second = await newReceiver({ host: '127.0.0.2', port: first.port });
    h.dns.set('rebind.test', { A: ['127.0.0.1'] });
    const hook = await api.add({ url: `http://rebind.test:${first.port}/pinned` });
    // From the next A question on (the attempt's own check) the answer flips right after it is given.
    let flipped = false;
    h.dns.onQuery = (name, type) => {
      if (name === 'rebind.test' && type === 1 && !flipped) {
        flipped = true;
        setImmediate(() => h.dns.set('rebind.test', { A: ['127.0.0.2'] }));
      }
    };
    try {
      await api.test(hook.webhook_id, { event_type: 'message.sent' });
      await first.waitFor(1, 5000);
      await settle(h, api, hook.webhook_id, 1);
      expect(flipped).toBe(true);
      expect(second.received).toEqual([]);
      // The next attempt checks again and connects where that check said.
      await api.test(hook.webhook_id, { event_type: 'message.sent' });
      await second.waitFor(1, 5000);
      expect(first.received).toHaveLength(1);
    } finally {
      h.dns.onQuery = null;
    }
  });

  it('an endpoint deleted during its attempt: the attempt is dropped with the endpoint’s history, nothing fails', async () => {
    const { api } = await tenantApi('Vanishing');
    const r = await newReceiver();
    r.answer = () => ({ status: 200, delayMs: 400 });
    const hook = await api.add({ url: `${r.url}/vanishing` });
    const keep = await api.add({ url: `${receiver.url}/kept` });
    await api.test(hook.webhook_id, { event_type: 'message.sent' });
    await api.test(keep.webhook_id, { event_type: 'message.sent' });
    await r.waitFor(1, 5000);
    expect((await api.remove(hook.webhook_id)).statusCode).toBe(200);
    await sleep(700);
    const db = h.services.database.db;
    expect(await db.selectFrom('webhook_deliveries').select('id').where('webhook_id', '=', hook.webhook_id).execute()).toEqual([]);
    expect(await webhookJobs(h, hook.webhook_id)).toEqual([]);
    expect((await api.history(keep.webhook_id)).map((d) => d.success)).toEqual([true]);
    expect(logged.lines.filter((l) => l.level >= 50)).toEqual([]);
  });

  it('keeps TLS bound to the host name over the pinned connection: SNI is the name, an untrusted certificate fails', async () => {
    const { api } = await tenantApi('Tls');
    const pems = await selfsigned.generate([{ name: 'commonName', value: 'secure.test' }], { notAfterDate: new Date(Date.now() + 86_400_000), keySize: 2048 });
    const context = createSecureContext({ key: pems.private, cert: pems.cert });
    // The name the client asks for in its ClientHello (SNI), before it sees (and refuses) the certificate.
    const servernames: string[] = [];
    let requests = 0;
    const server = createTlsServer(
      {
        key: pems.private,
        cert: pems.cert,
        SNICallback: (name, done) => {
          servernames.push(name);
          done(null, context);
        },
      },
      (_req, res) => {
        requests += 1;
        res.writeHead(204);
        res.end();
      },
    );
    server.on('tlsClientError', () => undefined);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      h.dns.set('secure.test', { A: ['127.0.0.1'] });
      const hook = await api.add({ url: `https://secure.test:${port}/tls` });
      await api.test(hook.webhook_id, { event_type: 'message.sent' });
      const [attempt] = await settle(h, api, hook.webhook_id, 1);
      expect(attempt).toMatchObject({ status_code: null, success: false });
      expect(attempt!.error).toMatch(/self[- ]signed certificate.*\(127\.0\.0\.1\)$/);
      expect(requests).toBe(0);
      // The ClientHello carried the host name, not the address the connection was pinned to.
      expect(servernames).toEqual(['secure.test']);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('records a refused connection as a failed attempt with the address it tried', async () => {
    const { api } = await tenantApi('Dead');
    const r = await newReceiver();
    const port = r.port;
    await r.close();
    receivers.splice(receivers.indexOf(r), 1);
    const hook = await api.add({ url: `http://127.0.0.1:${port}/dead` });
    await api.test(hook.webhook_id, { event_type: 'message.sent' });
    const [attempt] = await settle(h, api, hook.webhook_id, 1);
    expect(attempt).toMatchObject({ status_code: null, success: false });
    expect(attempt!.error).toMatch(/ECONNREFUSED.*\(127\.0\.0\.1\)$/);
  });
});

describe(`webhook retries, back-off and secrets over time (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let worker: ReturnType<typeof startWorker>;
  let r: WebhookReceiver;
  let api: Api;

  beforeAll(async () => {
    h = await startMailHarness(env);
    h.clock.set(Date.now());
    worker = startWorker(h, 20);
    r = await startReceiver();
    const tenant = await createTenant(h);
    api = webhookApi(h, (await memberSession(h, tenant.workspaceId, 'member')).token);
  });
  afterAll(async () => {
    await worker?.close();
    await r?.close();
    await h.services.webhooks.close();
    await h.close();
  });

  /** The job of one endpoint and event, read while it waits. */
  async function jobOf(webhookId: string) {
    const [job] = await webhookJobs(h, webhookId);
    return job;
  }

  it('signs with the old and the new secret for 24 hours after a change, then with the new one only', async () => {
    const hook = await api.add({ url: `${r.url}/rotate`, secret: SECRET_A });
    await api.patch(hook.webhook_id, { secret: SECRET_B });
    const { event_id } = (await api.test(hook.webhook_id, { event_type: 'message.sent' })).json<{ event_id: string }>();
    const [during] = await r.waitFor(1, 5000, (x) => headerOf(x, 'webhook-id') === event_id);
    const signatures = headerOf(during!, 'webhook-signature').split(' ');
    expect(signatures).toHaveLength(2);
    for (const secret of [SECRET_A, SECRET_B]) expect(new Webhook(secret).verify(during!.body, during!.headers as Record<string, string>)).toMatchObject({ event_id });
    expect(signatures[0]).toBe(new Webhook(SECRET_B).sign(event_id, new Date(Number(headerOf(during!, 'webhook-timestamp')) * 1000), during!.body));

    h.clock.advance(24 * 3_600_000 + 1000);
    const later = (await api.test(hook.webhook_id, { event_type: 'message.sent' })).json<{ event_id: string }>().event_id;
    const [after] = await r.waitFor(1, 5000, (x) => headerOf(x, 'webhook-id') === later);
    const timestamp = new Date(Number(headerOf(after!, 'webhook-timestamp')) * 1000);
    // (Standard Webhooks' verify() would refuse this timestamp: the test's clock is now a day ahead.)
    expect(headerOf(after!, 'webhook-signature')).toBe(new Webhook(SECRET_B).sign(later, timestamp, after!.body));
  });

  it('retries with back-off ×5 and ±20% jitter, at most 8 attempts, one event_id throughout', async () => {
    r.answer = (req) => (req.path === '/always-500' ? { status: 500, body: 'broken' } : { status: 204 });
    const hook = await api.add({ url: `${r.url}/always-500` });
    const { event_id } = (await api.test(hook.webhook_id, { event_type: 'message.failed' })).json<{ event_id: string }>();
    for (let attempt = 1; attempt <= 8; attempt += 1) {
      const history = await settle(h, api, hook.webhook_id, attempt);
      expect(history[0]).toMatchObject({ attempt, status_code: 500, success: false, error: 'HTTP 500: broken' });
      const job = await jobOf(hook.webhook_id);
      if (attempt < 8) {
        expect(job).toMatchObject({ state: 'pending', attempts: attempt, leaseToken: null });
        const delay = job!.runAt - h.clock.now();
        const expected = BACKOFF_BASE_MS * 5 ** (attempt - 1);
        expect(delay, `delay before attempt ${attempt + 1}`).toBeGreaterThanOrEqual(Math.floor(expected * 0.8));
        expect(delay).toBeLessThanOrEqual(Math.ceil(expected * 1.2));
        // Not a moment early: just before the retry is due nothing happens.
        h.clock.set(job!.runAt - 1);
        await sleep(60);
        expect(await api.history(hook.webhook_id)).toHaveLength(attempt);
        h.clock.set(job!.runAt);
      } else {
        expect(job).toMatchObject({ state: 'dead' });
        expect(job!.lastError).toBe('gave up after 8 attempts; last: HTTP 500: broken');
      }
    }
    h.clock.advance(7 * 24 * 3_600_000);
    await sleep(200);
    const all = r.received.filter((x) => x.path === '/always-500');
    expect(all).toHaveLength(8);
    expect(new Set(all.map((x) => headerOf(x, 'webhook-id')))).toEqual(new Set([event_id]));
    expect(new Set(all.map(eventIdOf))).toEqual(new Set([event_id]));
    expect((await api.history(hook.webhook_id)).map((d) => d.attempt)).toEqual([8, 7, 6, 5, 4, 3, 2, 1]);
  });

  it('stops retrying once the receiver answers 2xx', async () => {
    let calls = 0;
    r.answer = (req) => (req.path === '/flaky' ? { status: ++calls < 3 ? 502 : 200 } : { status: 204 });
    const hook = await api.add({ url: `${r.url}/flaky` });
    await api.test(hook.webhook_id, { event_type: 'message.sent' });
    for (let attempt = 1; attempt <= 2; attempt += 1) {
      await settle(h, api, hook.webhook_id, attempt);
      h.clock.set((await jobOf(hook.webhook_id))!.runAt);
    }
    const history = await settle(h, api, hook.webhook_id, 3);
    expect(history.map((d) => [d.attempt, d.status_code, d.success])).toEqual([[3, 200, true], [2, 502, false], [1, 502, false]]);
    expect(await webhookJobs(h, hook.webhook_id)).toEqual([]);
  });

  it('honours Retry-After on 429 and 503, up to an hour, and not on other codes', async () => {
    const cases: Array<[string, number, string, number, number]> = [
      // path, status, Retry-After, least delay, most delay (ms)
      ['/ra-503', 503, '120', 120_000, 120_000],
      ['/ra-429', 429, '7200', 3_600_000, 3_600_000],
      ['/ra-date', 429, '', 1_790_000, 1_800_000],
      ['/ra-small', 503, '0', 800, 1200], // the back-off is longer than what it asks
      ['/ra-500', 500, '600', 800, 1200], // Retry-After counts only on 429 and 503
    ];
    for (const [path, status, value, least, most] of cases) {
      const retryAfter = path === '/ra-date' ? new Date(h.clock.now() + 1_800_000).toUTCString() : value;
      r.answer = (req) => (req.path === path ? { status, headers: { 'retry-after': retryAfter } } : { status: 204 });
      const hook = await api.add({ url: `${r.url}${path}` });
      await api.test(hook.webhook_id, { event_type: 'message.sent' });
      const [attempt] = await settle(h, api, hook.webhook_id, 1);
      expect(attempt!.status_code).toBe(status);
      const delay = (await jobOf(hook.webhook_id))!.runAt - h.clock.now();
      expect(delay, path).toBeGreaterThanOrEqual(least);
      expect(delay, path).toBeLessThanOrEqual(most);
    }
  });

  it('an inactive endpoint gets no further attempts, pending retries included, even once active again', async () => {
    r.answer = (req) => (req.path === '/paused' ? { status: 500 } : { status: 204 });
    const hook = await api.add({ url: `${r.url}/paused` });
    await api.test(hook.webhook_id, { event_type: 'message.sent' });
    await settle(h, api, hook.webhook_id, 1);
    const pending = (await jobOf(hook.webhook_id))!;
    await api.patch(hook.webhook_id, { active: false });
    expect(await webhookJobs(h, hook.webhook_id)).toEqual([]);
    await api.patch(hook.webhook_id, { active: true });
    h.clock.set(pending.runAt + 60_000);
    await sleep(300);
    expect(await api.history(hook.webhook_id)).toHaveLength(1);
    expect(r.received.filter((x) => x.path === '/paused')).toHaveLength(1);
  });

  it('a deleted endpoint gets nothing more and its history goes with it', async () => {
    r.answer = (req) => (req.path === '/deleted' ? { status: 503 } : { status: 204 });
    const hook = await api.add({ url: `${r.url}/deleted` });
    await api.test(hook.webhook_id, { event_type: 'message.sent' });
    await settle(h, api, hook.webhook_id, 1);
    const pending = (await jobOf(hook.webhook_id))!;
    expect((await api.remove(hook.webhook_id)).statusCode).toBe(200);
    const db = h.services.database.db;
    expect(await db.selectFrom('webhook_deliveries').select('id').where('webhook_id', '=', hook.webhook_id).execute()).toEqual([]);
    expect(await webhookJobs(h, hook.webhook_id)).toEqual([]);
    h.clock.set(pending.runAt + 60_000);
    await sleep(300);
    expect(r.received.filter((x) => x.path === '/deleted')).toHaveLength(1);
  });
});
