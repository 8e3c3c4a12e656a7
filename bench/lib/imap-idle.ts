/**
 * The `imap` suite's IDLE cases: how soon a session in IDLE hears of a change made through the API (Dovecot: through
 * a second IMAP session), and what a session in IDLE costs a Mailroom process in memory.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { DIALECTS, freshDatabase } from './dialects.js';
import type { Dialect } from './databases.js';
import { waitForImap, type BenchDovecot } from './dovecot.js';
import { ImapConnection } from './imap-client.js';
import type { BenchMaildir } from './imap-mailbox.js';
import { createAppPassword, imapEnv, importMaildir, residentKiB, startMailroomApi, startMailroomImap } from './imap-mailroom.js';
import type { Measurement } from './load.js';
import { apiRequest, BENCH_DOMAIN, bootstrapTenant, createMailbox, loginOwner, ROOT } from './mailroom.js';
import { processCpuMs } from './cpu.js';
import { freeLoopbackPort, waitForOutput } from './processes.js';
import { seededRandom } from './mail-content.js';
import { withScope } from './scope.js';
import { latencyStats } from './smtp-load.js';
import { pairRows, type ResultRow, type SuiteContext } from './suite.js';

export const IDLE_MAILBOX = `idle@${BENCH_DOMAIN}`;
/** A change not heard of within this long counts as missed (and as this long). */
const MISS_MS = 5000;
/** The pause after each notification: random, so changes fall anywhere in a poll period. */
const PAUSE_MIN_MS = 50;
const PAUSE_SPAN_MS = 300;
const CLIENTS_TOOL = join(ROOT, 'bench', 'tools', 'imap-idle-clients.ts');
/** After the sessions are open, how long the server idles before its resident set is read. */
const SETTLE_MS = 5000;
const WARMUP_SESSIONS = 100;
/** How long the sessions may take to open: every open session polls meanwhile, so the last ones open slowest. */
const OPEN_TIMEOUT_MS = 120_000;
const OPEN_MS_PER_SESSION = 250;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The case name of the IDLE latency on `dialect` (PostgreSQL: the API and IMAP roles in two processes). */
export const idleCase = (dialect: Dialect) => (dialect === 'postgres' ? 'postgres idle, api + imap processes' : `${dialect} idle, one process`);
export const SESSIONS_CASE = 'sessions in IDLE';

/**
 * `count` changes, each made by `change(i)` while `watch` is in IDLE: the time from just before the change is asked
 * for to the arrival of the `* n FETCH` that tells of it.
 */
async function latencies(watch: ImapConnection, count: number, change: (i: number) => Promise<void>, signal: AbortSignal): Promise<{ ms: number[]; missed: number }> {
  const random = seededRandom(0x1d1e);
  const ms: number[] = [];
  let missed = 0;
  let heard: ((at: number) => void) | null = null;
  watch.onUntagged = (response) => {
    if (!heard || !/^\* \d+ FETCH/i.test(response)) return;
    const resolve = heard;
    heard = null;
    resolve(performance.now());
  };
  const idle = await watch.idle();
  for (let i = 0; i < count; i++) {
    signal.throwIfAborted();
    let timer: NodeJS.Timeout | undefined;
    const arrived = new Promise<number | null>((resolve) => {
      heard = resolve;
      timer = setTimeout(() => resolve(null), MISS_MS);
    });
    const started = performance.now();
    await change(i);
    const at = await arrived;
    clearTimeout(timer);
    heard = null;
    if (at === null) missed++;
    ms.push(at === null ? MISS_MS : at - started);
    await sleep(PAUSE_MIN_MS + random() * PAUSE_SPAN_MS);
  }
  watch.onUntagged = null;
  await idle.done();
  return { ms, missed };
}

/** Latencies as a Measurement: `requestsPerSec` is 1000 ÷ the mean latency, so `vs baseline` compares means. */
function latencyMeasurement(ms: number[], missed: number): Measurement {
  const stats = latencyStats(ms);
  return { requestsPerSec: 1000 / stats.mean, latencyMs: stats, totalRequests: ms.length, durationS: 0, connections: 1, errors: missed, timeouts: missed, non2xx: 0, serverCpuUsPerRequest: null, serverCpuUtilization: null };
}

async function loggedIn(port: number, user: string, password: string): Promise<ImapConnection> {
  const connection = await ImapConnection.open(port);
  await connection.login(user, password);
  await connection.selectInbox();
  return connection;
}

/** Dovecot: one session in IDLE on INBOX, another toggling \Flagged on its first messages. */
async function dovecotLatencies(dovecot: BenchDovecot, count: number, messages: number, signal: AbortSignal): Promise<{ ms: number[]; missed: number }> {
  const watch = await loggedIn(dovecot.port, dovecot.user, dovecot.password);
  const changer = await loggedIn(dovecot.port, dovecot.user, dovecot.password);
  try {
    return await latencies(watch, count, async (i) => {
      const set = Math.floor(i / messages) % 2 === 0;
      await changer.ok(`UID STORE ${(i % messages) + 1} ${set ? '+' : '-'}FLAGS.SILENT (\\Flagged)`);
    }, signal);
  } finally {
    await Promise.all([watch.close(), changer.close()]);
  }
}

