import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../lib/mailroom.js';
import { freeLoopbackPort, indent, waitForHttp } from '../lib/processes.js';
import { walkthroughBlocks, withPorts } from '../lib/readme.js';
import { withScope } from '../lib/scope.js';
import type { ResultRow, Suite, SuiteContext, SuiteResult } from '../lib/suite.js';

/** `npm ci` on a loaded two-core machine (install, then `prepare` builds) can take minutes. */
const NPM_CI_BUDGET_S = 900;
const STEP_TIMEOUT_MS = 120_000;
/** The README block that hands the first mail to the SMTP listener; the walkthrough runs up to and including it. */
const FIRST_MAIL_BLOCK = /--upload-file mail\.eml/;
/** The mailbox the README's first mail goes to. */
const FIRST_MAILBOX = 'helpdesk@mailroom.localhost';
const STEPS_FILE = '.first-mail-steps';

/** Run `command args` in `cwd` to completion; its wall time in seconds, or an error with its output. */
function timed(context: SuiteContext, command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<number> {
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], signal: AbortSignal.any([context.signal, AbortSignal.timeout(timeoutMs)]) });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(Number(process.hrtime.bigint() - started) / 1e9);
      else reject(new Error(`${command} ${args.join(' ')} exited with ${String(code)}\n${indent(output.slice(-4000))}`));
    });
  });
}

const seconds = (since: bigint): number => Number(process.hrtime.bigint() - since) / 1e9;

/** The README's shell blocks after the server's start, up to the one that sends the first mail, as one script. */
function firstMailScript(readme: string, ports: { http: number; smtp: number }): string {
  const blocks = walkthroughBlocks(readme);
  const start = blocks.findIndex((b) => b.marker === 'background');
  const last = blocks.findIndex((b) => FIRST_MAIL_BLOCK.test(b.code));
  if (start < 0 || last < start) throw new Error('README.md: no server block followed by the first mail (--upload-file mail.eml)');
  const steps = blocks.slice(start + 1, last + 1).filter((b) => b.marker === null);
  // Each block's start and the end go to STEPS_FILE, so the report can say which step takes the time.
  const mark = (label: string) => `printf '%s %s\\n' ${label} "$(date +%s.%N)" >> ${STEPS_FILE}`;
  return ['set -e -o pipefail', ...steps.flatMap((b) => [mark(`README.md:${b.line}`), withPorts(b.code, ports)]), mark('end')].join('\n');
}

/** Seconds of each README step, from the marks firstMailScript leaves in STEPS_FILE. */
function stepSeconds(dir: string): Record<string, number> {
  const marks = readFileSync(join(dir, STEPS_FILE), 'utf8').trim().split('\n').map((l) => l.split(' ') as [string, string]);
  return Object.fromEntries(marks.slice(0, -1).map(([label, at], i) => [label, Math.round((Number(marks[i + 1]![1]) - Number(at)) * 100) / 100]));
}

/** Log in as the README's owner and poll the web app's message list until the first mail is in it. */
async function waitForFirstMail(url: string, signal: AbortSignal): Promise<void> {
  const login = await fetch(`${url}/app/api/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'owner@example.com', password: 's3cret-pass' }),
    signal,
  });
  const { session_token: session } = (await login.json()) as { session_token?: string };
  if (!session) throw new Error(`login as the README's owner failed (HTTP ${login.status})`);
  const deadline = Date.now() + STEP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const list = await fetch(`${url}/app/api/messages?mailbox=${encodeURIComponent(FIRST_MAILBOX)}`, { headers: { 'x-service-session': session }, signal });
    const body = (await list.json()) as { total?: number };
    if ((body.total ?? 0) > 0) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no message in ${FIRST_MAILBOX} within ${STEP_TIMEOUT_MS} ms`);
}

function phaseRow(target: string, s: number): ResultRow {
  return { suite: 'first-mail', case: 'sqlite', target, role: 'subject', unit: 'ms', rate: s * 1000, latencyMs: null, ratio: null, measurement: null };
}

/**
 * From `git clone` of this repository's HEAD to the first mail in the web app's message list, following
 * the README: `npm ci`, `npm run sandbox` (on free ports), then the walkthrough's shell blocks up to the first mail,
 * each phase timed. `npm ci` uses npm's cache and registry as the machine has them.
 */
async function runFirstMail(context: SuiteContext): Promise<SuiteResult> {
  const result: SuiteResult = { suite: 'first-mail', rows: [], skipped: [], failed: [], info: {} };
  const clone = join(context.workDir, 'mailroom');
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', XDG_CONFIG_HOME: join(context.workDir, 'config'), NO_COLOR: '1' };
  const phases: Record<string, number> = {};
  phases.clone = await timed(context, 'git', ['clone', '--quiet', ROOT, clone], context.workDir, env, STEP_TIMEOUT_MS);
  context.log(`  git clone   ${phases.clone.toFixed(1)} s`);
  phases.npmCi = await timed(context, 'npm', ['ci', '--no-audit', '--no-fund'], clone, env, NPM_CI_BUDGET_S * 1000);
  context.log(`  npm ci      ${phases.npmCi.toFixed(1)} s (with the build of prepare)`);
  const ports = { http: await freeLoopbackPort(), smtp: await freeLoopbackPort() };
  await withScope(context.log, async (scope) => {
    const started = process.hrtime.bigint();
    const server = context.processes.start('npm run sandbox', {
      command: 'npm',
      args: ['run', 'sandbox'],
      cwd: clone,
      env: { ...env, MAILROOM_HTTP_PORT: String(ports.http), MAILROOM_SMTP_PORT: String(ports.smtp) },
    });
    scope.defer(server.name, () => server.stop());
    const url = `http://127.0.0.1:${ports.http}`;
    await waitForHttp(`${url}/health`, server, STEP_TIMEOUT_MS, context.signal);
    phases.start = seconds(started);
    context.log(`  start       ${phases.start.toFixed(1)} s (npm run sandbox until /health answers)`);
    const mailStarted = process.hrtime.bigint();
    await timed(context, 'bash', ['-c', firstMailScript(readFileSync(join(clone, 'README.md'), 'utf8'), ports)], clone, env, STEP_TIMEOUT_MS);
    await waitForFirstMail(url, context.signal);
    phases.firstMail = seconds(mailStarted);
    context.log(`  first mail  ${phases.firstMail.toFixed(1)} s (README steps until GET /app/api/messages shows it)`);
    result.info.readmeStepsS = stepSeconds(clone);
    context.log(`  README steps (s): ${JSON.stringify(result.info.readmeStepsS)}`);
  });
  const total = Object.values(phases).reduce((a, b) => a + b, 0);
  result.rows.push(phaseRow('git clone', phases.clone), phaseRow('npm ci', phases.npmCi), phaseRow('npm run sandbox', phases.start!), phaseRow('README to first mail', phases.firstMail!), phaseRow('total', total));
  result.info = { ...result.info, phasesS: phases, totalS: total, node: process.version };
  return result;
}

export const firstMailSuite: Suite = {
  name: 'first-mail',
  description: 'time from git clone through npm ci and npm run sandbox to the README\'s first mail in the web app',
  budgetS: () => NPM_CI_BUDGET_S + 4 * (STEP_TIMEOUT_MS / 1000),
  run: runFirstMail,
};
