import { processCpuMs } from '../lib/cpu.js';
import type { Dialect } from '../lib/databases.js';
import { DIALECTS, forEachDialect, freshDatabase } from '../lib/dialects.js';
import type { Measurement } from '../lib/load.js';
import { prose, seededRandom } from '../lib/mail-content.js';
import { apiRequest, assertAlive, BENCH_DOMAIN, bootstrapTenant, createMailbox, startMailroom, type RunningMailroom } from '../lib/mailroom.js';
import { latencyStats } from '../lib/smtp-load.js';
import { withScope } from '../lib/scope.js';
import { goal, pairRows, type BenchSettings, type ResultRow, type Suite, type SuiteContext, type SuiteResult } from '../lib/suite.js';

const FROM = `newsletter@${BENCH_DOMAIN}`;
/** Messages of a round: one full batch, or as many single sends. */
const MESSAGES = 100;
/** Bytes of each message's text body. */
const BODY_BYTES = 10 * 1024;
/**
 * POST /send requests in flight for the single sends: a client that sends 100 messages at once through a small
 * pool (p-limit, a queue worker's concurrency, nodemailer's pool default is 5; the outbound suite uses 8).
 */
const SINGLE_CONCURRENCY = 8;
const SEED = 20261127;
/** Start-up, mailbox and the rounds' own overrun, generously. */
const CASE_SETUP_BUDGET_S = 90;
/** The goal per database: a PostgreSQL batch's statements run one after another on one connection, single sends on many. */
const GOALS: Record<Dialect, { text: string; ratio: number }> = {
  sqlite: { text: 'batch send of 100 × 10 KB messages ≥ 3× the rate of 100 single sends', ratio: 3 },
  postgres: { text: 'batch send of 100 × 10 KB messages ≥ 2× the rate of 100 single sends', ratio: 2 },
};

/** The 100 messages of a round (the same text each round; each its own recipient and subject). */
function roundMessages(): Array<Record<string, string>> {
  const random = seededRandom(SEED);
  return Array.from({ length: MESSAGES }, (_, i) => ({
    from_mailbox: FROM,
    to: `user${i + 1}@example.net`,
    subject: `Your weekly summary ${i + 1}`,
    body: prose(random, BODY_BYTES),
  }));
}

/** One target's measured rounds: wall time, answer times and server CPU, summed over its rounds. */
interface Tally {
  messages: number;
  requests: number;
  wallMs: number;
  cpuMs: number | null;
  latenciesMs: number[];
}

const emptyTally = (): Tally => ({ messages: 0, requests: 0, wallMs: 0, cpuMs: 0, latenciesMs: [] });

