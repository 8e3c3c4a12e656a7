import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  assertLoopback,
  createPostgresDatabase,
  createSqliteDatabase,
  postgresBaseUrl,
  probePostgres,
  redactUrl,
  type BenchDatabase,
  type Dialect,
} from '../lib/databases.js';
import { measureHttp, type HttpLoad } from '../lib/load.js';
import { assertAlive, bootstrapTenant, BENCH_DOMAIN, ROOT, startMailroom } from '../lib/mailroom.js';
import { freeLoopbackPort, waitForHttp, type ManagedProcess } from '../lib/processes.js';
import { withScope, type Scope } from '../lib/scope.js';
import { pairRows, profileFlags, type BenchSettings, type ResultRow, type Suite, type SuiteContext, type SuiteResult } from '../lib/suite.js';

/** Mailboxes in the bench workspace, i.e. items in every GET /mailboxes answer. */
export const MAILBOX_COUNT = 20;
const DIALECTS: readonly Dialect[] = ['sqlite', 'postgres'];
const BARE_SERVER = join(ROOT, 'bench', 'servers', 'bare-http.server.ts');
const READY_TIMEOUT_MS = 30_000;
/** Set-up per case (build, migrate, seed, start two servers), generously. */
const CASE_SETUP_BUDGET_S = 90;

const SUBJECT = 'mailroom GET /mailboxes';
const BASELINE = 'bare fastify GET /mailboxes';

async function request(url: string, init: RequestInit, signal: AbortSignal): Promise<{ status: number; text: string }> {
  const res = await fetch(url, { ...init, signal: AbortSignal.any([signal, AbortSignal.timeout(10_000)]) });
  return { status: res.status, text: await res.text() };
}

/** Create the mailboxes through the public API, as a client would. */
async function seedMailboxes(url: string, apiKey: string, signal: AbortSignal): Promise<void> {
  for (let i = 1; i <= MAILBOX_COUNT; i++) {
    const address = `box${String(i).padStart(2, '0')}@${BENCH_DOMAIN}`;
    const res = await request(
      `${url}/mailboxes`,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ address, description: `Bench mailbox ${i}` }),
      },
      signal,
    );
    if (res.status !== 201) throw new Error(`POST /mailboxes ${address} answered ${res.status}: ${res.text}`);
  }
}

/** Start the bare baseline server answering `body`; stopped when `scope` closes. */
async function startBare(context: SuiteContext, scope: Scope, body: string): Promise<{ url: string; process: ManagedProcess }> {
  const bodyFile = join(context.workDir, `bare-body-${Date.now()}.json`);
  writeFileSync(bodyFile, body);
  const port = await freeLoopbackPort();
  const proc = context.processes.start('bare fastify server', {
    args: [...profileFlags(context.settings, 'bare-http'), '--import', 'tsx', BARE_SERVER],
    // cwd is the repository so `--import tsx` resolves from its node_modules.
    cwd: ROOT,
    env: { ...process.env, BENCH_BARE_PORT: String(port), BENCH_BARE_BODY_FILE: bodyFile },
  });
  scope.defer(proc.name, () => proc.stop());
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/health`, proc, READY_TIMEOUT_MS, context.signal);
  return { url, process: proc };
}

async function runCase(context: SuiteContext, dialect: Dialect, info: Record<string, unknown>): Promise<ResultRow[]> {
  return withScope(context.log, async (scope) => {
    let database: BenchDatabase;
    if (dialect === 'postgres') {
      database = await createPostgresDatabase(postgresBaseUrl(), scope);
    } else {
      database = createSqliteDatabase(context.workDir, `http-${Date.now()}`);
    }
    context.log(`  [${dialect}] database ${database.label}`);
    info[`${dialect}_database`] = database.label;

    const tenant = await bootstrapTenant(context, database.url);
    const service = await startMailroom(context, scope, database.url, ['api']);
    await seedMailboxes(service.url, tenant.apiKey, context.signal);

    const auth = { authorization: `Bearer ${tenant.apiKey}` };
    const sample = await request(`${service.url}/mailboxes`, { headers: auth }, context.signal);
    if (sample.status !== 200) throw new Error(`GET /mailboxes answered ${sample.status}: ${sample.text}`);
    const count = (JSON.parse(sample.text) as { mailboxes?: unknown[] }).mailboxes?.length;
    if (count !== MAILBOX_COUNT) throw new Error(`GET /mailboxes listed ${String(count)} mailboxes, expected ${MAILBOX_COUNT}`);
    info[`${dialect}_body_bytes`] = Buffer.byteLength(sample.text);

    const bare = await startBare(context, scope, sample.text);
    const load = (url: string, server: ManagedProcess, headers?: Record<string, string>): HttpLoad => ({
      url,
      connections: context.settings.connections,
      warmupS: context.settings.warmupS,
      durationS: context.settings.durationS,
      serverPid: server.pid,
      ...(headers ? { headers } : {}),
    });

    // Baseline and subject back to back, so the ratio compares the same minute of this machine.
    context.log(`  [${dialect}] ${BASELINE}: ${context.settings.warmupS} s warm-up + ${context.settings.durationS} s…`);
    const bareResult = await measureHttp(BASELINE, load(`${bare.url}/mailboxes`, bare.process), context.signal);
    assertAlive(bare.process);
    context.log(`  [${dialect}] ${SUBJECT}: ${context.settings.warmupS} s warm-up + ${context.settings.durationS} s…`);
    const subject = await measureHttp(SUBJECT, load(`${service.url}/mailboxes`, service.process, auth), context.signal);
    assertAlive(service.process);

    return pairRows('http', dialect, 'req/s', { target: BASELINE, measurement: bareResult }, { target: SUBJECT, measurement: subject });
  });
}

/** GET /mailboxes (API key, 20 mailboxes) on each database, against a bare Fastify route with the same body. */
export const httpSuite: Suite = {
  name: 'http',
  description: `GET /mailboxes (API key, ${MAILBOX_COUNT} mailboxes) req/s vs a bare Fastify route, on SQLite and PostgreSQL`,
  budgetS: (s: Readonly<BenchSettings>) => DIALECTS.length * (CASE_SETUP_BUDGET_S + 2 * (s.warmupS + s.durationS + 15)),
  async run(context: SuiteContext): Promise<SuiteResult> {
    const result: SuiteResult = { suite: 'http', rows: [], skipped: [], failed: [], info: { mailboxes: MAILBOX_COUNT } };
    for (const dialect of DIALECTS) {
      context.signal.throwIfAborted();
      if (dialect === 'postgres') {
        const base = postgresBaseUrl();
        try {
          assertLoopback(base, 'MAILROOM_BENCH_PG_URL');
        } catch (err) {
          const message = err instanceof Error ? err.message : String(err);
          context.log(`  [postgres] FAILED: ${message}`);
          result.failed.push({ case: dialect, error: message });
          continue;
        }
        result.info.postgres_server = redactUrl(base);
        const problem = await probePostgres(base);
        if (problem) {
          const reason = `PostgreSQL does not answer at ${redactUrl(base)} (${problem}); set MAILROOM_BENCH_PG_URL to run it`;
          context.log(`  [postgres] skipped: ${reason}`);
          result.skipped.push({ case: dialect, reason });
          continue;
        }
      }
      try {
        result.rows.push(...(await runCase(context, dialect, result.info)));
      } catch (err) {
        if (context.signal.aborted) throw err;
        const message = err instanceof Error ? err.message : String(err);
        context.log(`  [${dialect}] FAILED: ${message}`);
        result.failed.push({ case: dialect, error: message });
      }
    }
    return result;
  },
};
