import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asWork } from '../src/db/tables.js';
import { createWorker, type JobHandler } from '../src/jobs/worker.js';
import { createLogger } from '../src/lib/logger.js';
import { createMetrics } from '../src/lib/metrics.js';
import { BIN, ROOT } from './helpers/cli.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from './helpers/database.js';
import { createTenant, startHarness, type Harness } from './helpers/harness.js';
import { freePort } from './helpers/ports.js';
import { TEST_SERVICE_ENV } from './helpers/service-env.js';
import { eventually, sleep } from './helpers/webhooks.js';

// Stopping: the worker hands back what it still holds, and `mailroom serve` turns unready at once on SIGTERM and
// exits within MAILROOM_SHUTDOWN_TIMEOUT_MS whatever holds it.

const backoff = { baseMs: 10, factor: 1, capMs: 10, jitter: 0 };

describe(`a stopping worker hands back the jobs it still runs (${TEST_DIALECT})`, () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => h.close());

  it('hands a job whose handler outlasts the grace period back at once; the next worker takes it over, told and counted', async () => {
    const { queue, clock } = h.services;
    const work = asWork(h.services.database.db);
    const name = `stop-${Math.random().toString(36).slice(2, 8)}`;
    const [a, b] = [await createTenant(h, 'A'), await createTenant(h, 'B')];
    const id = await queue.enqueue(work, { queue: name, payload: {}, workspaceId: a.workspaceId });
    const other = await queue.enqueue(work, { queue: `${name}-other`, payload: {}, workspaceId: b.workspaceId });
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    // A handler that ignores its abort signal (as a delivery in the middle of an SMTP transaction does).
    const stuck: JobHandler = {
      queue: name,
      concurrency: 1,
      backoff,
      handle: () => {
        started();
        return new Promise(() => undefined);
      },
    };
    const first = createWorker([stuck], { queue, logger: createLogger('silent'), leaseMs: h.config.leaseMs, pollMs: 20 });
    first.start();
    await running;
    await first.stop(100);
    const [view] = await queue.inspect(work, { id });
    // Due now, its claim counted, no lease: not held until the lease would have run out.
    expect(view).toMatchObject({ state: 'pending', attempts: 1, leaseToken: null, runAt: clock.now() });
    // Another workspace's job was never touched.
    expect((await queue.inspect(work, { id: other }))[0]).toMatchObject({ attempts: 0, leaseToken: null });

    const metrics = createMetrics();
    const seen: boolean[] = [];
    const next: JobHandler = {
      queue: name,
      concurrency: 1,
      backoff,
      handle: async (job) => {
        seen.push(job.interrupted);
        return { type: 'done' };
      },
    };
    const second = createWorker([next], { queue, logger: createLogger('silent'), leaseMs: h.config.leaseMs, pollMs: 20, metrics });
    second.start();
    try {
      await eventually('the job taken over', () => (seen.length > 0 ? true : undefined), 10_000);
    } finally {
      await second.stop(1000);
    }
    expect(seen).toEqual([true]);
    expect((await metrics.scrape()).body).toContain(`mailroom_queue_lease_expiries_total{queue="${name}"} 1`);
  });
});

interface Child {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function serve(env: Record<string, string>): Child {
  const child = spawn(process.execPath, [BIN, 'serve'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

const lines = (text: string) => text.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);

describe(`mailroom serve on SIGTERM (${TEST_DIALECT})`, () => {
  let database: TestDatabase;
  let env: Record<string, string>;
  beforeAll(async () => {
    database = await createTestDatabase();
    env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      ...TEST_SERVICE_ENV,
      MAILROOM_DATABASE_URL: database.url,
      ...database.secretEnv,
      MAILROOM_HTTP_PORT: '0',
      MAILROOM_SMTP_PORT: '0',
      MAILROOM_SMTP_PARSER_THREADS: '0',
      MAILROOM_DKIM_THREADS: '0',
    };
  });
  afterAll(async () => database.drop());

  it('turns unready at once, closes the API listener, and exits at MAILROOM_SHUTDOWN_TIMEOUT_MS with a line saying so', async () => {
    const metricsPort = await freePort();
    const server = serve({ ...env, MAILROOM_METRICS_PORT: String(metricsPort), MAILROOM_SHUTDOWN_TIMEOUT_MS: '3000' });
    const metrics = `http://127.0.0.1:${metricsPort}`;
    try {
      const started = await eventually('"mailroom started"', () => lines(server.output()).find((l) => l.msg === 'mailroom started'), 45_000, 50);
      expect(started.metrics).toBe(metrics);
      const http = started.http as string;
      expect((await fetch(`${metrics}/health/ready`)).status).toBe(200);
      // A request whose body never finishes: closing the API waits for it, past the time-out.
      const held = connect(Number(new URL(http).port), '127.0.0.1');
      held.write('POST /app/api/login HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"email":');
      await new Promise<void>((resolve) => held.once('connect', () => resolve()));
      // Time for the server to read the headers (not a measurement: the request only has to be under way).
      await sleep(500);

      server.child.kill('SIGTERM');
      const unready = await eventually('readiness 503', async () => {
        const res = await fetch(`${metrics}/health/ready`);
        return res.status === 503 ? ((await res.json()) as { ok: boolean; checks: Record<string, string> }) : undefined;
      }, 10_000, 20);
      expect(unready.ok).toBe(false);
      expect(unready.checks.running).toBe('shutting down');
      expect((await fetch(`${metrics}/health/live`)).status).toBe(200);
      // The API listener takes no new connection.
      await eventually('the API listener closed', () => fetch(`${http}/health/live`).then(() => undefined, () => true), 10_000, 20);

      expect(await server.exited).toBe(1);
      held.destroy();
      const logged = lines(server.output());
      expect(logged.find((l) => l.msg === 'shutting down')).toMatchObject({ signal: 'SIGTERM', timeout_ms: 3000 });
      expect(logged.find((l) => l.msg === 'shutdown took too long; exiting')).toMatchObject({ timeout_ms: 3000 });
      expect(logged.map((l) => l.msg)).not.toContain('stopped');
    } finally {
      server.child.kill('SIGKILL');
    }
  }, 120_000);

  it('exits 0 when nothing holds it, its metrics port free again', async () => {
    const metricsPort = await freePort();
    const server = serve({ ...env, MAILROOM_METRICS_PORT: String(metricsPort) });
    try {
      await eventually('"mailroom started"', () => lines(server.output()).find((l) => l.msg === 'mailroom started'), 45_000, 50);
      server.child.kill('SIGTERM');
      expect(await server.exited).toBe(0);
      expect(lines(server.output()).map((l) => l.msg)).toContain('stopped');
      await expect(fetch(`http://127.0.0.1:${metricsPort}/health/live`)).rejects.toThrow();
    } finally {
      server.child.kill('SIGKILL');
    }
  }, 120_000);
});
