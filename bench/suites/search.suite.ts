import SQLite from 'better-sqlite3';
import pg from 'pg';
import { workspaceTag } from '../../src/lib/mail-text.js';
import { fts5Syntax, TSQUERY_SYNTAX, type TextSyntax } from '../../src/modules/mail/search-text.js';
import type { TextNode } from '../../src/modules/messages/search-query.js';
import { processCpuMs } from '../lib/cpu.js';
import type { BenchDatabase, Dialect } from '../lib/databases.js';
import { DIALECTS, forEachDialect, freshDatabase } from '../lib/dialects.js';
import { fillMailbox } from '../lib/fill.js';
import type { Measurement } from '../lib/load.js';
import { senders, VOCABULARY } from '../lib/mail-content.js';
import { apiRequest, assertAlive, bootstrapTenant, BENCH_DOMAIN, createMailbox, startMailroom, type RunningMailroom } from '../lib/mailroom.js';
import { withScope } from '../lib/scope.js';
import { latencyStats } from '../lib/smtp-load.js';
import { countStoredMessages } from '../lib/store.js';
import { pairRows, type Goal, type ResultRow, type Suite, type SuiteContext, type SuiteResult } from '../lib/suite.js';

const MAILBOX = `search@${BENCH_DOMAIN}`;
/** Messages in the workspace (BENCH_SEARCH_MESSAGES overrides, e.g. for a quick try; the goals are stated for 1,000,000). */
const DEFAULT_MESSAGES = 1_000_000;
const PAGE = 50;
/** Timed requests per query shape (each through the API and bare), after the warm-up ones. */
const REQUESTS = 200;
const WARMUP_REQUESTS = 20;
/** Queries of each shape, of the same frequency class, taken in turn so that no one query's pages stay cached. */
const VARIANTS = 5;
/** The slowest fill allowed (messages per second) before the case fails; the fill timeout follows from it. */
const MIN_FILL_RATE = 100;
const SETUP_BUDGET_S = 120;
/** Generous per shape: candidates counted, warm-up and timed requests through both paths. */
const SHAPE_BUDGET_S = 300;
/** The combined shape's `after:`: this many days before today (the fill spans the last 60 days). */
const AFTER_DAYS = 30;

const GOAL_P99_MS = 100;
const GOAL_VS_BARE = 2;

const SUBJECT = `GET /inbox?q=…&limit=${PAGE} (API key)`;
const BASELINE = `bare text match, newest ${PAGE}`;

function messageCount(): number {
  const raw = process.env.BENCH_SEARCH_MESSAGES?.trim();
  if (!raw) return DEFAULT_MESSAGES;
  if (!/^\d+$/.test(raw) || Number(raw) < 1000 || Number(raw) > 10_000_000) throw new Error(`BENCH_SEARCH_MESSAGES=${JSON.stringify(raw)}: expected a whole number 1000..10000000`);
  return Number(raw);
}

const fillTimeoutS = (messages: number) => 600 + Math.ceil(messages / MIN_FILL_RATE);

/** A direct driver connection to the database: the bare query, and counting the messages a text expression matches. */
interface BareDb {
  /** The newest PAGE matches of a full-text expression (ids only): the query's text part alone. */
  page(expr: string): Promise<number>;
  count(expr: string): Promise<number>;
  close(): Promise<void>;
}

function openSqlite(database: BenchDatabase): BareDb {
  const db = new SQLite(database.url.slice('sqlite:'.length), { readonly: true, fileMustExist: true });
  const page = db.prepare(`SELECT rowid FROM message_fts WHERE message_fts MATCH ? ORDER BY rowid DESC LIMIT ${PAGE}`).pluck();
  const count = db.prepare('SELECT count(*) FROM message_fts WHERE message_fts MATCH ?').pluck();
  return {
    page: async (expr) => page.all(expr).length,
    count: async (expr) => Number(count.get(expr)),
    close: async () => void db.close(),
  };
}

