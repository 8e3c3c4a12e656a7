import { startBareHttp } from '../lib/baselines.js';
import type { Dialect } from '../lib/databases.js';
import { DIALECTS, forEachDialect, freshDatabase } from '../lib/dialects.js';
import { measureHttp, type HttpLoad } from '../lib/load.js';
import { FILL_BATCH, fillMailbox } from '../lib/fill.js';
import { apiRequest, assertAlive, bootstrapTenant, BENCH_DOMAIN, createMailbox, startMailroom } from '../lib/mailroom.js';
import type { ManagedProcess } from '../lib/processes.js';
import { withScope } from '../lib/scope.js';
import { countStoredMessages } from '../lib/store.js';
import { goal, pairRows, type BenchSettings, type ResultRow, type Suite, type SuiteContext, type SuiteResult } from '../lib/suite.js';

const MAILBOX = `inbox@${BENCH_DOMAIN}`;
/** Messages in the mailbox (BENCH_INBOX_MESSAGES overrides, e.g. for a quick try of the suite). */
const DEFAULT_MESSAGES = 100_000;
const PAGE = 50;
/** The longest a fill may take before the case fails. */
const FILL_TIMEOUT_S = 1200;
const SETUP_BUDGET_S = 90;

const SUBJECT = `mailroom GET /inbox (page of ${PAGE})`;
const UNCACHED = `mailroom GET /inbox, page cache off`;
/** The second case of each database: every request reads its page (what a mailbox changing between requests costs). */
const uncachedCase = (dialect: Dialect) => `${dialect}, every page read`;
const BASELINE = 'bare fastify GET /inbox';
const GOAL = `GET /inbox (page of ${PAGE}) on a mailbox of 100,000 messages ≥ 0.4× the bare route`;

function messageCount(): number {
  const raw = process.env.BENCH_INBOX_MESSAGES?.trim();
  if (!raw) return DEFAULT_MESSAGES;
  if (!/^\d+$/.test(raw) || Number(raw) < PAGE || Number(raw) > 10_000_000) throw new Error(`BENCH_INBOX_MESSAGES=${JSON.stringify(raw)}: expected a whole number ${PAGE}..10000000`);
  return Number(raw);
}

async function runCase(context: SuiteContext, dialect: Dialect, messages: number, info: Record<string, unknown>): Promise<ResultRow[]> {
  return withScope(context.log, async (scope) => {
    const database = await freshDatabase(context, scope, dialect, 'inbox');
    info[`${dialect}_database`] = database.label;
    const tenant = await bootstrapTenant(context, database.url);
    const service = await startMailroom(context, scope, database.url, ['api'], { profileName: `mailroom-api-inbox-${dialect}` });
    await createMailbox(service.url, tenant.apiKey, MAILBOX, 'Inbox bench mailbox', context.signal);

    const fill = await fillMailbox(context, database, MAILBOX, messages, FILL_TIMEOUT_S);

    const stored = await countStoredMessages(database, MAILBOX);
    if (stored !== messages) throw new Error(`the mailbox holds ${stored} messages after the fill, expected ${messages}`);
    const path = `/inbox?mailbox=${encodeURIComponent(MAILBOX)}`;
    const auth = { authorization: `Bearer ${tenant.apiKey}` };
    const sample = await apiRequest(`${service.url}${path}`, { headers: auth }, context.signal);
    if (sample.status !== 200) throw new Error(`GET ${path} answered ${sample.status}: ${sample.text}`);
    const page = JSON.parse(sample.text) as { messages?: unknown[]; total?: number };
    if (page.messages?.length !== PAGE || page.total !== messages) {
      throw new Error(`GET ${path} listed ${String(page.messages?.length)} messages of ${String(page.total)}, expected ${PAGE} of ${messages}`);
    }
    info[dialect] = { fill, body_bytes: Buffer.byteLength(sample.text) };

    const bare = await startBareHttp(context, scope, sample.text, '/inbox');
    const load = (url: string, server: ManagedProcess, headers?: Record<string, string>): HttpLoad => ({
      url,
      connections: context.settings.connections,
      warmupS: context.settings.warmupS,
      durationS: context.settings.durationS,
      serverPid: server.pid,
      serverTail: () => server.tail(),
      ...(headers ? { headers } : {}),
    });
    context.log(`  [${dialect}] ${BASELINE}: ${context.settings.warmupS} s warm-up + ${context.settings.durationS} s…`);
    const bareResult = await measureHttp(BASELINE, load(`${bare.url}${path}`, bare.process), context.signal);
    assertAlive(bare.process);
    context.log(`  [${dialect}] ${SUBJECT}: ${context.settings.warmupS} s warm-up + ${context.settings.durationS} s…`);
    const subject = await measureHttp(SUBJECT, load(`${service.url}${path}`, service.process, auth), context.signal);
    assertAlive(service.process);
    // The page cache answers a page again while its mailbox is unchanged, as here; this second process keeps
    // none, so every request reads its page as it would from a mailbox that changed since the last request.
    const uncached = await startMailroom(context, scope, database.url, ['api'], { env: { MAILROOM_PAGE_CACHE_MB: '0' }, profileName: `mailroom-api-inbox-uncached-${dialect}` });
    context.log(`  [${dialect}] ${UNCACHED}: ${context.settings.warmupS} s warm-up + ${context.settings.durationS} s…`);
    const read = await measureHttp(UNCACHED, load(`${uncached.url}${path}`, uncached.process, auth), context.signal);
    assertAlive(uncached.process);
    return [
      ...pairRows('inbox', dialect, 'req/s', { target: BASELINE, measurement: bareResult }, { target: SUBJECT, measurement: subject }),
      ...pairRows('inbox', uncachedCase(dialect), 'req/s', { target: BASELINE, measurement: bareResult }, { target: UNCACHED, measurement: read }),
    ];
  });
}

/** GET /inbox?mailbox=… (first page of 50) on a mailbox of 100,000 messages, against a bare Fastify route with the same body. */
export const inboxSuite: Suite = {
  name: 'inbox',
  description: `GET /inbox (page of ${PAGE}) req/s on a mailbox of ${DEFAULT_MESSAGES.toLocaleString('en-US')} messages vs a bare Fastify route, on SQLite and PostgreSQL`,
  budgetS: (s: Readonly<BenchSettings>) => DIALECTS.length * (SETUP_BUDGET_S + FILL_TIMEOUT_S + 120 + 3 * (s.warmupS + s.durationS + 15)),
  async run(context: SuiteContext): Promise<SuiteResult> {
    const messages = messageCount();
    const result: SuiteResult = { suite: 'inbox', rows: [], skipped: [], failed: [], info: { mailbox: MAILBOX, messages, page: PAGE, fill_batch: FILL_BATCH } };
    await forEachDialect(context, result, async (dialect) => {
      result.rows.push(...(await runCase(context, dialect, messages, result.info)));
    });
    result.goals = DIALECTS.map((dialect) => goal(result, GOAL, dialect, 0.4));
    if (messages !== DEFAULT_MESSAGES) for (const g of result.goals) g.goal += ` (measured on ${messages} messages: BENCH_INBOX_MESSAGES)`;
    return result;
  },
};
