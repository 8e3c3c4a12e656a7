import type autocannon from 'autocannon';
import { startBareHttp, startBenchDns } from '../lib/baselines.js';
import type { Dialect } from '../lib/databases.js';
import { DIALECTS, forEachDialect, freshDatabase } from '../lib/dialects.js';
import { measureHttp, type HttpLoad } from '../lib/load.js';
import { apiRequest, assertAlive, bootstrapTenant, loginOwner, startMailroom } from '../lib/mailroom.js';
import type { ManagedProcess } from '../lib/processes.js';
import { withScope } from '../lib/scope.js';
import { pairRows, type BenchSettings, type ResultRow, type Suite, type SuiteContext, type SuiteResult } from '../lib/suite.js';

/** The sending domain the token is bound to, verified over the bench's loopback DNS. */
const DOMAIN = 'tx.bench.test';
const FROM = `codes@${DOMAIN}`;
/** Set-up per case (two starts of the service, domain verification, two baselines), generously. */
const CASE_SETUP_BUDGET_S = 120;

const BODY = JSON.stringify({ from_mailbox: FROM, to: 'user@example.net', subject: 'Your sign-in code', body: 'Your code is 482913. It expires in 10 minutes.', from_name: 'Acme' });
const BASELINE = 'bare fastify POST (202)';

async function session(url: string, signal: AbortSignal, path: string, token: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await apiRequest(
    `${url}${path}`,
    { method: 'POST', headers: { 'x-service-session': token, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) },
    signal,
  );
  if (res.status >= 300) throw new Error(`POST ${path} answered ${res.status}: ${res.text}`);
  return JSON.parse(res.text) as Record<string, unknown>;
}

async function runCase(context: SuiteContext, dialect: Dialect, info: Record<string, unknown>): Promise<ResultRow[]> {
  return withScope(context.log, async (scope) => {
    const database = await freshDatabase(context, scope, dialect, 'transactional');
    info[`${dialect}_database`] = database.label;
    await bootstrapTenant(context, database.url);

    // The verification token exists only once the domain is created, and the DNS server serves fixed
    // zones: create the domain on a first start, then serve its TXT record and verify on a second.
    const record = await withScope(context.log, async (first) => {
      const service = await startMailroom(context, first, database.url, ['api']);
      const owner = await loginOwner(service.url, context.signal);
      const created = (await session(service.url, context.signal, '/app/api/sending-domains', owner, { domain: DOMAIN })) as { domain_id: string; verification: { record_name: string; record_value: string } };
      return created;
    });
    const dns = await startBenchDns(context, scope, { [record.verification.record_name]: { TXT: [record.verification.record_value] } });
    // The api role alone: these are the costs of accepting a send; delivery is the outbound suite's.
    const service = await startMailroom(context, scope, database.url, ['api'], { env: { MAILROOM_DNS_SERVERS: dns.address, MAILROOM_RATE_LIMIT_PER_MINUTE: '0' }, profileName: 'mailroom-transactional' });
    const owner = await loginOwner(service.url, context.signal);
    const verified = await session(service.url, context.signal, `/app/api/sending-domains/${record.domain_id}/verify`, owner);
    if (verified.status !== 'verified') throw new Error(`the bench domain did not verify: ${JSON.stringify(verified)}`);
    await session(service.url, context.signal, '/app/api/mailboxes', owner, { address: FROM });
    const token = (await session(service.url, context.signal, '/app/api/service-tokens', owner, { name: 'bench', domain_id: record.domain_id, mailbox: FROM })).token as string;

    const url = `${service.url}/v1/transactional/messages`;
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const sample = await apiRequest(url, { method: 'POST', headers: { ...headers, 'idempotency-key': 'bench-replay' }, body: BODY }, context.signal);
    if (sample.status !== 202) throw new Error(`POST ${url} answered ${sample.status}: ${sample.text}`);
    const bare = await startBareHttp(context, scope, sample.text, '/v1/transactional/messages', { method: 'POST', status: 202 });

    let sequence = 0;
    const freshKey = (request: autocannon.Request): autocannon.Request => {
      sequence++;
      return { ...request, headers: { ...request.headers, 'idempotency-key': `bench-${dialect}-${process.pid}-${sequence}` } };
    };
    const load = (target: string, server: ManagedProcess, extra: Partial<HttpLoad>): HttpLoad => ({
      url: target,
      method: 'POST',
      body: BODY,
      headers,
      connections: context.settings.connections,
      warmupS: context.settings.warmupS,
      durationS: context.settings.durationS,
      serverPid: server.pid,
      serverTail: () => server.tail(),
      ...extra,
    });

    const rows: ResultRow[] = [];
    for (const [name, extra] of [
      ['fresh keys', { setupRequest: freshKey }],
      ['replays', { headers: { ...headers, 'idempotency-key': 'bench-replay' } }],
    ] as const) {
      context.log(`  [${dialect}] ${BASELINE} (${name}): ${context.settings.warmupS} s warm-up + ${context.settings.durationS} s…`);
      const base = await measureHttp(BASELINE, load(`${bare.url}/v1/transactional/messages`, bare.process, extra), context.signal);
      assertAlive(bare.process);
      context.log(`  [${dialect}] POST /v1/transactional/messages (${name})…`);
      const subject = await measureHttp(`transactional (${name})`, load(url, service.process, extra), context.signal);
      assertAlive(service.process);
      rows.push(...pairRows('transactional', `${dialect} ${name}`, 'req/s', { target: `${BASELINE} (${name})`, measurement: base }, { target: `POST /v1/transactional/messages (${name})`, measurement: subject }));
    }
    info[`${dialect}_messages_created`] = sequence;
    return rows;
  });
}

/** POST /v1/transactional/messages with fresh Idempotency-Keys and with replays, against a bare POST route. */
export const transactionalSuite: Suite = {
  name: 'transactional',
  description: 'POST /v1/transactional/messages req/s with fresh keys and with replays vs a bare Fastify POST route, on SQLite and PostgreSQL',
  budgetS: (s: Readonly<BenchSettings>) => DIALECTS.length * (CASE_SETUP_BUDGET_S + 4 * (s.warmupS + s.durationS + 15)),
  async run(context: SuiteContext): Promise<SuiteResult> {
    const result: SuiteResult = { suite: 'transactional', rows: [], skipped: [], failed: [], info: {} };
    await forEachDialect(context, result, async (dialect) => {
      result.rows.push(...(await runCase(context, dialect, result.info)));
    });
    return result;
  },
};