async function openPostgres(database: BenchDatabase): Promise<BareDb> {
  const client = new pg.Client({ connectionString: database.url, connectionTimeoutMillis: 5000 });
  client.on('error', () => undefined);
  await client.connect();
  const pageSql = `SELECT m.id FROM messages m JOIN message_contents c ON c.message_id = m.id WHERE c.search_document @@ $1::tsquery ORDER BY m.created_at DESC LIMIT ${PAGE}`;
  return {
    page: async (expr) => (await client.query({ text: pageSql, values: [expr] })).rowCount ?? 0,
    count: async (expr) => Number((await client.query<{ n: string }>('SELECT count(*) AS n FROM message_contents WHERE search_document @@ $1::tsquery', [expr])).rows[0]?.n ?? 0),
    close: () => client.end().catch(() => undefined),
  };
}

/** One query of a shape: `q` as the API takes it, `bare` its text part in the database's own syntax, and what that matches. */
interface Query {
  q: string;
  bare: string;
  matches: number;
}

interface Shape {
  name: string;
  /** How its queries were chosen (printed and recorded). */
  chosen: string;
  queries: Query[];
  /** The API's page equals the bare page in size (false where the API filters beyond the text). */
  samePage: boolean;
}

const word = (value: string): TextNode => ({ kind: 'text', field: null, value });

/** A shape's candidates with their measured matches; throws when none falls in [min, max]. */
async function pick(bare: BareDb, syntax: TextSyntax, name: string, candidates: ReadonlyArray<{ q: string; nodes: TextNode[]; without?: TextNode }>, min: number, max: number): Promise<Query[]> {
  const chosen: Query[] = [];
  const seen: string[] = [];
  for (const c of candidates) {
    if (chosen.length === VARIANTS) break;
    const terms = c.nodes.map((n) => syntax.term(n)!);
    const positive = terms.length === 1 ? terms[0]! : syntax.and(terms);
    const expr = c.without ? syntax.andNot(positive, syntax.term(c.without)!)! : positive;
    const matches = await bare.count(expr);
    seen.push(`${c.q}: ${matches}`);
    if (matches >= min && matches <= max) chosen.push({ q: c.q, bare: expr, matches });
  }
  if (chosen.length === 0) throw new Error(`${name}: no candidate matched between ${min} and ${max} messages (${seen.join(', ')})`);
  return chosen;
}

/** The shortest prefix (at least 4 letters) of `w` that a handful of vocabulary words share, as typed in a search box. */
function prefixOf(w: string): string {
  for (let n = 4; n < w.length; n++) {
    const p = w.slice(0, n);
    if (VOCABULARY.filter((v) => v.startsWith(p)).length <= 20) return p;
  }
  return w.slice(0, Math.max(1, w.length - 1));
}

const ranks = (from: number, to: number, count: number): string[] => Array.from({ length: count }, (_, i) => VOCABULARY[Math.round(from + ((to - from) * i) / Math.max(1, count - 1))]!);

/**
 * The query shapes, chosen by the document frequency measured on this corpus (bench/lib/mail-content.ts draws words
 * by Zipf's law, so a word's rank sets its frequency class): a word in most messages, one in about 1 %, one in a few
 * per 100,000; a phrase of two common words; a prefix; a sender; all of it with column filters.
 */
