/**
 * `npm run bench [-- <suite>…]`: load benchmarks that print ratios against a baseline measured in the
 * same run. No argument runs every suite; `--list` names them. Not part of `npm test`.
 *
 * Environment: BENCH_DURATION_S (10), BENCH_WARMUP_S (2), BENCH_CONNECTIONS (50),
 * BENCH_CPU_PROFILE (1: server children write .cpuprofile files to bench/results/profiles/),
 * BENCH_INBOX_MESSAGES (100000: messages in the inbox suite's mailbox), BENCH_SEARCH_MESSAGES (1000000: in the search suite's),
 * BENCH_IMAP_MESSAGES (10000: the imap suite's mailbox; see bench/README.md for its other settings), BENCH_CLI_RUNS (21: timed runs of each command
 * in the cli suite), BENCH_REPEAT (1: runs of each suite; the
 * report gives each case's run with the median ratio),
 * MAILROOM_BENCH_PG_URL (postgres://postgres@127.0.0.1:5432/postgres), MAILROOM_BENCH_BIN (another
 * build's bin/mailroom.js, to compare two builds).
 * Results: a table on stdout and bench/results/latest.json.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { SERVER_NODE_FLAGS } from '../src/cli/node-flags.js';
import { ensureBuilt, MAILROOM_BIN, ROOT, serviceEnvOverrides } from './lib/mailroom.js';
import { ProcessGroup } from './lib/processes.js';
import { formatTable, writeReport, type Report } from './lib/report.js';
import { mergeRepeats } from './lib/repeat.js';
import type { BenchSettings, Suite, SuiteResult } from './lib/suite.js';
import { batchSuite } from './suites/batch.suite.js';
import { attachmentSuite } from './suites/attachment.suite.js';
import { cliSuite } from './suites/cli.suite.js';
import { firstMailSuite } from './suites/first-mail.suite.js';
import { hostileSuite } from './suites/hostile.suite.js';
import { httpSuite } from './suites/http.suite.js';
import { imapSuite } from './suites/imap.suite.js';
import { inboxSuite } from './suites/inbox.suite.js';
import { outboundSuite } from './suites/outbound.suite.js';
import { searchSuite } from './suites/search.suite.js';
import { smtpSuite } from './suites/smtp.suite.js';
import { streamSuite } from './suites/stream.suite.js';
import { transactionalSuite } from './suites/transactional.suite.js';
import { webhooksSuite } from './suites/webhooks.suite.js';
import { webSuite } from './suites/web.suite.js';

/** Every suite, in the order a bare `npm run bench` runs them. Add new suites here. */
const SUITES: readonly Suite[] = [httpSuite, smtpSuite, inboxSuite, outboundSuite, transactionalSuite, batchSuite, webhooksSuite, hostileSuite, cliSuite, streamSuite, searchSuite, webSuite, firstMailSuite, attachmentSuite, imapSuite];

const RESULTS_FILE = join(ROOT, 'bench', 'results', 'latest.json');
const PROFILE_DIR = join(ROOT, 'bench', 'results', 'profiles');
/** After Ctrl-C, how long clean-up may take before children are killed and the bench exits. */
const FORCE_EXIT_MS = 15_000;

class UsageError extends Error {}

function positiveInt(name: string, fallback: number, max: number): number {
  const raw = process.env[name]?.trim();
  if (!raw) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > max) throw new UsageError(`${name}=${JSON.stringify(raw)}: expected a whole number 1..${max}`);
  return Number(raw);
}

function nonNegativeInt(name: string, fallback: number, max: number): number {
  const raw = process.env[name]?.trim();
  if (!raw) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) > max) throw new UsageError(`${name}=${JSON.stringify(raw)}: expected a whole number 0..${max}`);
  return Number(raw);
}

function readSettings(): BenchSettings {
  return {
    durationS: positiveInt('BENCH_DURATION_S', 10, 3600),
    warmupS: nonNegativeInt('BENCH_WARMUP_S', 2, 600),
    connections: positiveInt('BENCH_CONNECTIONS', 50, 10_000),
    cpuProfileDir: process.env.BENCH_CPU_PROFILE === '1' ? PROFILE_DIR : null,
    serviceEnv: serviceEnvOverrides(),
    // Unset: the flags `npm start` gives; set (even empty): exactly these, to measure a flag.
    serverNodeFlags: (process.env.BENCH_NODE_FLAGS ?? SERVER_NODE_FLAGS.join(' ')).split(' ').filter(Boolean),
    repeat: positiveInt('BENCH_REPEAT', 1, 20),
  };
}

