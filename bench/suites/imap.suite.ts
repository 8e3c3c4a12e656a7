import { existsSync } from 'node:fs';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { processTreeCpuMs } from '../lib/cpu.js';
import type { Dialect } from '../lib/databases.js';
import { DIALECTS, forEachDialect, freshDatabase } from '../lib/dialects.js';
import { DOVECOT_BINARY, startBenchDovecot, waitForImap, type BenchDovecot } from '../lib/dovecot.js';
import { ImapConnection } from '../lib/imap-client.js';
import { idleCase, idleLatencyCase, SESSIONS_CASE, sessionsCase } from '../lib/imap-idle.js';
import { writeBenchMaildir, type BenchMaildir } from '../lib/imap-mailbox.js';
import { createAppPassword, imapEnv, importMaildir, mailroomTarget, runsMeasurement, startMailroomApi, timed, type ImapTarget, type Runs } from '../lib/imap-mailroom.js';
import { BENCH_DOMAIN, bootstrapTenant, createMailbox, loginOwner } from '../lib/mailroom.js';
import { freeLoopbackPort } from '../lib/processes.js';
import { withScope } from '../lib/scope.js';
import { settleAfterBulkLoad } from '../lib/store.js';
import { goal, pairRows, type BenchSettings, type Goal, type ResultRow, type Suite, type SuiteContext, type SuiteResult } from '../lib/suite.js';

const MAILBOX = `imap@${BENCH_DOMAIN}`;
const FETCH = 'FETCH 1:* (FLAGS ENVELOPE BODYSTRUCTURE)';
const MBSYNC = '/usr/bin/mbsync';
/** Messages of the IDLE cases' small mailbox. */
const IDLE_MAILBOX_MESSAGES = 50;
const CASES = ['mbsync', 'fetch', 'search', 'idle', 'sessions'] as const;
type CaseName = (typeof CASES)[number];
const MBSYNC_TIMEOUT_MS = 1800_000;

/**
 * Where mbsync's local Maildir goes: a memory file system when the machine has one (`BENCH_MBSYNC_DIR` to choose).
 * On a disk, creating 10,000 message files is what the pull waits on (mbsync's own open() took 370–730 µs a file
 * here, at 100 % of a core), so the pull would time the disk, not the two servers.
 */
function mbsyncRoot(context: SuiteContext): string {
  const chosen = process.env.BENCH_MBSYNC_DIR?.trim();
  if (chosen) return chosen;
  return existsSync('/dev/shm') ? '/dev/shm' : context.workDir;
}

interface ImapSettings {
  messages: number;
  runs: number;
  changes: number;
  sessions: number;
  cases: ReadonlySet<CaseName>;
}

function envInt(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name]?.trim();
  if (!raw) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) throw new Error(`${name}=${JSON.stringify(raw)}: expected a whole number ${min}..${max}`);
  return Number(raw);
}