/** The message ids of a mailbox's inbox, through the API. */
async function messageIds(url: string, apiKey: string, mailbox: string, signal: AbortSignal): Promise<string[]> {
  const res = await apiRequest(`${url}/inbox?mailbox=${encodeURIComponent(mailbox)}&limit=50`, { headers: { authorization: `Bearer ${apiKey}` } }, signal);
  const ids = res.status === 200 ? (JSON.parse(res.text) as { messages?: Array<{ message_id: string }> }).messages?.map((m) => m.message_id) : undefined;
  if (!ids || ids.length === 0) throw new Error(`GET /inbox answered ${res.status}: ${res.text.slice(0, 300)}`);
  return ids;
}

/**
 * IDLE latency on `dialect`: Dovecot (baseline), then Mailroom, whose changes are `POST /messages/{id}/flags`
 * toggling `flagged`. SQLite: the api and imap roles in one process; PostgreSQL: in two, so the IMAP process learns
 * of the API's commits across processes.
 */
export async function idleLatencyCase(context: SuiteContext, dialect: Dialect, dovecot: BenchDovecot, maildir: BenchMaildir, changes: number, info: Record<string, unknown>): Promise<ResultRow[]> {
  return withScope(context.log, async (scope) => {
    const { signal } = context;
    const database = await freshDatabase(context, scope, dialect, 'imap-idle');
    const tenant = await bootstrapTenant(context, database.url);
    const split = dialect === 'postgres';
    const oneProcessPort = await freeLoopbackPort();
    const api = await startMailroomApi(context, scope, database.url, split ? ['api'] : ['api', 'imap'], split ? {} : imapEnv(oneProcessPort, 100), `mailroom-imap-idle-${dialect}`);
    await createMailbox(api.url, tenant.apiKey, IDLE_MAILBOX, 'IMAP IDLE bench mailbox', signal);
    const password = await createAppPassword(api.url, await loginOwner(api.url, signal), IDLE_MAILBOX, signal);
    await importMaildir(context, database, IDLE_MAILBOX, maildir.smallDir, maildir.smallCount);
    const ids = await messageIds(api.url, tenant.apiKey, IDLE_MAILBOX, signal);
    const login = { user: IDLE_MAILBOX, password };
    const port = split ? (await startMailroomImap(context, scope, database.url, login, `mailroom-imap-only-${dialect}`)).port : oneProcessPort;
    if (!split) await waitForImap(port, api.process, IDLE_MAILBOX, password, 30_000, signal);

    context.log(`  [${dialect}] IDLE: ${changes} flag changes through a second Dovecot session…`);
    const base = await dovecotLatencies(dovecot, changes, Math.min(ids.length, maildir.messages), signal);
    context.log(`  [${dialect}] IDLE: ${changes} flag changes through POST /messages/{id}/flags${split ? ' (api and imap in two processes)' : ''}…`);
    const watch = await loggedIn(port, IDLE_MAILBOX, password);
    let subject: { ms: number[]; missed: number };
    try {
      subject = await latencies(watch, changes, async (i) => {
        const res = await apiRequest(
          `${api.url}/messages/${ids[i % ids.length]!}/flags`,
          { method: 'POST', headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ flagged: Math.floor(i / ids.length) % 2 === 0 }) },
          signal,
        );
        if (res.status !== 200) throw new Error(`POST /messages/{id}/flags answered ${res.status}: ${res.text.slice(0, 200)}`);
      }, signal);
    } finally {
      await watch.close();
    }
    info[idleCase(dialect)] = { changes, dovecot_missed: base.missed, mailroom_missed: subject.missed, miss_after_ms: MISS_MS };
    return pairRows('imap', idleCase(dialect), 'notif/s', { target: 'dovecot: STORE in another session → IDLE', measurement: latencyMeasurement(base.ms, base.missed) }, {
      target: `mailroom: POST …/flags → IDLE${split ? ' (2 processes)' : ''}`,
      measurement: latencyMeasurement(subject.ms, subject.missed),
    });
  });
}

/** The open-file limit this process passes on to its children. */
function openFileLimit(): number {
  const out = spawnSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).stdout.trim();
  return out === 'unlimited' ? Number.POSITIVE_INFINITY : Number(out);
}