function usage(): string {
  const names = SUITES.map((s) => `  ${s.name.padEnd(10)} ${s.description}`).join('\n');
  return [
    'usage: npm run bench [-- <suite>…]      (no suite: run all)',
    '       npm run bench -- --list',
    '',
    'suites:',
    names,
    '',
    'environment: BENCH_DURATION_S (10), BENCH_WARMUP_S (2), BENCH_CONNECTIONS (50), BENCH_CPU_PROFILE (1: --cpu-prof',
    '             every server child into bench/results/profiles/),',
    '             MAILROOM_BENCH_PG_URL (postgres://postgres@127.0.0.1:5432/postgres; loopback only),',
    '             MAILROOM_BENCH_BIN (another build\'s bin/mailroom.js, e.g. in a git worktree; not rebuilt),',
    '             BENCH_INBOX_MESSAGES (100000: messages in the inbox suite\'s mailbox),',
    '             BENCH_SEARCH_MESSAGES (1000000: messages in the search suite\'s workspace),',
    '             BENCH_CLI_RUNS (21: timed runs of each command in the cli suite),',
    '             BENCH_IMAP_MESSAGES (10000), BENCH_IMAP_RUNS (5), BENCH_IMAP_IDLE_CHANGES (100), BENCH_IMAP_IDLE_SESSIONS (10000),',
    '             BENCH_IMAP_CASES (all: mbsync,fetch,search,idle,sessions): the imap suite,',
    '             BENCH_SERVICE_ENV (\'MAILROOM_X=v …\': settings for every Mailroom child, to try a tuning),',
    '             BENCH_REPEAT (1: runs of each suite; each case reported from its run with the median ratio)',
  ].join('\n');
}

function selectSuites(args: readonly string[]): Suite[] {
  if (args.length === 0) return [...SUITES];
  const chosen: Suite[] = [];
  for (const arg of args) {
    const suite = SUITES.find((s) => s.name === arg);
    if (!suite) throw new UsageError(`unknown suite '${arg}' (known: ${SUITES.map((s) => s.name).join(', ')})`);
    if (!chosen.includes(suite)) chosen.push(suite);
  }
  return chosen;
}

function gitRevision(): string | null {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, timeout: 5000, stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: ROOT, timeout: 5000, stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim() !== '';
    return dirty ? `${head}+dirty-src` : head;
  } catch {
    return null;
  }
}