function imapSettings(): ImapSettings {
  const named = (process.env.BENCH_IMAP_CASES ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = named.filter((n) => !(CASES as readonly string[]).includes(n));
  if (unknown.length > 0) throw new Error(`BENCH_IMAP_CASES: unknown case ${unknown.join(', ')} (${CASES.join(', ')})`);
  return {
    messages: envInt('BENCH_IMAP_MESSAGES', 10_000, IDLE_MAILBOX_MESSAGES, 1_000_000),
    runs: envInt('BENCH_IMAP_RUNS', 5, 1, 100),
    changes: envInt('BENCH_IMAP_IDLE_CHANGES', 100, 10, 10_000),
    sessions: envInt('BENCH_IMAP_IDLE_SESSIONS', 10_000, 1, 100_000),
    cases: new Set(named.length > 0 ? (named as CaseName[]) : CASES),
  };
}

function dovecotTarget(dovecot: BenchDovecot): ImapTarget {
  return { name: 'dovecot', port: dovecot.port, user: dovecot.user, password: dovecot.password, cpuMs: () => processTreeCpuMs(dovecot.process.pid) };
}

/** A session logged in with INBOX selected, which must hold the whole mailbox. */
async function inboxSession(target: ImapTarget, messages: number): Promise<ImapConnection> {
  const connection = await ImapConnection.open(target.port);
  await connection.login(target.user, target.password);
  const exists = await connection.selectInbox();
  if (exists !== messages) throw new Error(`${target.name}'s INBOX holds ${exists} messages, expected ${messages}`);
  return connection;
}

/** One untimed round, then `runs` rounds alternating the targets (baseline first), so a busy moment touches both alike. */
async function alternate(context: SuiteContext, targets: readonly ImapTarget[], runs: number, round: (target: ImapTarget, index: number, runs: Runs) => Promise<void>): Promise<Runs[]> {
  for (const [i, target] of targets.entries()) await round(target, i, { ms: [], cpuMs: 0 });
  const measured: Runs[] = targets.map(() => ({ ms: [], cpuMs: 0 }));
  for (let r = 0; r < runs; r++) {
    for (const [i, target] of targets.entries()) {
      context.signal.throwIfAborted();
      await round(target, i, measured[i]!);
    }
  }
  return measured;
}

/** FETCH 1:* (FLAGS ENVELOPE BODYSTRUCTURE) on one session each: wall time, every message answered. */
async function fetchCase(context: SuiteContext, dialect: Dialect, targets: readonly ImapTarget[], maildir: BenchMaildir, runs: number): Promise<ResultRow[]> {
  context.log(`  [${dialect}] ${FETCH}: ${runs} runs each…`);
  const sessions = await Promise.all(targets.map((t) => inboxSession(t, maildir.messages)));
  try {
    const [base, subject] = await alternate(context, targets, runs, (target, i, into) =>
      timed(target, into, async () => {
        const fetched = (await sessions[i]!.ok(FETCH)).counts.get('FETCH') ?? 0;
        if (fetched !== maildir.messages) throw new Error(`${target.name} answered ${fetched} FETCH responses, expected ${maildir.messages}`);
      }),
    );
    return pairRows('imap', `${dialect} fetch`, 'msg/s', { target: `dovecot ${FETCH}`, measurement: runsMeasurement(base!, maildir.messages) }, { target: `mailroom ${FETCH}`, measurement: runsMeasurement(subject!, maildir.messages) });
  } finally {
    await Promise.all(sessions.map((s) => s.close()));
  }
}

/** UID SEARCH TEXT <word of ~1 % of messages>: wall time per search; the UIDs found are recorded per server. */
async function searchCase(context: SuiteContext, dialect: Dialect, targets: readonly ImapTarget[], maildir: BenchMaildir, runs: number, info: Record<string, unknown>): Promise<ResultRow[]> {
  const command = `UID SEARCH TEXT ${maildir.word}`;
  context.log(`  [${dialect}] ${command} (in ${maildir.wordMessages} messages): ${runs} runs each…`);
  const sessions = await Promise.all(targets.map((t) => inboxSession(t, maildir.messages)));
  const found: Record<string, number> = {};
  try {
    const [base, subject] = await alternate(context, targets, runs, (target, i, into) =>
      timed(target, into, async () => {
        const answer = await sessions[i]!.ok(command, { keep: true });
        const line = answer.untagged.find((l) => /^\* SEARCH/i.test(l)) ?? '';
        found[target.name] = line.trim().split(/\s+/).length - 2;
      }),
    );
    info[`${dialect} search`] = { word: maildir.word, messages_with_word: maildir.wordMessages, found };
    for (const [name, n] of Object.entries(found)) if (n !== maildir.wordMessages) context.log(`  [${dialect}] note: ${name} found ${n} messages for '${maildir.word}', the mailbox has ${maildir.wordMessages} with the word`);
    return pairRows('imap', `${dialect} search`, 'searches/s', { target: `dovecot ${command}`, measurement: runsMeasurement(base!, 1) }, { target: `mailroom ${command}`, measurement: runsMeasurement(subject!, 1) });
  } finally {
    await Promise.all(sessions.map((s) => s.close()));
  }
}

function mbsyncConfig(target: ImapTarget, maildir: string): string {
  const q = (s: string) => `"${s.replace(/["\\]/g, (c) => `\\${c}`)}"`;
  // FSync no: mbsync's fsync of every message file would time this machine's disk, not the servers.
  return [
    'FSync no', '',
    'IMAPAccount far', 'Host 127.0.0.1', `Port ${target.port}`, `User ${q(target.user)}`, `Pass ${q(target.password)}`, 'SSLType None', 'AuthMechs LOGIN', '',
    'IMAPStore far', 'Account far', '',
    'MaildirStore near', `Path ${q(`${maildir}/`)}`, `Inbox ${q(join(maildir, 'INBOX'))}`, '',
    'Channel pull', 'Far :far:INBOX', 'Near :near:INBOX', 'Sync Pull', 'Create Near', 'Expunge None', 'SyncState *', '',
  ].join('\n');
}

/** A full `mbsync` pull of INBOX into an empty local Maildir, which must then hold every message. */
async function mbsyncCase(context: SuiteContext, dialect: Dialect, targets: readonly ImapTarget[], maildir: BenchMaildir, runs: number): Promise<ResultRow[]> {
  context.log(`  [${dialect}] mbsync full pull of ${maildir.messages} messages: ${runs} runs each…`);
  let pulls = 0;
  const [base, subject] = await alternate(context, targets, runs, async (target, _i, into) => {
    const dir = join(mbsyncRoot(context), `mailroom-bench-mbsync-${process.pid}-${dialect}-${target.name}-${++pulls}`);
    // mbsync creates the INBOX folder, not the store's own directory.
    await mkdir(join(dir, 'mail'), { recursive: true });
    const rc = join(dir, 'mbsyncrc');
    await writeFile(rc, mbsyncConfig(target, join(dir, 'mail')));
    try {
      await timed(target, into, async () => {
        await context.processes.run(`mbsync from ${target.name}`, { command: MBSYNC, args: ['-c', rc, '-q', 'pull'], cwd: dir, env: { ...process.env, HOME: dir }, timeoutMs: MBSYNC_TIMEOUT_MS });
      });
      const inbox = join(dir, 'mail', 'INBOX');
      const pulled = (await readdir(join(inbox, 'cur'))).length + (await readdir(join(inbox, 'new'))).length;
      if (pulled !== maildir.messages) throw new Error(`mbsync pulled ${pulled} messages from ${target.name}, expected ${maildir.messages}`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
  return pairRows('imap', `${dialect} mbsync`, 'msg/s', { target: 'dovecot ← mbsync full pull', measurement: runsMeasurement(base!, maildir.messages) }, { target: 'mailroom ← mbsync full pull', measurement: runsMeasurement(subject!, maildir.messages) });
}

/** mbsync, FETCH and SEARCH on `dialect`: one `serve --role api,imap` holding the imported mailbox, beside Dovecot. */
async function mailboxCases(context: SuiteContext, dialect: Dialect, dovecot: BenchDovecot, maildir: BenchMaildir, settings: ImapSettings, result: SuiteResult): Promise<void> {
  return withScope(context.log, async (scope) => {
    const { signal } = context;
    const database = await freshDatabase(context, scope, dialect, 'imap');
    const tenant = await bootstrapTenant(context, database.url);
    const port = await freeLoopbackPort();
    const service = await startMailroomApi(context, scope, database.url, ['api', 'imap'], imapEnv(port, 100), `mailroom-imap-${dialect}`);
    await createMailbox(service.url, tenant.apiKey, MAILBOX, 'IMAP bench mailbox', signal);
    const password = await createAppPassword(service.url, await loginOwner(service.url, signal), MAILBOX, signal);
    context.log(`  [${dialect}] importing ${maildir.messages} messages (mailroom admin import-mailbox)…`);
    const imported = await importMaildir(context, database, MAILBOX, maildir.dir, maildir.messages);
    await settleAfterBulkLoad(database);
    context.log(`  [${dialect}] imported in ${(imported.ms / 1000).toFixed(1)} s (${imported.per_second} msg/s)`);
    result.info[`${dialect} import`] = imported;
    await waitForImap(port, service.process, MAILBOX, password, 30_000, signal);
    const targets = [dovecotTarget(dovecot), mailroomTarget('mailroom', port, service.process, MAILBOX, password)];
    if (settings.cases.has('mbsync')) await attempt(context, result, `${dialect} mbsync`, () => mbsyncCase(context, dialect, targets, maildir, settings.runs));
    if (settings.cases.has('fetch')) await attempt(context, result, `${dialect} fetch`, () => fetchCase(context, dialect, targets, maildir, settings.runs));
    if (settings.cases.has('search')) await attempt(context, result, `${dialect} search`, () => searchCase(context, dialect, targets, maildir, settings.runs, result.info));
  });
}

/** Runs one case into `result`: its rows, or its failure (the next case still runs). */
async function attempt(context: SuiteContext, result: SuiteResult, caseName: string, body: () => Promise<ResultRow[]>): Promise<void> {
  try {
    result.rows.push(...(await body()));
  } catch (err) {
    if (context.signal.aborted) throw err;
    const message = err instanceof Error ? err.message : String(err);
    context.log(`  [${caseName}] FAILED: ${message}`);
    result.failed.push({ case: caseName, error: message });
  }
}

/** An absolute goal on a latency row: its subject's p99 at most `limitMs`. */
function p99Goal(result: SuiteResult, caseName: string, limitMs: number): Goal {
  const row = result.rows.find((r) => r.case === caseName && r.role === 'subject');
  const p99 = row?.latencyMs?.p99 ?? null;
  return {
    goal: 'IDLE hears of a change made through the API within 1 s (p99)',
    case: caseName,
    minRatio: 0,
    ratio: row?.ratio ?? null,
    met: p99 === null ? null : p99 <= limitMs,
    threshold: `p99 ≤ ${limitMs} ms`,
    measured: p99 === null ? '-' : `p50 ${row!.latencyMs!.p50.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms`,
  };
}

function sessionsGoal(result: SuiteResult, sessions: number): Goal {
  const row = result.rows.find((r) => r.case === SESSIONS_CASE && r.unit === 'KB');
  return {
    goal: `memory per logged-in session in IDLE (${sessions.toLocaleString('en-US')} sessions, one process)`,
    case: SESSIONS_CASE,
    minRatio: 0,
    ratio: null,
    met: row ? row.rate <= 50 : null,
    threshold: '≤ 50 KB a session',
    measured: row ? `${row.rate.toFixed(1)} KB` : '-',
  };
}

function goals(result: SuiteResult, settings: ImapSettings): Goal[] {
  const out: Goal[] = [];
  const sized = settings.messages === 10_000 ? '' : ` (measured on ${settings.messages} messages: BENCH_IMAP_MESSAGES)`;
  for (const dialect of DIALECTS) {
    if (settings.cases.has('mbsync')) out.push(goal(result, `full mbsync pull of a 10,000-message INBOX ≥ 0.5× Dovecot's speed${sized}`, `${dialect} mbsync`, 0.5));
    if (settings.cases.has('fetch')) out.push(goal(result, `${FETCH} ≥ 1.0× Dovecot's speed${sized}`, `${dialect} fetch`, 1));
    if (settings.cases.has('search')) out.push(goal(result, `UID SEARCH TEXT <word in ~1 % of messages> ≥ 1.0× Dovecot's speed${sized}`, `${dialect} search`, 1));
    if (settings.cases.has('idle')) out.push(p99Goal(result, idleCase(dialect), 1000));
  }
  if (settings.cases.has('sessions')) out.push(sessionsGoal(result, settings.sessions));
  return out;
}

async function runSuite(context: SuiteContext): Promise<SuiteResult> {
  const settings = imapSettings();
  const result: SuiteResult = { suite: 'imap', rows: [], skipped: [], failed: [], info: { runs: settings.runs, idle_changes: settings.changes, idle_sessions: settings.sessions, cases: [...settings.cases] } };
  context.log(`  writing the mailbox: ${settings.messages} messages into a Maildir…`);
  const maildir = await writeBenchMaildir(context.workDir, settings.messages, MAILBOX, IDLE_MAILBOX_MESSAGES);
  result.info.mailbox = {
    messages: maildir.messages,
    mib: Math.round((maildir.bytes / 2 ** 20) * 10) / 10,
    multipart: maildir.multipart,
    with_attachment: maildir.withAttachment,
    read: maildir.read,
    search_word: maildir.word,
    messages_with_word: maildir.wordMessages,
    idle_mailbox_messages: maildir.smallCount,
  };
  context.log(`  ${maildir.messages} messages, ${(maildir.bytes / 2 ** 20).toFixed(1)} MiB, ${maildir.multipart} multipart, ${maildir.withAttachment} with an attachment; search word '${maildir.word}' in ${maildir.wordMessages}`);
  const cases = new Set(settings.cases);
  const missing = (what: string, names: CaseName[]) => {
    const skipped = names.filter((c) => cases.delete(c));
    if (skipped.length > 0) result.skipped.push({ case: skipped.join(', '), reason: what });
  };
  if (!existsSync(DOVECOT_BINARY)) missing(`Dovecot is not installed (${DOVECOT_BINARY}): apt-get install -y dovecot-imapd`, ['mbsync', 'fetch', 'search', 'idle']);
  if (!existsSync(MBSYNC)) missing(`mbsync is not installed (${MBSYNC}): apt-get install -y isync`, ['mbsync']);
  for (const s of result.skipped) context.log(`  [${s.case}] skipped: ${s.reason}`);
  await withScope(context.log, async (scope) => {
    const needsDovecot = ['mbsync', 'fetch', 'search', 'idle'].some((c) => cases.has(c as CaseName));
    const dovecot = needsDovecot ? await startBenchDovecot(context, scope, maildir.dir) : null;
    if (dovecot) {
      // Dovecot builds its index at the first SELECT: not part of any measurement.
      await (await inboxSession(dovecotTarget(dovecot), maildir.messages)).close();
      await forEachDialect(context, result, async (dialect) => {
        if (['mbsync', 'fetch', 'search'].some((c) => cases.has(c as CaseName))) await mailboxCases(context, dialect, dovecot, maildir, { ...settings, cases }, result);
        if (cases.has('idle')) await attempt(context, result, idleCase(dialect), () => idleLatencyCase(context, dialect, dovecot, maildir, settings.changes, result.info));
      });
    }
  });
  if (cases.has('sessions')) await attempt(context, result, SESSIONS_CASE, () => sessionsCase(context, maildir, settings.sessions, result.info));
  result.goals = goals(result, { ...settings, cases });
  return result;
}

/** Mailroom's IMAP server beside Dovecot on the same mailbox: mbsync, FETCH, SEARCH, IDLE latency, memory per session. */
export const imapSuite: Suite = {
  name: 'imap',
  description: 'IMAP beside Dovecot on the same 10,000-message mailbox: mbsync pull, FETCH ENVELOPE/BODYSTRUCTURE, SEARCH TEXT, IDLE latency, memory per idle session',
  budgetS: (_s: Readonly<BenchSettings>) => {
    const s = imapSettings();
    // Generous: the writing, an import per database, the runs (mbsync the longest), the IDLE changes and sessions.
    const perDatabase = 120 + s.messages / 50 + s.runs * 2 * (30 + s.messages / 200) + s.changes * 2 * 1.5;
    return 120 + s.messages / 100 + DIALECTS.length * perDatabase + 240 + s.sessions * 0.3;
  },
  run: runSuite,
};
