import { createHmac } from 'node:crypto';
import { join } from 'node:path';
import { benchRows } from '../lib/store.js';
import { Pool } from 'undici';
import { DELIVERY_CONCURRENCY, ENDPOINT_CONCURRENCY, WORKSPACE_CONCURRENCY } from '../../src/modules/webhooks/webhook.types.js';
import { processCpuMs } from '../lib/cpu.js';
import type { BenchDatabase } from '../lib/databases.js';
import { DIALECTS, forEachDialect, freshDatabase } from '../lib/dialects.js';
import type { Measurement } from '../lib/load.js';
import { apiRequest, type ApiRequestInit, assertAlive, BENCH_SECRET_KEY, bootstrapTenant, loginOwner, mailroomEnv, MAILROOM_BIN, ROOT, SERVICE_DIST, startMailroom } from '../lib/mailroom.js';
import type { ManagedProcess } from '../lib/processes.js';
import type { Scope } from '../lib/scope.js';
import { latencyStats } from '../lib/smtp-load.js';
import { withScope } from '../lib/scope.js';
import { startReceiver, type Receiver } from '../lib/webhook-receiver.js';
import { pairRows, serverFlags, type BenchSettings, type Goal, type Suite, type SuiteContext, type SuiteResult } from '../lib/suite.js';

