import { startBareHttp } from '../lib/baselines.js';
import { DIALECTS, forEachDialect, freshDatabase } from '../lib/dialects.js';
import type { Dialect } from '../lib/databases.js';
import { measureHttp, type HttpLoad } from '../lib/load.js';
import { apiRequest, assertAlive, bootstrapTenant, BENCH_DOMAIN, createMailbox, startMailroom } from '../lib/mailroom.js';
import type { ManagedProcess } from '../lib/processes.js';
import { withScope } from '../lib/scope.js';
import { pairRows, type BenchSettings, type ResultRow, type Suite, type SuiteContext, type SuiteResult } from '../lib/suite.js';

/** Mailboxes in the bench workspace, i.e. items in every GET /mailboxes answer. */
export const MAILBOX_COUNT = 20;
/** Set-up per case (build, migrate, seed, start two servers), generously. */
const CASE_SETUP_BUDGET_S = 90;

const SUBJECT = 'mailroom GET /mailboxes';
const BASELINE = 'bare fastify GET /mailboxes';

async function runCase(context: SuiteContext, dialect: Dialect, info: Record<string, unknown>): Promise<ResultRow[]> {
  return withScope(context.log, async (scope) => {
    const database = await freshDatabase(context, scope, dialect, 'http');
    info[`${dialect}_database`] = database.label;

    const tenant = await bootstrapTenant(context, database.url);
    const service = await startMailroom(context, scope, database.url, ['api']);
    // The mailboxes are created through the public API, as a client would.
    for (let i = 1; i <= MAILBOX_COUNT; i++) {
      await createMailbox(service.url, tenant.apiKey, `box${String(i).padStart(2, '0')}@${BENCH_DOMAIN}`, `Bench mailbox ${i}`, context.signal);
    }

    const auth = { authorization: `Bearer ${tenant.apiKey}` };
    const sample = await apiRequest(`${service.url}/mailboxes`, { headers: auth }, context.signal);
    if (sample.status !== 200) throw new Error(`GET /mailboxes answered ${sample.status}: ${sample.text}`);
    const count = (JSON.parse(sample.text) as { mailboxes?: unknown[] }).mailboxes?.length;
    if (count !== MAILBOX_COUNT) throw new Error(`GET /mailboxes listed ${String(count)} mailboxes, expected ${MAILBOX_COUNT}`);
    info[`${dialect}_body_bytes`] = Buffer.byteLength(sample.text);

    const bare = await startBareHttp(context, scope, sample.text, '/mailboxes');
    const load = (url: string, server: ManagedProcess, headers?: Record<string, string>): HttpLoad => ({
      url,
      connections: context.settings.connections,
      warmupS: context.settings.warmupS,
      durationS: context.settings.durationS,
      serverPid: server.pid,
      serverTail: () => server.tail(),
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
    await forEachDialect(context, result, async (dialect) => {
      result.rows.push(...(await runCase(context, dialect, result.info)));
    });
    return result;
  },
};