async function chooseShapes(bare: BareDb, dialect: Dialect, messages: number, workspaceId: string): Promise<Shape[]> {
  // SQLite's index words carry the workspace's tag (lib/mail-text.ts `workspaceTag`).
  const syntax = dialect === 'sqlite' ? fts5Syntax(workspaceTag(workspaceId)) : TSQUERY_SYNTAX;
  const single = (list: string[]) => list.map((w) => ({ q: w, nodes: [word(w)] }));
  const share = (fraction: number) => Math.max(1, Math.round(messages * fraction));
  const common = await pick(bare, syntax, 'common word', single(ranks(16, 40, 12)), share(0.25), messages);
  const mid = await pick(bare, syntax, 'mid-frequency word', single(ranks(1000, 2600, 12)), share(0.003), share(0.03));
  const rare = await pick(bare, syntax, 'rare word', single(ranks(100_000, 199_000, 12)), 1, share(0.0005));
  const pairs = Array.from({ length: 12 }, (_, i) => `${VOCABULARY[4 + i]!} ${VOCABULARY[11 + i]!}`);
  const phrase = await pick(bare, syntax, 'phrase', pairs.map((p) => ({ q: `"${p}"`, nodes: [{ kind: 'phrase', field: null, value: p }] })), share(0.001), share(0.2));
  const prefixes = [...new Set(ranks(1000, 3000, 24).map(prefixOf))];
  const prefix = await pick(bare, syntax, 'prefix', prefixes.map((p) => ({ q: `${p}*`, nodes: [{ kind: 'prefix', field: null, value: p }] })), share(0.001), share(0.1));
  const addresses = senders(200, 20).filter((_, i) => i % 23 === 0).map((s) => s.address);
  const from = await pick(bare, syntax, 'from', addresses.map((a) => ({ q: `from:${a}`, nodes: [{ kind: 'text', field: 'from', value: a }] })), 1, messages);
  const after = new Date(Date.now() - AFTER_DAYS * 86_400_000).toISOString().slice(0, 10);
  const withWords = addresses.map((a, i) => {
    const [w, not] = [VOCABULARY[150 + 10 * i]!, VOCABULARY[400 + 10 * i]!];
    const nodes: TextNode[] = [{ kind: 'text', field: 'from', value: a }, word(w)];
    return { q: `from:${a} ${w} -${not} in:inbox after:${after}`, nodes, without: word(not) };
  });
  const combined = await pick(bare, syntax, 'combined', withWords, 1, messages);
  return [
    { name: 'common word', chosen: 'word of Zipf rank 17-41, in ≥ 25 % of messages', queries: common, samePage: true },
    { name: 'mid-frequency word', chosen: 'word of rank 1,001-2,601, in 0.3-3 % of messages', queries: mid, samePage: true },
    { name: 'rare word', chosen: 'word of rank 100,001-199,001, in ≤ 0.05 % of messages', queries: rare, samePage: true },
    { name: 'phrase', chosen: 'two common words in a row (ranks 5-16 then 12-23), in 0.1-20 % of messages', queries: phrase, samePage: true },
    { name: 'prefix', chosen: 'the first 4+ letters of a word of rank 1,001-3,001, shared by ≤ 20 words, in 0.1-10 % of messages', queries: prefix, samePage: true },
    { name: 'from:', chosen: 'a sender\'s address (one of 200)', queries: from, samePage: true },
    { name: 'combined', chosen: `from:<sender> <word of rank ~150> -<word of rank ~400> in:inbox after:<${AFTER_DAYS} days ago>; bare: its text part`, queries: combined, samePage: false },
  ];
}

/** The timed side of one shape: per-request latencies, and the service's CPU over its requests. */
interface Timings {
  bare: number[];
  api: number[];
  apiCpuMs: number | null;
}

/** One search through the API; checks the answer (and, where the page is the bare one, its size). */
async function apiSearch(service: RunningMailroom, apiKey: string, query: Query, samePage: boolean, signal: AbortSignal): Promise<number> {
  const started = performance.now();
  const res = await apiRequest(`${service.url}/inbox?q=${encodeURIComponent(query.q)}&limit=${PAGE}`, { headers: { authorization: `Bearer ${apiKey}` } }, signal);
  const ms = performance.now() - started;
  if (res.status !== 200) throw new Error(`GET /inbox?q=${query.q} answered ${res.status}: ${res.text.slice(0, 300)}`);
  const listed = (JSON.parse(res.text) as { messages: unknown[] }).messages.length;
  if (samePage && listed !== Math.min(PAGE, query.matches)) throw new Error(`GET /inbox?q=${query.q} listed ${listed} messages, the bare query ${Math.min(PAGE, query.matches)}`);
  return ms;
}