/** Opens `sessions` sessions in IDLE from the client tool; resolves with the tool (to stop) and its opening time. */
async function openSessions(context: SuiteContext, port: number, password: string, sessions: number): Promise<{ stop: () => Promise<void>; ms: number }> {
  const proc = context.processes.start(`imap-idle-clients ×${sessions}`, {
    args: ['--import', 'tsx', CLIENTS_TOOL],
    cwd: ROOT,
    env: { ...process.env, BENCH_IMAP_PORT: String(port), BENCH_IMAP_USER: IDLE_MAILBOX, BENCH_IMAP_PASSWORD: password, BENCH_IMAP_SESSIONS: String(sessions) },
  });
  try {
    const match = await waitForOutput(proc, /^(ready|failed) (.*)$/m, OPEN_TIMEOUT_MS + sessions * OPEN_MS_PER_SESSION, context.signal);
    if (match[1] === 'failed') throw new Error(`the idle sessions failed: ${match[2]!}`);
    return { stop: () => proc.stop(), ms: (JSON.parse(match[2]!) as { ms: number }).ms };
  } catch (error) {
    await proc.stop();
    throw error;
  }
}

/**
 * Memory per session in IDLE: one `serve --role api,imap` process on the first database, its resident set before
 * and after `sessions` sessions (logged in, INBOX of the small mailbox selected, IDLE) are opened from another
 * process; also its CPU while they idle.
 */
export async function sessionsCase(context: SuiteContext, maildir: BenchMaildir, sessions: number, info: Record<string, unknown>): Promise<ResultRow[]> {
  const limit = openFileLimit();
  if (sessions + 200 > limit) throw new Error(`${sessions} sessions need more open files than ulimit -n allows (${limit}): raise it, or set BENCH_IMAP_IDLE_SESSIONS lower`);
  const dialect = DIALECTS[0]!;
  return withScope(context.log, async (scope) => {
    const { signal } = context;
    const database = await freshDatabase(context, scope, dialect, 'imap-sessions');
    const tenant = await bootstrapTenant(context, database.url);
    const port = await freeLoopbackPort();
    const service = await startMailroomApi(context, scope, database.url, ['api', 'imap'], imapEnv(port, sessions + 200), `mailroom-imap-sessions-${dialect}`);
    await createMailbox(service.url, tenant.apiKey, IDLE_MAILBOX, 'IMAP IDLE bench mailbox', signal);
    const password = await createAppPassword(service.url, await loginOwner(service.url, signal), IDLE_MAILBOX, signal);
    await importMaildir(context, database, IDLE_MAILBOX, maildir.smallDir, maildir.smallCount);
    await waitForImap(port, service.process, IDLE_MAILBOX, password, 30_000, signal);
    // A first round opens the code paths and the pools, so that "before" is a process that has served sessions.
    await (await openSessions(context, port, password, Math.min(WARMUP_SESSIONS, sessions))).stop();
    await sleep(2000);
    const before = residentKiB(service.process.pid);
    context.log(`  [${dialect}] opening ${sessions} IMAP sessions in IDLE (resident set before: ${before === null ? '?' : (before / 1024).toFixed(1)} MiB)…`);
    const open = await openSessions(context, port, password, sessions);
    try {
      const cpuBefore = processCpuMs(service.process.pid);
      await sleep(SETTLE_MS);
      const cpuAfter = processCpuMs(service.process.pid);
      const after = residentKiB(service.process.pid);
      if (before === null || after === null) throw new Error('the resident set is read from /proc (Linux only)');
      const perSessionKB = ((after - before) * 1024) / sessions / 1000;
      const idleCpuShare = cpuBefore === null || cpuAfter === null ? null : (cpuAfter - cpuBefore) / SETTLE_MS;
      info[SESSIONS_CASE] = { database: dialect, sessions, mailbox_messages: maildir.smallCount, rss_before_mib: round(before / 1024), rss_after_mib: round(after / 1024), per_session_kb: round(perSessionKB), open_ms: open.ms, idle_cpu_share_of_a_core: idleCpuShare === null ? null : round(idleCpuShare) };
      context.log(`  [${dialect}] ${sessions} sessions open in ${(open.ms / 1000).toFixed(1)} s: resident set ${(before / 1024).toFixed(1)} → ${(after / 1024).toFixed(1)} MiB, ${perSessionKB.toFixed(1)} KB a session; idle CPU ${idleCpuShare === null ? '?' : `${(idleCpuShare * 100).toFixed(0)} % of a core`}`);
      const row = (target: string, unit: string, rate: number): ResultRow => ({ suite: 'imap', case: SESSIONS_CASE, target, role: 'subject', unit, rate, latencyMs: null, ratio: null, measurement: null });
      return [row(`mailroom: resident set per session (${sessions} in IDLE, ${dialect})`, 'KB', perSessionKB), ...(idleCpuShare === null ? [] : [row(`mailroom: CPU while ${sessions} sessions idle`, '% of a core', idleCpuShare * 100)])];
    } finally {
      await open.stop();
    }
  });
}

const round = (n: number) => Math.round(n * 10) / 10;