const FILL_TOOL = join(ROOT, 'bench', 'tools', 'webhook-fill.ts');
/** Endpoint counts of the throughput cases. */
const ENDPOINT_CASES = [1, 50] as const;
/** Deliveries of the first (calibration and warm-up) run of each case; the measured run is sized from its rate. */
const CALIBRATION_DELIVERIES = 3000;
const MIN_DELIVERIES = 3000;
const MAX_DELIVERIES = 200_000;
/** The worker's bounds for one workspace (deliveries at once, and per endpoint); the baseline keeps the same. */
const OVERALL_CONCURRENCY = Math.min(DELIVERY_CONCURRENCY, WORKSPACE_CONCURRENCY);
/** Idle latency: one test event every this many ms. */
const LATENCY_INTERVAL_MS = 100;
const MIN_LATENCY_SAMPLES = 50;
const POLL_MS = 50;
const SECRET = `whsec_${Buffer.alloc(24, 42).toString('base64')}`;
const ALLOW = { MAILROOM_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' };

const BASELINE = 'undici POST → receiver (same concurrency)';
const SUBJECT = 'outbox backlog → worker → receiver';
const LATENCY_BASELINE = 'undici POST → receiver, one at a time';
const LATENCY_SUBJECT = 'POST …/test → worker → receiver';

/** Webhook deliveries as stored: attempts that failed, and jobs still in the queue (both must be 0 after a run). */
async function deliveryState(database: BenchDatabase): Promise<{ failed: number; jobs: number; delivered: number }> {
  const queries = {
    failed: "select count(*) as n from webhook_deliveries where success = 0",
    jobs: "select count(*) as n from jobs where queue = 'webhook'",
    delivered: 'select count(*) as n from webhook_deliveries where success = 1',
  };
  const n = async (q: string) => Number((await benchRows<{ n: number | string }>(database, { sqlite: q, postgres: q }))[0]?.n ?? 0);
  return { failed: await n(queries.failed), jobs: await n(queries.jobs), delivered: await n(queries.delivered) };
}

/** A run of `count` deliveries from the first arrival at the receiver to the last. */
interface Run {
  count: number;
  wallMs: number;
  /** CPU ms of the process doing the sending (Mailroom's worker; the bench process for the baseline), null off Linux. */
  cpuMs: number | null;
}

function measurement(run: Run, connections: number): Measurement {
  const rate = run.count > 1 && run.wallMs > 0 ? ((run.count - 1) * 1000) / run.wallMs : 0;
  return {
    requestsPerSec: rate,
    latencyMs: { p50: NaN, p90: NaN, p99: NaN, mean: NaN, max: NaN },
    totalRequests: run.count,
    durationS: run.wallMs / 1000,
    connections,
    errors: 0,
    timeouts: 0,
    non2xx: 0,
    serverCpuUsPerRequest: run.cpuMs === null ? null : (run.cpuMs * 1000) / run.count,
    serverCpuUtilization: run.cpuMs === null || run.wallMs <= 0 ? null : run.cpuMs / run.wallMs,
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Poll the receiver until it has `count` requests; fail on a dead child or a stall. */
async function waitForCount(receiver: Receiver, count: number, watch: ManagedProcess[], signal: AbortSignal, onFirst?: () => void): Promise<{ first: number; last: number }> {
  let seen = -1;
  let progressAt = Date.now();
  for (;;) {
    signal.throwIfAborted();
    for (const proc of watch) assertAlive(proc);
    const stats = await receiver.stats();
    if (stats.count > 0 && seen <= 0) onFirst?.();
    if (stats.count >= count) return { first: stats.first, last: stats.last };
    if (stats.count !== seen) {
      seen = stats.count;
      progressAt = Date.now();
    } else if (Date.now() - progressAt > 60_000) {
      throw new Error(`deliveries stalled at ${stats.count} of ${count}`);
    }
    await sleep(POLL_MS);
  }
}

/** The same requests as the service sends (JSON event, Standard Webhooks headers), straight from the bench process. */
async function bareRun(receiver: Receiver, endpoints: number, deliveries: number, signal: AbortSignal): Promise<Run> {
  await receiver.reset();
  const urls = receiver.urls.slice(1, 1 + endpoints);
  const pools = urls.map((url) => new Pool(url, { connections: ENDPOINT_CONCURRENCY }));
  const perEndpoint = Math.min(ENDPOINT_CONCURRENCY, Math.floor(OVERALL_CONCURRENCY / endpoints) || 1);
  let taken = 0;
  const cpuBefore = process.cpuUsage();
  const send = async (pool: Pool) => {
    while (taken < deliveries && !signal.aborted) {
      const n = taken++;
      const id = `evt_bare${String(n).padStart(22, '0')}`;
      const body = JSON.stringify({ event_id: id, event_type: 'message.received', created_at: new Date().toISOString(), workspace_id: 'ws_bench', data: { n, subject: `Order ${n}`, snippet: 'x'.repeat(700) } });
      const timestamp = Math.floor(Date.now() / 1000);
      const signature = createHmac('sha256', Buffer.from(SECRET.slice(6), 'base64')).update(`${id}.${timestamp}.${body}`).digest('base64');
      const res = await pool.request({ path: '/bare', method: 'POST', body, headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': `v1,${signature}` } });
      await res.body.dump();
      if (res.statusCode !== 204) throw new Error(`${BASELINE}: receiver answered ${res.statusCode}`);
    }
  };
  try {
    await Promise.all(pools.flatMap((pool) => Array.from({ length: perEndpoint }, () => send(pool))));
  } finally {
    await Promise.all(pools.map((p) => p.close()));
  }
  const cpu = process.cpuUsage(cpuBefore);
  const stats = await receiver.stats();
  if (stats.count !== deliveries) throw new Error(`${BASELINE}: receiver counted ${stats.count} of ${deliveries}`);
  return { count: deliveries, wallMs: stats.last - stats.first, cpuMs: (cpu.user + cpu.system) / 1000 };
}

interface CaseSetup {
  context: SuiteContext;
  scope: Scope;
  database: BenchDatabase;
  workspaceId: string;
  receiver: Receiver;
}

/**
 * The service: `events` events written to the outbox (with their delivery jobs, by the build's own
 * fan-out) while no worker runs, then `mailroom serve --role worker` drains them. Timed from the first
 * delivery's arrival at the receiver to the last; every one must succeed and the queue end empty.
 */
async function serviceRun(setup: CaseSetup, endpoints: number, events: number): Promise<Run> {
  const { context, database, workspaceId, receiver } = setup;
  const output = await context.processes.run('webhook-fill', {
    args: ['--import', 'tsx', FILL_TOOL],
    cwd: ROOT,
    env: { ...process.env, BENCH_FILL_DATABASE_URL: database.url, BENCH_FILL_SECRET_KEY: BENCH_SECRET_KEY, BENCH_FILL_DIST: SERVICE_DIST, BENCH_FILL_WORKSPACE: workspaceId, BENCH_FILL_COUNT: String(events) },
    timeoutMs: 600_000,
  });
  if (!/^filled \d+/m.test(output)) throw new Error(`webhook-fill printed no result:\n${output}`);
  const before = await deliveryState(database);
  await receiver.reset();
  const worker = context.processes.start('mailroom serve --role worker', {
    args: [...serverFlags(context.settings, `mailroom-webhook-worker-${database.dialect}-${endpoints}`), MAILROOM_BIN, 'serve', '--role', 'worker'],
    cwd: context.workDir,
    env: mailroomEnv({ MAILROOM_DATABASE_URL: database.url, ...ALLOW }),
  });
  const expected = events * endpoints;
  let cpuAtFirst: number | null = null;
  try {
    const { first, last } = await waitForCount(receiver, expected, [worker], context.signal, () => {
      cpuAtFirst = processCpuMs(worker.pid);
    });
    const cpuAtLast = processCpuMs(worker.pid);
    // Let the last attempts' records commit before the checks.
    for (let i = 0; i < 100; i++) {
      const state = await deliveryState(database);
      if (state.jobs === 0 && state.delivered - before.delivered >= expected) break;
      await sleep(POLL_MS);
    }
    const after = await deliveryState(database);
    if (after.failed > 0) throw new Error(`${SUBJECT}: ${after.failed} failed attempts`);
    if (after.jobs > 0) throw new Error(`${SUBJECT}: ${after.jobs} webhook jobs left in the queue`);
    if (after.delivered - before.delivered !== expected) throw new Error(`${SUBJECT}: ${after.delivered - before.delivered} deliveries recorded, ${expected} expected`);
    const stats = await receiver.stats();
    if (stats.count !== expected) throw new Error(`${SUBJECT}: the receiver counted ${stats.count} requests for ${expected} deliveries (duplicates?)`);
    return { count: expected, wallMs: last - first, cpuMs: cpuAtFirst !== null && cpuAtLast !== null ? cpuAtLast - cpuAtFirst : null };
  } finally {
    await worker.stop();
  }
}

const round = (n: number) => Math.round(n * 10) / 10;

async function runDialect(context: SuiteContext, dialect: 'sqlite' | 'postgres', result: SuiteResult): Promise<void> {
  await withScope(context.log, async (scope) => {
    const database = await freshDatabase(context, scope, dialect, 'webhooks');
    const tenant = await bootstrapTenant(context, database.url);
    const receiver = await startReceiver(context, scope, 1 + Math.max(...ENDPOINT_CASES));
    const api = await startMailroom(context, scope, database.url, ['api'], { env: ALLOW, profileName: `mailroom-webhook-api-${dialect}` });
    const token = await loginOwner(api.url, context.signal);
    let call = sessionCall(api.url, token, context.signal);
    // Endpoint 0 for the latency case; 1…50 for the throughput cases, one receiver port each.
    const hooks: string[] = [];
    for (const url of receiver.urls) hooks.push((await call('POST', '/webhooks', { url: `${url}/hook`, secret: SECRET, active: false })).webhook_id as string);
    const setup: CaseSetup = { context, scope, database, workspaceId: tenant.workspaceId, receiver };
    const info: Record<string, unknown> = {};
    result.info[dialect] = info;

    for (const endpoints of ENDPOINT_CASES) {
      context.signal.throwIfAborted();
      for (const [i, id] of hooks.entries()) await call('PATCH', `/webhooks/${id}`, { active: i >= 1 && i <= endpoints });
      const caseName = `${dialect}, ${endpoints} endpoint${endpoints === 1 ? '' : 's'}`;
      const eventsFor = (deliveries: number) => Math.max(1, Math.round(deliveries / endpoints));
      // Calibration (also the warm-up: JIT, connection pools, the database's caches), then the measured run.
      const calibration = await serviceRun(setup, endpoints, eventsFor(CALIBRATION_DELIVERIES));
      const calibratedRate = measurement(calibration, OVERALL_CONCURRENCY).requestsPerSec;
      const target = Math.min(MAX_DELIVERIES, Math.max(MIN_DELIVERIES, Math.round(calibratedRate * context.settings.durationS)));
      context.log(`  [${caseName}] calibrated at ${calibratedRate.toFixed(0)} deliveries/s: measuring ${eventsFor(target) * endpoints}`);
      const measured = await serviceRun(setup, endpoints, eventsFor(target));
      await bareRun(receiver, endpoints, Math.min(CALIBRATION_DELIVERIES, measured.count), context.signal); // warm-up
      const bare = await bareRun(receiver, endpoints, measured.count, context.signal);
      const connections = Math.min(OVERALL_CONCURRENCY, ENDPOINT_CONCURRENCY * endpoints);
      result.rows.push(...pairRows('webhooks', caseName, 'deliveries/s', { target: BASELINE, measurement: measurement(bare, connections) }, { target: SUBJECT, measurement: measurement(measured, connections) }));
      info[`${endpoints}_endpoints`] = {
        deliveries: measured.count,
        events: measured.count / endpoints,
        wall_s: round(measured.wallMs / 1000),
        calibration: { deliveries: calibration.count, rate: Math.round(calibratedRate) },
        worker_cpu_us_per_delivery: measured.cpuMs === null ? null : Math.round((measured.cpuMs * 1000) / measured.count),
        bare_cpu_us_per_delivery: bare.cpuMs === null ? null : Math.round((bare.cpuMs * 1000) / bare.count),
      };
    }

    // Idle latency: the api and the worker in one process (as `mailroom serve` runs by default), one test event at a time.
    await api.process.stop();
    const service = await startMailroom(context, scope, database.url, ['api', 'worker'], { env: ALLOW, profileName: `mailroom-webhook-latency-${dialect}` });
    call = sessionCall(service.url, token, context.signal);
    for (const [i, id] of hooks.entries()) await call('PATCH', `/webhooks/${id}`, { active: i === 0 });
    const samples = Math.max(MIN_LATENCY_SAMPLES, Math.round((context.settings.durationS * 1000) / LATENCY_INTERVAL_MS));
    await receiver.reset();
    const started = performance.now();
    for (let i = 0; i < samples; i++) {
      await call('POST', `/webhooks/${hooks[0]}/test`, { event_type: 'message.received' });
      await sleep(LATENCY_INTERVAL_MS);
    }
    await waitForCount(receiver, samples, [service.process], context.signal);
    const wallMs = performance.now() - started;
    const subject = (await receiver.stats(true)).latencies ?? [];
    // The baseline: the same rhythm, the bench POSTing straight to the receiver (event time = send time).
    await receiver.reset();
    const pool = new Pool(receiver.urls[0]!, { connections: 1 });
    try {
      for (let i = 0; i < samples; i++) {
        const body = JSON.stringify({ event_id: `evt_lat${i}`, event_type: 'message.received', created_at: new Date().toISOString(), workspace_id: 'ws_bench', data: { test: true } });
        await (await pool.request({ path: '/bare', method: 'POST', body, headers: { 'content-type': 'application/json' } })).body.dump();
        await sleep(LATENCY_INTERVAL_MS);
      }
    } finally {
      await pool.close();
    }
    const bare = (await receiver.stats(true)).latencies ?? [];
    const latencyMeasurement = (latencies: number[]): Measurement => ({
      ...measurement({ count: latencies.length, wallMs, cpuMs: null }, 1),
      requestsPerSec: latencies.length / (wallMs / 1000),
      latencyMs: latencyStats(latencies),
    });
    result.rows.push(...pairRows('webhooks', `${dialect}, idle latency`, 'events/s', { target: LATENCY_BASELINE, measurement: latencyMeasurement(bare) }, { target: LATENCY_SUBJECT, measurement: latencyMeasurement(subject) }));
    info.idle_latency_ms = { samples, interval_ms: LATENCY_INTERVAL_MS, ...latencyStats(subject) };
  });
}

/** A session-surface call (JSON in, JSON out) that fails loudly on anything but 2xx. */
function sessionCall(baseUrl: string, token: string, signal: AbortSignal) {
  return async (method: NonNullable<ApiRequestInit['method']>, path: string, body: unknown): Promise<Record<string, unknown>> => {
    const res = await apiRequest(`${baseUrl}/app/api${path}`, { method, headers: { 'x-service-session': token, 'content-type': 'application/json' }, body: JSON.stringify(body) }, signal);
    if (res.status >= 300) throw new Error(`${method} /app/api${path} answered ${res.status}: ${res.text.slice(0, 300)}`);
    return JSON.parse(res.text) as Record<string, unknown>;
  };
}

/** An absolute goal (rate or latency) in the report's goal list. */
function absoluteGoal(result: SuiteResult, text: string, caseName: string, threshold: string, measure: (rate: number, p99: number) => { met: boolean; measured: string }): Goal {
  const row = result.rows.find((r) => r.case === caseName && r.role === 'subject');
  if (!row) return { goal: text, case: caseName, minRatio: 1, ratio: null, met: null, threshold };
  const { met, measured } = measure(row.rate, row.latencyMs?.p99 ?? NaN);
  return { goal: text, case: caseName, minRatio: 1, ratio: row.ratio, met, threshold, measured };
}

/** Webhook deliveries per second (1 and 50 endpoints) and idle event-to-first-attempt latency, on each database. */
export const webhooksSuite: Suite = {
  name: 'webhooks',
  description: 'webhook deliveries/s to a local receiver (1 and 50 endpoints) vs bare undici POSTs, and idle event→first-attempt latency, on SQLite and PostgreSQL',
  // Per database: set-up, per case two fills and drains (worker start-up included) and two bare runs, then the latency samples.
  budgetS: (s: Readonly<BenchSettings>) => DIALECTS.length * (120 + ENDPOINT_CASES.length * (180 + 6 * s.durationS) + 60 + 3 * s.durationS),
  async run(context: SuiteContext): Promise<SuiteResult> {
    const result: SuiteResult = {
      suite: 'webhooks',
      rows: [],
      skipped: [],
      failed: [],
      info: {
        baseline: `undici Pool per endpoint in the bench process, ${ENDPOINT_CONCURRENCY} requests in flight per endpoint and at most ${OVERALL_CONCURRENCY} in all (the worker's bounds), signed JSON of about the same size`,
        subject: 'events written to the outbox with their delivery jobs (bench/tools/webhook-fill.ts, the build\'s own fan-out) while no worker runs, then `mailroom serve --role worker` drains them: address rules, signing, pinned POST, the attempt recorded; timed first to last arrival',
        latency: `mailroom serve --role api,worker: POST /app/api/webhooks/{id}/test every ${LATENCY_INTERVAL_MS} ms; latency = arrival at the receiver − the event's created_at`,
        receiver: 'bench/servers/webhook-receiver.server.ts: node:http, one port per endpoint, 204 at once',
      },
    };
    await forEachDialect(context, result, (dialect) => runDialect(context, dialect, result));
    const goals: Goal[] = [];
    for (const endpoints of ENDPOINT_CASES) {
      goals.push(
        absoluteGoal(result, 'webhook deliveries to a local receiver on PostgreSQL', `postgres, ${endpoints} endpoint${endpoints === 1 ? '' : 's'}`, '≥ 1,000 deliveries/s', (rate) => ({ met: rate >= 1000, measured: `${Math.round(rate)} deliveries/s` })),
      );
    }
    for (const dialect of DIALECTS) {
      goals.push(absoluteGoal(result, 'event → first attempt when idle', `${dialect}, idle latency`, 'p99 < 250 ms', (_rate, p99) => ({ met: p99 < 250, measured: `p99 ${Math.round(p99)} ms` })));
    }
    result.goals = goals;
    return result;
  },
};