/**
 * Warm-up, then REQUESTS timed requests of each path, one at a time, the two paths alternating request by request
 * (and which goes first) so that both see the same machine; the shape's queries are taken in turn.
 */
async function timeShape(service: RunningMailroom, apiKey: string, bare: BareDb, shape: Shape, signal: AbortSignal): Promise<Timings> {
  const timings: Timings = { bare: [], api: [], apiCpuMs: null };
  const cpu = () => processCpuMs(service.process.pid);
  let cpuBefore: number | null = null;
  for (let i = 0; i < WARMUP_REQUESTS + REQUESTS; i++) {
    signal.throwIfAborted();
    if (i === WARMUP_REQUESTS) cpuBefore = cpu();
    const query = shape.queries[i % shape.queries.length]!;
    const timeBare = async () => {
      const started = performance.now();
      await bare.page(query.bare);
      return performance.now() - started;
    };
    const timeApi = () => apiSearch(service, apiKey, query, shape.samePage, signal);
    let b: number;
    let a: number;
    if (i % 2 === 0) {
      b = await timeBare();
      a = await timeApi();
    } else {
      a = await timeApi();
      b = await timeBare();
    }
    if (i < WARMUP_REQUESTS) continue;
    timings.bare.push(b);
    timings.api.push(a);
  }
  const cpuAfter = cpu();
  timings.apiCpuMs = cpuBefore !== null && cpuAfter !== null ? cpuAfter - cpuBefore : null;
  return timings;
}

/** Sequential requests as a measurement: throughput is one request after another, 1000 ÷ the mean latency. */
function sequential(latencies: number[], cpuMs: number | null): Measurement {
  const stats = latencyStats(latencies);
  const wallMs = latencies.reduce((s, v) => s + v, 0);
  return {
    requestsPerSec: latencies.length / (wallMs / 1000),
    latencyMs: stats,
    totalRequests: latencies.length,
    durationS: wallMs / 1000,
    connections: 1,
    errors: 0,
    timeouts: 0,
    non2xx: 0,
    serverCpuUsPerRequest: cpuMs === null ? null : (cpuMs * 1000) / latencies.length,
    serverCpuUtilization: cpuMs === null ? null : cpuMs / wallMs,
  };
}

const caseName = (dialect: Dialect, shape: string) => `${dialect}, ${shape}`;

async function runDialect(context: SuiteContext, dialect: Dialect, messages: number, info: Record<string, unknown>): Promise<ResultRow[]> {
  return withScope(context.log, async (scope) => {
    const database = await freshDatabase(context, scope, dialect, 'search');
    const tenant = await bootstrapTenant(context, database.url);
    const service = await startMailroom(context, scope, database.url, ['api'], { profileName: `mailroom-api-search-${dialect}` });
    await createMailbox(service.url, tenant.apiKey, MAILBOX, 'Search bench mailbox', context.signal);
    const fill = await fillMailbox(context, database, MAILBOX, messages, fillTimeoutS(messages));
    const stored = await countStoredMessages(database, MAILBOX);
    if (stored !== messages) throw new Error(`the mailbox holds ${stored} messages after the fill, expected ${messages}`);

    const bare = dialect === 'sqlite' ? openSqlite(database) : await openPostgres(database);
    scope.defer('bare connection', () => bare.close());
    const chooseStarted = performance.now();
    const shapes = await chooseShapes(bare, dialect, messages, tenant.workspaceId);
    context.log(`  [${dialect}] chose the queries in ${((performance.now() - chooseStarted) / 1000).toFixed(1)} s (messages each matches, text part):`);
    for (const s of shapes) context.log(`    ${s.name.padEnd(18)} ${s.queries.map((q) => `${q.q} (${q.matches})`).join(', ')}`);
    const rows: ResultRow[] = [];
    const shapeInfo: Record<string, unknown> = {};
    for (const shape of shapes) {
      context.log(`  [${dialect}] ${shape.name}: ${WARMUP_REQUESTS} + ${REQUESTS} requests through the API and bare, alternating…`);
      const t = await timeShape(service, tenant.apiKey, bare, shape, context.signal);
      assertAlive(service.process);
      const [b, a] = [sequential(t.bare, null), sequential(t.api, t.apiCpuMs)];
      context.log(`    p50/p99 ms: API ${a.latencyMs.p50.toFixed(1)}/${a.latencyMs.p99.toFixed(1)}, bare ${b.latencyMs.p50.toFixed(1)}/${b.latencyMs.p99.toFixed(1)}`);
      rows.push(...pairRows('search', caseName(dialect, shape.name), 'req/s', { target: BASELINE, measurement: b }, { target: SUBJECT, measurement: a }));
      shapeInfo[shape.name] = { chosen: shape.chosen, queries: shape.queries };
    }
    info[dialect] = { database: database.label, fill, shapes: shapeInfo };
    return rows;
  });
}

