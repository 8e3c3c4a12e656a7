import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import type { Dialect } from '../lib/databases.js';
import { DIALECTS, forEachDialect, freshDatabase } from '../lib/dialects.js';
import { fillMailbox } from '../lib/fill.js';
import { settleAfterBulkLoad } from '../lib/store.js';
import { importMaildir } from '../lib/imap-mailroom.js';
import type { Measurement } from '../lib/load.js';
import { BENCH_DOMAIN, BENCH_OWNER, bootstrapTenant, createMailbox, startMailroom } from '../lib/mailroom.js';
import { withScope } from '../lib/scope.js';
import { latencyStats } from '../lib/smtp-load.js';
import { pairRows, type BenchSettings, type Goal, type ResultRow, type Suite, type SuiteContext, type SuiteResult } from '../lib/suite.js';

/**
 * `npm run bench -- web`: the web app in Debian's Chromium, conversation view on (the default), against a mailbox of
 * BENCH_WEB_MESSAGES (100,000) messages and, newest, a conversation of THREAD_MESSAGES: from pressing "Log in" to the
 * inbox's first page on screen, from a click on a message to its body on screen, and from a click on the long
 * conversation to its stacked page, each timed by the browser, against loading the app's login page (no API). The
 * longest task the page's main thread ran in a round (PerformanceObserver 'longtask') is kept too.
 */
const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];
const MAILBOX = `web@${BENCH_DOMAIN}`;
const DEFAULT_MESSAGES = 100_000;
const FILL_TIMEOUT_S = 1200;
/** Timed rounds per case (each a fresh tab: log in, first page, open a message). */
const ROUNDS = 15;
const LOGIN_GOAL_MS = 1000;
const OPEN_GOAL_MS = 300;
const THREAD_GOAL_MS = 1000;
const LONG_TASK_GOAL_MS = 200;
/** Messages of the conversation a round opens, and its subject. */
const THREAD_MESSAGES = 50;
const THREAD_SUBJECT = 'Bench conversation';
/** Records the page's long tasks from its start (a browser API: the app's code is not touched). */
const LONG_TASKS = `window.__longTasks = [];
new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__longTasks.push(e.duration); }).observe({ type: 'longtask', buffered: true });`;

function messageCount(): number {
  const raw = process.env.BENCH_WEB_MESSAGES?.trim();
  if (!raw) return DEFAULT_MESSAGES;
  if (!/^\d+$/.test(raw) || Number(raw) < 50) throw new Error(`BENCH_WEB_MESSAGES=${JSON.stringify(raw)}: expected a whole number ≥ 50`);
  return Number(raw);
}

const asMeasurement = (samples: number[]): Measurement => {
  const latencyMs = latencyStats(samples);
  const total = samples.reduce((a, b) => a + b, 0);
  return { requestsPerSec: total > 0 ? (samples.length * 1000) / total : 0, latencyMs, totalRequests: samples.length, durationS: total / 1000, connections: 1, errors: 0, timeouts: 0, non2xx: 0, serverCpuUsPerRequest: null, serverCpuUtilization: null };
};

/** A Maildir of one conversation, newer than the filled mail (each file's mtime is when it arrived). */
function writeThread(dir: string, dialect: Dialect): string {
  // One per database: the work directory is the run's, shared by both.
  const maildir = join(dir, `thread-maildir-${dialect}`);
  rmSync(maildir, { recursive: true, force: true });
  for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(maildir, sub), { recursive: true });
  const start = Date.now() - THREAD_MESSAGES * 1000;
  for (let i = 0; i < THREAD_MESSAGES; i++) {
    const at = new Date(start + i * 1000);
    const headers = [
      `From: Person ${i % 7} <person${i % 7}@sender.test>`,
      `To: ${MAILBOX}`,
      `Subject: ${i === 0 ? '' : 'Re: '}${THREAD_SUBJECT}`,
      `Date: ${at.toUTCString()}`,
      `Message-ID: <bench-thread-${i}@sender.test>`,
      ...(i === 0 ? [] : [`In-Reply-To: <bench-thread-${i - 1}@sender.test>`, `References: <bench-thread-0@sender.test> <bench-thread-${i - 1}@sender.test>`]),
      'Content-Type: text/plain; charset=utf-8',
    ];
    const file = join(maildir, 'cur', `${at.getTime()}.${i}.bench:2,${i < THREAD_MESSAGES - 3 ? 'S' : ''}`);
    writeFileSync(file, `${headers.join('\r\n')}\r\n\r\nMessage ${i} of the conversation.\r\n${'Some words of the answer. '.repeat(20)}\r\n`);
    utimesSync(file, at, at);
  }
  return maildir;
}

