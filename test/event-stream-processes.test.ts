import { spawn, type ChildProcess } from 'node:child_process';
import { asWork } from '../src/db/tables.js';
import nodemailer from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createHttpApp, createServices } from '../src/main.js';
import { createLogger } from '../src/lib/logger.js';
import { BIN, ROOT } from './helpers/cli.js';
import { listen } from './helpers/cli-client.js';
import { TEST_DIALECT } from './helpers/database.js';
import { startDnsServer, type TestDnsServer } from './helpers/dns-server.js';
import { bearer, createTenant, login, session, startHarness, type Harness, type Tenant } from './helpers/harness.js';
import { TEST_SERVICE_ENV } from './helpers/service-env.js';
import { eventsOf, openStream } from './helpers/sse.js';
import { startReceiver, type WebhookReceiver } from './helpers/webhook-receiver.js';

/** `mailroom serve --role <role>` as a child process, once it logs `ready` (a pino message). */
function spawnRole(role: string, env: Record<string, string>, ready: string): Promise<{ child: ChildProcess; entry: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'serve', '--role', role], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...TEST_SERVICE_ENV, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${role} did not start: ${out}`)), 20_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      for (const line of out.split('\n')) {
        if (!line.startsWith('{')) continue;
        try {
          const entry = JSON.parse(line) as Record<string, unknown>;
          if (entry.msg === ready) {
            clearTimeout(timer);
            resolve({ child, entry });
          }
        } catch {
          // a partial line
        }
      }
    });
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('close', (code) => reject(new Error(`${role} exited with ${code}: ${out}`)));
  });
}

const stop = (child: ChildProcess): Promise<void> =>
  new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.on('close', () => resolve());
    child.kill('SIGTERM');
  });

// Processes share a database only on PostgreSQL (SQLite is the one-process mode).
describe.skipIf(TEST_DIALECT !== 'postgres')('signals between processes (LISTEN/NOTIFY)', () => {
  let h: Harness;
  let dns: TestDnsServer;
  let tenant: Tenant;
  let token: string;
  let childEnv: Record<string, string>;
  const children: ChildProcess[] = [];
  let receiver: WebhookReceiver;
  let base: string | undefined;
  const url = async (): Promise<string> => (base ??= await listen(h.app));

  beforeAll(async () => {
    dns = await startDnsServer();
    h = await startHarness({ MAILROOM_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' });
    tenant = await createTenant(h, 'Processes');
    token = await login(h, tenant.ownerEmail, tenant.password);
    receiver = await startReceiver();
    childEnv = {
      MAILROOM_DATABASE_URL: h.database.url,
      ...h.database.secretEnv,
      MAILROOM_LOG_LEVEL: 'info',
      MAILROOM_DNS_SERVERS: dns.address,
      MAILROOM_SMTP_HOSTNAME: 'mx.mailroom.test',
      MAILROOM_SMTP_HOST: '127.0.0.1',
      MAILROOM_SMTP_PORT: '0',
      MAILROOM_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
      // Only a notification can explain a delivery sooner than this.
      MAILROOM_WORKER_POLL_MS: '10000',
    };
  });
  afterAll(async () => {
    for (const child of children) await stop(child);
    await receiver?.close();
    await h?.close();
    await dns?.close();
  });

  it('an api process streams message.received stored by an smtp process', async () => {
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes?address=desk@mailroom.localhost', headers: bearer(tenant.apiKey) })).statusCode).toBe(201);
    const smtp = await spawnRole('smtp', childEnv, 'smtp listening');
    children.push(smtp.child);
    const base = await url();
    const stream = await openStream(`${base}/app/api/events/stream`, session(token));
    await stream.waitFor((m) => m.some((x) => x.comment === 'connected'));
    const transport = nodemailer.createTransport({ host: '127.0.0.1', port: Number(smtp.entry.port), secure: false, ignoreTLS: true, name: 'client.test' });
    await transport.sendMail({ from: 'alice@sender.test', to: 'desk@mailroom.localhost', subject: 'Across processes', text: 'hi' });
    const [event] = eventsOf(await stream.waitFor((m) => eventsOf(m).length >= 1, 5000));
    expect(event!.event).toBe('message.received');
    expect((JSON.parse(event!.data!) as { workspace_id: string }).workspace_id).toBe(tenant.workspaceId);
    stream.close();
  });

  it('a listener whose connection is killed reconnects and hears the other processes again', async () => {
    const base = await url();
    const other = await createServices(h.config);
    try {
      const stream = await openStream(`${base}/app/api/events/stream`, session(token));
      await stream.waitFor((m) => m.some((x) => x.comment === 'connected'));
      const killed = await sql<{ pid: number }>`select pg_terminate_backend(pid) as pid from pg_stat_activity
        where datname = current_database() and query = 'LISTEN mailroom_wakeups'`.execute(h.services.database.db);
      expect(killed.rows.length).toBeGreaterThan(0);
      // Back within the first back-off steps; then an event committed by the other "process" arrives by NOTIFY
      // (the heartbeat read is 15 s away).
      await expect
        .poll(async () => (await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where datname = current_database() and query = 'LISTEN mailroom_wakeups'`.execute(h.services.database.db)).rows[0]!.n, { timeout: 5000 })
        .toBeGreaterThanOrEqual(killed.rows.length);
      const event = await other.database.db
        .transaction()
        .execute((trx) => other.events.emit(asWork(trx), { workspaceId: tenant.workspaceId, type: 'domain.verified', data: { domain: 'after-reconnect.example' } }));
      await stream.waitFor((m) => eventsOf(m).some((x) => x.id === event.id), 3000);
      stream.close();
    } finally {
      await other.database.destroy();
    }
  });

  it('a logout in one process closes the session\'s stream held by another at once, by NOTIFY; another workspace\'s stays', async () => {
    // The other process's heartbeat is far beyond the test: only the notification can close its stream in time.
    const config = Object.freeze({ ...h.config, eventHeartbeatMs: 600_000 });
    const other = await createServices(config, { clock: h.clock });
    const otherApp = await createHttpApp(config, other, createLogger('silent'));
    try {
      const otherBase = await listen(otherApp);
      const g = await createTenant(h, 'Elsewhere');
      const mine = await login(h, tenant.ownerEmail, tenant.password);
      const stream = await openStream(`${otherBase}/app/api/events/stream`, session(mine));
      const gStream = await openStream(`${otherBase}/app/api/events/stream`, session(await login(h, g.ownerEmail, g.password)));
      await stream.waitFor((m) => m.some((x) => x.comment === 'connected'));
      await gStream.waitFor((m) => m.some((x) => x.comment === 'connected'));
      expect((await h.app.inject({ method: 'POST', url: '/app/api/logout', headers: session(mine) })).statusCode).toBe(200);
      const closed = await Promise.race([stream.ended.then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), 5000))]);
      expect(closed).toBe(true);
      const event = await h.services.database.db
        .transaction()
        .execute((trx) => h.services.events.emit(asWork(trx), { workspaceId: g.workspaceId, type: 'domain.verified', data: { domain: 'still-open.example' } }));
      await gStream.waitFor((m) => eventsOf(m).some((x) => x.id === event.id), 3000);
      gStream.close();
    } finally {
      await otherApp.close();
      await other.database.destroy();
    }
  });

  it('a worker in another process is woken by NOTIFY, not its poll', async () => {
    const worker = await spawnRole('worker', childEnv, 'worker role started');
    children.push(worker.child);
    // The worker polled once on starting; give its listener time to connect, then its next poll is 10 s away.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const created = await h.app.inject({ method: 'POST', url: '/app/api/webhooks', headers: session(token), payload: { url: `${receiver.url}/hook` } });
    expect(created.statusCode).toBe(201);
    const started = Date.now();
    await h.services.database.db.transaction().execute((trx) => h.services.events.emit(asWork(trx), { workspaceId: tenant.workspaceId, type: 'domain.verified', data: { domain: 'woken.example' } }));
    await receiver.waitFor(1, 5000);
    expect(Date.now() - started).toBeLessThan(3000);
  });
});