/** The issue's two goals for one shape on one database: p99 under a bound, and within a factor of the bare query's p99. */
function shapeGoals(result: SuiteResult, dialect: Dialect, shape: string, messages: number): Goal[] {
  const name = caseName(dialect, shape);
  const api = result.rows.find((r) => r.case === name && r.role === 'subject')?.latencyMs?.p99 ?? null;
  const bare = result.rows.find((r) => r.case === name && r.role === 'baseline')?.latencyMs?.p99 ?? null;
  const on = messages === DEFAULT_MESSAGES ? '' : ` (measured on ${messages.toLocaleString('en-US')} messages: BENCH_SEARCH_MESSAGES)`;
  const ratio = api !== null && bare !== null && bare > 0 ? api / bare : null;
  return [
    { goal: `search p99 on 1,000,000 messages${on}`, case: name, minRatio: 1, ratio: null, met: api === null ? null : api <= GOAL_P99_MS, threshold: `p99 ≤ ${GOAL_P99_MS} ms`, ...(api === null ? {} : { measured: `p99 ${api.toFixed(1)} ms` }) },
    {
      goal: `search p99 against the bare query's${on}`,
      case: name,
      minRatio: 1,
      ratio,
      met: ratio === null ? null : ratio <= GOAL_VS_BARE,
      threshold: `API p99 ≤ ${GOAL_VS_BARE}× bare p99`,
      ...(ratio === null ? {} : { measured: `${ratio.toFixed(2)}× (${api!.toFixed(1)} ms ÷ ${bare!.toFixed(1)} ms)` }),
    },
  ];
}

const SHAPES = ['common word', 'mid-frequency word', 'rare word', 'phrase', 'prefix', 'from:', 'combined'] as const;

/** Search latency through GET /inbox?q= on a workspace of 1,000,000 messages, against the same text match run bare on the database. */
export const searchSuite: Suite = {
  name: 'search',
  description: `search p50/p99 (word, phrase, prefix, from:, combined) on ${DEFAULT_MESSAGES.toLocaleString('en-US')} messages vs the bare FTS5 MATCH / tsquery @@, on SQLite and PostgreSQL`,
  budgetS: () => DIALECTS.length * (SETUP_BUDGET_S + fillTimeoutS(messageCount()) + 1800 + SHAPES.length * SHAPE_BUDGET_S),
  async run(context: SuiteContext): Promise<SuiteResult> {
    const messages = messageCount();
    const result: SuiteResult = { suite: 'search', rows: [], skipped: [], failed: [], info: { mailbox: MAILBOX, messages, page: PAGE, requests: REQUESTS, warmup_requests: WARMUP_REQUESTS, variants: VARIANTS } };
    await forEachDialect(context, result, async (dialect) => {
      result.rows.push(...(await runDialect(context, dialect, messages, result.info)));
    });
    result.goals = DIALECTS.flatMap((dialect) => SHAPES.flatMap((shape) => shapeGoals(result, dialect, shape, messages)));
    return result;
  },
};