interface Round {
  page: number;
  login: number;
  open: number;
  thread: number;
  longTask: number;
}

/**
 * One round in a fresh tab: the login page alone, then log in → first page, open the newest single message, back, and
 * open the long conversation (timed until all its messages are listed and an open one's body is on screen).
 */
async function round(context: BrowserContext, url: string): Promise<Round> {
  const tab: Page = await context.newPage();
  try {
    await tab.addInitScript(LONG_TASKS);
    const loadStart = performance.now();
    await tab.goto(`${url}/login`);
    await tab.getByLabel('Email').waitFor();
    const page = performance.now() - loadStart;
    await tab.getByLabel('Email').fill(BENCH_OWNER.email);
    await tab.getByLabel('Password').fill(BENCH_OWNER.password);
    const loginStart = performance.now();
    await tab.getByRole('button', { name: 'Log in' }).click();
    await tab.locator('.messages li').first().waitFor();
    const login = performance.now() - loginStart;
    const single = tab.locator('.messages li').filter({ hasNotText: THREAD_SUBJECT }).first();
    const openStart = performance.now();
    await single.click();
    await tab.locator('iframe.message-frame').waitFor();
    const open = performance.now() - openStart;
    await tab.goBack();
    const long = tab.locator('.messages li').filter({ hasText: THREAD_SUBJECT });
    await long.waitFor();
    const threadStart = performance.now();
    await long.click();
    await tab.getByRole('list', { name: 'Messages of the conversation' }).getByRole('listitem').nth(THREAD_MESSAGES - 1).waitFor();
    await tab.locator('iframe.message-frame').first().waitFor();
    const thread = performance.now() - threadStart;
    const longTask = await tab.evaluate<number>('Math.max(0, ...window.__longTasks)');
    return { page, login, open, thread, longTask };
  } finally {
    await tab.close();
  }
}

async function runCase(context: SuiteContext, dialect: Dialect, messages: number, info: Record<string, unknown>): Promise<ResultRow[]> {
  return withScope(context.log, async (scope) => {
    const database = await freshDatabase(context, scope, dialect, 'web');
    const tenant = await bootstrapTenant(context, database.url);
    const service = await startMailroom(context, scope, database.url, ['api'], { profileName: `mailroom-api-web-${dialect}` });
    await createMailbox(service.url, tenant.apiKey, MAILBOX, 'Web bench mailbox', context.signal);
    info[`${dialect}_fill`] = await fillMailbox(context, database, MAILBOX, messages, FILL_TIMEOUT_S);
    await importMaildir(context, database, MAILBOX, writeThread(context.workDir, dialect), THREAD_MESSAGES);
    await settleAfterBulkLoad(database);
    const profile = mkdtempSync(join(context.workDir, 'chromium-'));
    const browser = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS, viewport: { width: 1280, height: 800 } });
    scope.defer('chromium', async () => {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    });
    await round(browser, service.url); // warm-up: the server's statement caches and the browser's disk cache
    const samples = { page: [] as number[], login: [] as number[], open: [] as number[], thread: [] as number[], longTask: [] as number[] };
    for (let i = 0; i < ROUNDS; i++) {
      context.signal.throwIfAborted();
      const r = await round(browser, service.url);
      for (const key of Object.keys(samples) as Array<keyof Round>) samples[key].push(r[key]);
    }
    const longest = Math.round(Math.max(...samples.longTask));
    info[`${dialect}_longest_task_ms`] = longest;
    const base = { target: 'the login page alone (static files)', measurement: asMeasurement(samples.page) };
    context.log(
      `  [${dialect}] median ms: login page ${base.measurement.latencyMs.p50}, log in → first page ${latencyStats(samples.login).p50}, open a message ${latencyStats(samples.open).p50}, open a ${THREAD_MESSAGES}-message conversation ${latencyStats(samples.thread).p50}; longest task ${longest} ms`,
    );
    return [
      ...pairRows('web', `${dialect}, log in → first page`, 'rounds/s', base, { target: 'mailroom web app', measurement: asMeasurement(samples.login) }),
      ...pairRows('web', `${dialect}, open a message`, 'rounds/s', base, { target: 'mailroom web app', measurement: asMeasurement(samples.open) }).slice(1),
      ...pairRows('web', `${dialect}, open a ${THREAD_MESSAGES}-message conversation`, 'rounds/s', base, { target: 'mailroom web app', measurement: asMeasurement(samples.thread) }).slice(1),
    ];
  });
}

