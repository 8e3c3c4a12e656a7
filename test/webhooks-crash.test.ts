import { spawn, type ChildProcess } from 'node:child_process';
import { asWork } from '../src/db/tables.js';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.js';
import { createServices, type Services } from '../src/main.js';
import { ENDPOINT_CONCURRENCY } from '../src/modules/webhooks/webhook.types.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from './helpers/database.js';
import { startReceiver, type WebhookReceiver } from './helpers/webhook-receiver.js';
import { eventually } from './helpers/webhooks.js';

/**
 * Webhook delivery under a real crash: a worker process is killed with SIGKILL while it holds webhook
 * deliveries in flight (the receiver never answers them). A second worker takes the jobs over once their
 * leases expire, with the same event_id and the attempt count continuing, and every event is delivered.
 */

const FIXTURE = fileURLToPath(new URL('./fixtures/webhook-worker.ts', import.meta.url));
const LEASE_MS = 1000;
const EVENTS_BEFORE = 40;
const EVENTS_WHILE_DOWN = 6;

interface Child {
  process: ChildProcess;
  started: Promise<void>;
  exited: Promise<void>;
}

describe(`kill -9 of a webhook worker mid-delivery loses no event (${TEST_DIALECT})`, () => {
  let database: TestDatabase;
  let services: Services;
  let receiver: WebhookReceiver;
  let env: Record<string, string>;
  const children = new Set<ChildProcess>();

  function spawnWorker(): Child {
    const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const started = new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        if (d.toString().includes('"started"')) resolve();
      });
      void exited.then(() => reject(new Error(`worker exited before it started: ${stderr}`)));
    });
    return { process: child, started, exited };
  }

  beforeAll(async () => {
    database = await createTestDatabase();
    env = {
      MAILROOM_DATABASE_URL: database.url,
      ...database.secretEnv,
      MAILROOM_LOG_LEVEL: 'silent',
      MAILROOM_LEASE_MS: String(LEASE_MS),
      MAILROOM_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
    };
    // The producer: this process writes events (and, through the outbox, their delivery jobs); it runs no worker.
    services = await createServices(loadConfig(env));
    receiver = await startReceiver();
  });
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await receiver?.close();
    await services?.webhooks.close();
    await services?.database.destroy();
    await database?.drop();
  });

  it('every event is delivered once the jobs of the dead worker are taken over', { timeout: 60_000 }, async () => {
    const { workspace_id: workspaceId } = await services.tenancy.admin.createWorkspace({ name: 'Crash' });
    const tenant = { workspaceId, role: 'owner' as const, userId: null };
    const hook = await services.webhooks.service.create(tenant, { url: `${receiver.url}/crash`, secret: `whsec_${Buffer.alloc(24, 7).toString('base64')}` });
    const db = services.database.db;
    /** The endpoint's delivery history as the webhooks service shows it. */
    const history = async () => (await services.webhooks.service.deliveries(tenant, hook.webhook_id, 500)).deliveries;
    const emit = async (n: number) =>
      db.transaction().execute((trx) => services.events.emit(asWork(trx), { workspaceId, type: 'message.received', data: { n } }));

    let hanging = true;
    receiver.answer = () => (hanging ? { status: 200, hang: true } : { status: 200 });
    const ids: string[] = [];
    for (let n = 0; n < EVENTS_BEFORE; n += 1) ids.push((await emit(n)).id);

    const first = spawnWorker();
    await first.started;
    // The worker runs a bounded number of deliveries to one endpoint at once: all are now held by the receiver.
    await receiver.waitFor(ENDPOINT_CONCURRENCY, 15_000);
    const inFlight = receiver.received.map((r) => r.headers['webhook-id'] as string);
    expect(inFlight).toHaveLength(ENDPOINT_CONCURRENCY);
    // It claimed no more than it runs: exactly those jobs hold leases, on their first attempt.
    const leased = (await services.queue.inspect<{ event_id: string }>(asWork(db), { queue: 'webhook' })).filter((j) => j.leaseToken !== null);
    expect(leased.map((j) => j.payload.event_id).sort()).toEqual([...inFlight].sort());
    expect(leased.every((j) => j.attempts === 1)).toBe(true);

    first.process.kill('SIGKILL');
    await first.exited;
    hanging = false;
    // Events keep coming while no worker runs: their jobs wait in the queue.
    for (let n = EVENTS_BEFORE; n < EVENTS_BEFORE + EVENTS_WHILE_DOWN; n += 1) ids.push((await emit(n)).id);

    const second = spawnWorker();
    await second.started;
    const delivered = await eventually(
      'every event delivered',
      async () => {
        const rows = (await history()).filter((d) => d.success);
        return rows.length >= ids.length ? rows : undefined;
      },
      30_000,
      50,
    );
    second.process.kill('SIGKILL');
    await second.exited;

    // Each event exactly once successfully, under its own event_id.
    expect(delivered.map((d) => d.event_id).sort()).toEqual([...ids].sort());
    // The interrupted ones were taken over after the lease expired: their only recorded attempt is the 2nd.
    for (const row of delivered) expect(row.attempt, row.event_id).toBe(inFlight.includes(row.event_id) ? 2 : 1);
    const all = await history();
    expect(all).toHaveLength(ids.length); // the killed attempts left no row, and nothing failed
    // The receiver saw the interrupted events twice, with the same webhook-id and signed bytes each time.
    for (const id of inFlight) {
      const copies = receiver.received.filter((r) => r.headers['webhook-id'] === id);
      expect(copies).toHaveLength(2);
      expect(copies[1]!.body).toBe(copies[0]!.body);
    }
    expect(await services.queue.inspect(asWork(db), { queue: 'webhook' })).toEqual([]);
  });
});