async function post(service: RunningMailroom, path: string, apiKey: string, body: unknown, signal: AbortSignal): Promise<{ text: string; ms: number }> {
  const started = performance.now();
  const res = await apiRequest(`${service.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }, signal);
  const ms = performance.now() - started;
  if (res.status !== (path === '/send' ? 202 : 200)) throw new Error(`POST ${path} answered ${res.status}: ${res.text.slice(0, 300)}`);
  return { text: res.text, ms };
}

/** The 100 messages as one POST /send/batch; every one must be queued. */
async function batchRound(service: RunningMailroom, apiKey: string, messages: readonly unknown[], signal: AbortSignal): Promise<number[]> {
  const { text, ms } = await post(service, '/send/batch', apiKey, { messages }, signal);
  const answer = JSON.parse(text) as { queued: number; failed: number };
  if (answer.queued !== messages.length) throw new Error(`the batch queued ${answer.queued} of ${messages.length}: ${text.slice(0, 300)}`);
  return [ms];
}

/** The 100 messages as single POST /send requests, `concurrency` in flight. */
async function singleRound(service: RunningMailroom, apiKey: string, messages: readonly unknown[], concurrency: number, signal: AbortSignal): Promise<number[]> {
  const latencies: number[] = [];
  let next = 0;
  const sender = async () => {
    while (next < messages.length) {
      const message = messages[next++];
      latencies.push((await post(service, '/send', apiKey, message, signal)).ms);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, sender));
  return latencies;
}

/** Run `round` once, adding its wall time, answer times and the server's CPU to `tally` when `measured`. */
async function timed(tally: Tally, measured: boolean, pid: number | undefined, round: () => Promise<number[]>): Promise<void> {
  const cpuBefore = processCpuMs(pid);
  const started = performance.now();
  const latencies = await round();
  const wallMs = performance.now() - started;
  const cpuAfter = processCpuMs(pid);
  if (!measured) return;
  tally.messages += MESSAGES;
  tally.requests += latencies.length;
  tally.wallMs += wallMs;
  tally.latenciesMs.push(...latencies);
  tally.cpuMs = tally.cpuMs !== null && cpuBefore !== null && cpuAfter !== null ? tally.cpuMs + cpuAfter - cpuBefore : null;
}

/** A tally in the report's units: msg/s, the latency of each request (a batch, or one send), server CPU per message. */
function measurementOf(tally: Tally, connections: number): Measurement {
  return {
    requestsPerSec: tally.messages / (tally.wallMs / 1000),
    latencyMs: latencyStats(tally.latenciesMs),
    totalRequests: tally.messages,
    durationS: tally.wallMs / 1000,
    connections,
    errors: 0,
    timeouts: 0,
    non2xx: 0,
    serverCpuUsPerRequest: tally.cpuMs !== null ? (tally.cpuMs * 1000) / tally.messages : null,
    serverCpuUtilization: tally.cpuMs !== null ? tally.cpuMs / tally.wallMs : null,
  };
}

/**
 * Rounds of the three targets in turn, on one server: one batch of 100, 100 single sends 8 at a time, and 100 one
 * after another. Interleaved so that the growing tables and the machine's other load weigh on each alike; the rounds
 * of the first BENCH_WARMUP_S are not counted, then rounds run until each target has had BENCH_DURATION_S.
 */
async function runCase(context: SuiteContext, dialect: Dialect, info: Record<string, unknown>): Promise<ResultRow[]> {
  return withScope(context.log, async (scope) => {
    const database = await freshDatabase(context, scope, dialect, 'batch');
    info[`${dialect}_database`] = database.label;
    const tenant = await bootstrapTenant(context, database.url);
    // The api role alone: the cost of accepting sends; delivering them is the outbound suite's.
    const service = await startMailroom(context, scope, database.url, ['api'], { profileName: `mailroom-batch-${dialect}` });
    await createMailbox(service.url, tenant.apiKey, FROM, 'batch bench', context.signal);
    const messages = roundMessages();
    info.message_body_bytes = BODY_BYTES;
    info.batch_request_bytes = JSON.stringify({ messages }).length;
    info.single_concurrency = SINGLE_CONCURRENCY;

    const { signal, settings } = context;
    const pid = service.process.pid;
    const tallies = { batch: emptyTally(), pooled: emptyTally(), sequential: emptyTally() };
    const warmUntil = performance.now() + settings.warmupS * 1000;
    context.log(`  [${dialect}] rounds of 1 × POST /send/batch, ${MESSAGES} × POST /send (${SINGLE_CONCURRENCY} in flight) and ${MESSAGES} × POST /send (one at a time): ${settings.warmupS} s warm-up + ${settings.durationS} s each…`);
    let rounds = 0;
    while (Math.min(tallies.batch.wallMs, tallies.pooled.wallMs, tallies.sequential.wallMs) < settings.durationS * 1000) {
      signal.throwIfAborted();
      const measured = performance.now() >= warmUntil && rounds >= 1;
      await timed(tallies.batch, measured, pid, () => batchRound(service, tenant.apiKey, messages, signal));
      await timed(tallies.pooled, measured, pid, () => singleRound(service, tenant.apiKey, messages, SINGLE_CONCURRENCY, signal));
      await timed(tallies.sequential, measured, pid, () => singleRound(service, tenant.apiKey, messages, 1, signal));
      assertAlive(service.process);
      rounds++;
    }
    info[`${dialect}_rounds`] = rounds;
    const batch = { target: 'POST /send/batch (100 messages a request)', measurement: measurementOf(tallies.batch, 1) };
    return [
      ...pairRows('batch', `${dialect} vs ${SINGLE_CONCURRENCY} in flight`, 'msg/s', { target: `POST /send × 100, ${SINGLE_CONCURRENCY} in flight`, measurement: measurementOf(tallies.pooled, SINGLE_CONCURRENCY) }, batch),
      ...pairRows('batch', `${dialect} vs one at a time`, 'msg/s', { target: 'POST /send × 100, one at a time', measurement: measurementOf(tallies.sequential, 1) }, batch),
    ];
  });
}

/** POST /send/batch of 100 × 10 KB messages against the same 100 as single POST /send requests, on one server. */
export const batchSuite: Suite = {
  name: 'batch',
  description: 'POST /send/batch (100 × 10 KB messages) msg/s vs the same messages as 100 POST /send (8 in flight, and one at a time), on SQLite and PostgreSQL',
  budgetS: (s: Readonly<BenchSettings>) => DIALECTS.length * (CASE_SETUP_BUDGET_S + s.warmupS + 3 * s.durationS * 2),
  async run(context: SuiteContext): Promise<SuiteResult> {
    const result: SuiteResult = { suite: 'batch', rows: [], skipped: [], failed: [], info: {} };
    await forEachDialect(context, result, async (dialect) => {
      result.rows.push(...(await runCase(context, dialect, result.info)));
    });
    result.goals = DIALECTS.map((dialect) => goal(result, GOALS[dialect].text, `${dialect} vs ${SINGLE_CONCURRENCY} in flight`, GOALS[dialect].ratio));
    return result;
  },
};