function timeGoal(result: SuiteResult, name: string, limitMs: number, text: string): Goal {
  const row = result.rows.find((r) => r.case === name && r.role === 'subject');
  const threshold = `p90 ≤ ${limitMs} ms`;
  if (!row?.latencyMs) return { goal: text, case: name, minRatio: 1, ratio: null, met: null, threshold };
  return { goal: text, case: name, minRatio: 1, ratio: row.ratio, met: row.latencyMs.p90 <= limitMs, threshold, measured: `p90 ${Math.round(row.latencyMs.p90)} ms` };
}

function longTaskGoal(measured: unknown, name: string): Goal {
  const threshold = `≤ ${LONG_TASK_GOAL_MS} ms`;
  const text = `no task of the page's main thread longer than ${LONG_TASK_GOAL_MS} ms`;
  if (typeof measured !== 'number') return { goal: text, case: name, minRatio: 1, ratio: null, met: null, threshold };
  return { goal: text, case: name, minRatio: 1, ratio: null, met: measured <= LONG_TASK_GOAL_MS, threshold, measured: `${measured} ms` };
}

export const webSuite: Suite = {
  name: 'web',
  description: `the web app in Chromium, conversation view, on a mailbox of ${DEFAULT_MESSAGES.toLocaleString('en')} messages: log in → first page, open a message, open a ${THREAD_MESSAGES}-message conversation (vs the login page alone); the longest task`,
  budgetS: (_s: Readonly<BenchSettings>) => DIALECTS.length * (FILL_TIMEOUT_S + 300),
  async run(context: SuiteContext): Promise<SuiteResult> {
    const messages = messageCount();
    const result: SuiteResult = { suite: 'web', rows: [], skipped: [], failed: [], info: { messages, rounds: ROUNDS, browser: CHROMIUM } };
    await forEachDialect(context, result, async (dialect) => {
      try {
        result.rows.push(...(await runCase(context, dialect, messages, result.info)));
      } catch (err) {
        if (context.signal.aborted) throw err;
        const why = err instanceof Error ? err.message : String(err);
        context.log(`  [${dialect}] FAILED: ${why}`);
        result.failed.push({ case: dialect, error: why });
      }
    });
    result.goals = DIALECTS.flatMap((d) => [
      timeGoal(result, `${d}, log in → first page`, LOGIN_GOAL_MS, `the inbox's first page on screen ≤ 1 s after login (${messages.toLocaleString('en')} messages)`),
      timeGoal(result, `${d}, open a message`, OPEN_GOAL_MS, 'opening a message ≤ 300 ms'),
      timeGoal(result, `${d}, open a ${THREAD_MESSAGES}-message conversation`, THREAD_GOAL_MS, `opening a conversation of ${THREAD_MESSAGES} messages ≤ 1 s`),
      longTaskGoal(result.info[`${d}_longest_task_ms`], `${d}, longest task`),
    ]);
    return result;
  },
};