function environment(): Record<string, unknown> {
  const cpu = cpus();
  return {
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    cpus: cpu.length,
    cpu_model: cpu[0]?.model ?? null,
    memory_gib: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    load_average_at_start: loadavg().map((n) => Math.round(n * 100) / 100),
    git: gitRevision(),
    mailroom_bin: MAILROOM_BIN,
  };
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

async function main(): Promise<number> {
  const args = process.argv.slice(2).filter((a) => a !== '--');
  if (args.includes('--help') || args.includes('-h')) {
    console.log(usage());
    return 0;
  }
  if (args.includes('--list')) {
    for (const s of SUITES) console.log(`${s.name}\t${s.description}`);
    return 0;
  }
  const suites = selectSuites(args);
  const settings = readSettings();

  const processes = new ProcessGroup();
  const workDir = mkdtempSync(join(tmpdir(), 'mailroom-bench-'));
  // Whatever ends this process, no child and no temp file outlives it.
  process.on('exit', () => {
    processes.killAllNow();
    rmSync(workDir, { recursive: true, force: true });
  });

  const controller = new AbortController();
  let interruptedBy: string | null = null;
  const onSignal = (signal: NodeJS.Signals) => {
    if (interruptedBy) {
      console.error(`${signal} again: killing child processes now`);
      process.exit(130);
    }
    interruptedBy = signal;
    console.error(`\n${signal}: stopping the load and the child processes…`);
    controller.abort(new Error(`interrupted by ${signal}`));
    setTimeout(() => {
      console.error(`clean-up took over ${FORCE_EXIT_MS / 1000} s: killing child processes`);
      process.exit(130);
    }, FORCE_EXIT_MS).unref();
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, onSignal);

  const log = (line: string) => console.error(line);
  const startedAt = new Date();
  const results: SuiteResult[] = [];
  const errors: Report['errors'] = [];
  try {
    log(`mailroom bench: ${suites.map((s) => s.name).join(', ')} — ${settings.durationS} s per target after ${settings.warmupS} s warm-up, ${settings.connections} connections`);
    if (settings.cpuProfileDir) log(`CPU profiles (they slow the servers down; ratios are not comparable): ${settings.cpuProfileDir}`);
    await ensureBuilt(processes, log);
    for (const suite of suites) {
      if (controller.signal.aborted) break;
      const budgetS = suite.budgetS(settings);
      const runs: SuiteResult[] = [];
      for (let run = 1; run <= settings.repeat && !controller.signal.aborted; run++) {
        const signal = AbortSignal.any([controller.signal, AbortSignal.timeout(budgetS * 1000)]);
        log(`\n▶ ${suite.name}${settings.repeat > 1 ? ` (run ${run} of ${settings.repeat})` : ''}: ${suite.description}`);
        try {
          runs.push(await suite.run({ settings, processes, workDir, signal, log }));
        } catch (err) {
          const why = controller.signal.aborted ? message(controller.signal.reason) : signal.aborted ? `exceeded its budget of ${budgetS} s` : message(err);
          log(`  suite ${suite.name} failed: ${why}`);
          errors.push({ suite: suite.name, error: settings.repeat > 1 ? `run ${run}: ${why}` : why });
        } finally {
          // A suite cleans up after itself; this catches whatever it left running.
          if (processes.size > 0) await processes.stopAll();
        }
      }
      if (runs.length > 0) results.push(mergeRepeats(runs));
    }
  } finally {
    await processes.stopAll();
  }

  const report: Report = {
    started_at: startedAt.toISOString(),
    finished_at: new Date().toISOString(),
    suites_requested: suites.map((s) => s.name),
    settings,
    environment: environment(),
    results,
    errors,
  };
  console.log(`\n${formatTable(results)}`);
  console.log(
    [
      '',
      'throughput: req/s = mean of per-second samples; msg/s = messages ÷ wall time of the measured run.',
      'vs baseline: subject ÷ baseline throughput of the same case (higher is better).',
      'p50/p99 ms: per request; for smtp-source cases from a latency probe (one message every 100 ms beside the load).',
      'server CPU/op: CPU time the server process spent per request or message during the run; in brackets its share of',
      'one core (about 100% = its event loop was the bottleneck). Steadier than req/s when other work shares the machine.',
      ...(results.some((r) => r.rows.some((row) => row.role === 'reference'))
        ? ['vs <reference>: subject ÷ a further baseline of the same case (smtp: Postfix, timed from the first message to the', 'last file in its Maildir; its CPU/op is master(8) and all its daemons).']
        : []),
      ...(results.some((r) => r.suite === 'outbound')
        ? ['outbound: msg/s from the first send to the last acceptance; CPU/op is the sender\'s (the bench process for nodemailer);', 'the service\'s p50/p99 are POST /send answer times (queued), not delivery times.']
        : []),
      ...(results.some((r) => r.suite === 'imap')
        ? ['imap: msg/s = messages ÷ the median run (mbsync, FETCH); searches/s = 1 ÷ the median search; notif/s = 1000 ÷ the mean', 'IDLE latency (p50/p99: the latencies); CPU/op: Mailroom\'s process, or Dovecot\'s master and all its children.']
        : []),
      ...(results.some((r) => r.suite === 'stream')
        ? ['stream: p50/p99 are arrival at the SSE reader − the event\'s created_at (set inside the writing transaction, so they', 'include the commit); events/s is the fixed send rate; CPU/op is all the service\'s processes per event (ingest included).']
        : []),
    ].join('\n'),
  );
  if (!interruptedBy) {
    writeReport(RESULTS_FILE, report);
    console.log(`results: ${RESULTS_FILE}`);
  }
  if (interruptedBy) return 130;
  return errors.length > 0 || results.some((r) => r.failed.length > 0) ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof UsageError) {
      console.error(`bench: ${err.message}\n\n${usage()}`);
      process.exit(2);
    }
    console.error('bench failed:', err);
    process.exit(1);
  },
);
