import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type { Measurement } from '../lib/load.js';
import { BENCH_OWNER, bootstrapTenant, MAILROOM_BIN, mailroomEnv, startMailroom } from '../lib/mailroom.js';
import { withScope } from '../lib/scope.js';
import type { BenchSettings, Goal, ResultRow, Suite, SuiteContext, SuiteResult } from '../lib/suite.js';

/** `mailroom --help` and a client command start in well under this many milliseconds of their own. */
export const OWN_START_GOAL_MS = 150;
/** Timed runs of each command (BENCH_CLI_RUNS); the median is reported. */
const DEFAULT_RUNS = 21;
const MAX_RUNS = 1000;
/** One run of a command that takes longer than this has hung. */
const RUN_TIMEOUT_MS = 30_000;
/** Set-up: migrate, start the server, log in. */
const SETUP_BUDGET_S = 60;

const BASELINE = 'node -e 0';

function runs(): number {
  const raw = process.env.BENCH_CLI_RUNS?.trim();
  if (!raw) return DEFAULT_RUNS;
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > MAX_RUNS) throw new Error(`BENCH_CLI_RUNS=${JSON.stringify(raw)}: expected a whole number 1..${MAX_RUNS}`);
  return Number(raw);
}

interface Command {
  target: string;
  args: string[];
}

/** Wall time of one run of `node <args>`, in milliseconds; throws when it fails. */
function timeRun(command: Command, env: NodeJS.ProcessEnv, cwd: string): number {
  const started = process.hrtime.bigint();
  const result = spawnSync(process.execPath, command.args, { cwd, env, stdio: ['ignore', 'ignore', 'pipe'], timeout: RUN_TIMEOUT_MS });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (result.status !== 0) throw new Error(`${command.target} exited with ${String(result.status ?? result.signal)}: ${result.stderr?.toString().trim() ?? ''}`);
  return ms;
}

const percentile = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))]!;

/** Start-up times as a Measurement: `requestsPerSec` is starts per second at the median (1000 / median ms). */
function measurement(times: number[]): Measurement {
  const sorted = [...times].sort((a, b) => a - b);
  const median = percentile(sorted, 0.5);
  const total = times.reduce((a, b) => a + b, 0);
  return {
    requestsPerSec: 1000 / median,
    latencyMs: { p50: median, p90: percentile(sorted, 0.9), p99: percentile(sorted, 0.99), mean: total / times.length, max: sorted[sorted.length - 1]! },
    totalRequests: times.length,
    durationS: total / 1000,
    connections: 1,
    errors: 0,
    timeouts: 0,
    non2xx: 0,
    serverCpuUsPerRequest: null,
    serverCpuUtilization: null,
  };
}

/**
 * The built CLI's start-up: `mailroom --help`, and `mailroom mailboxes list` logged in to a running server (its
 * time includes one small request), against `node -e 0`. The runs of the three alternate, so that a busy moment
 * of the machine touches each alike; each is reported by its median, and its own time is the median minus the
 * baseline's.
 */
async function runCase(context: SuiteContext, result: SuiteResult): Promise<void> {
  await withScope(context.log, async (scope) => {
    const databaseUrl = `sqlite:${join(context.workDir, 'cli.db')}`;
    await bootstrapTenant(context, databaseUrl);
    const service = await startMailroom(context, scope, databaseUrl, ['api']);
    // The client's own environment: a config directory of its own, no MAILROOM_* of the bench's shell.
    const env = { ...mailroomEnv({}), HOME: context.workDir, XDG_CONFIG_HOME: join(context.workDir, 'cli-config') };
    const login = spawnSync(process.execPath, [MAILROOM_BIN, 'login', '--server', service.url, '--email', BENCH_OWNER.email, '--password-stdin'], {
      cwd: context.workDir,
      env,
      input: `${BENCH_OWNER.password}\n`,
      timeout: RUN_TIMEOUT_MS,
    });
    if (login.status !== 0) throw new Error(`mailroom login failed: ${login.stderr.toString()}`);

    const commands: Command[] = [
      { target: BASELINE, args: ['-e', '0'] },
      { target: 'mailroom --help', args: [MAILROOM_BIN, '--help'] },
      { target: 'mailroom mailboxes list', args: [MAILROOM_BIN, 'mailboxes', 'list'] },
    ];
    const count = runs();
    context.log(`  ${count} runs each of ${commands.map((c) => c.target).join(', ')}…`);
    const times: number[][] = commands.map(() => []);
    // One untimed run each first: the files are then in the page cache, as for anyone who runs the CLI twice.
    for (const command of commands) timeRun(command, env, context.workDir);
    for (let i = 0; i < count; i++) {
      context.signal.throwIfAborted();
      commands.forEach((command, j) => times[j]!.push(timeRun(command, env, context.workDir)));
    }

    const [base, ...subjects] = commands.map((command, j) => ({ command, measurement: measurement(times[j]!) }));
    const baseRate = base!.measurement.requestsPerSec;
    const row = (target: string, role: ResultRow['role'], m: Measurement): ResultRow => ({
      suite: 'cli',
      case: 'start-up',
      target,
      role,
      unit: 'starts/s',
      rate: m.requestsPerSec,
      latencyMs: m.latencyMs,
      ratio: role === 'baseline' ? 1 : m.requestsPerSec / baseRate,
      measurement: m,
    });
    result.rows.push(row(BASELINE, 'baseline', base!.measurement));
    result.goals = [];
    for (const subject of subjects) {
      result.rows.push(row(subject.command.target, 'subject', subject.measurement));
      const own = subject.measurement.latencyMs.p50 - base!.measurement.latencyMs.p50;
      result.info[`${subject.command.target} own ms`] = Math.round(own * 10) / 10;
      const goal: Goal = {
        goal: `${subject.command.target} starts in well under ${OWN_START_GOAL_MS} ms of its own (median minus ${BASELINE})`,
        case: 'start-up',
        minRatio: 0,
        ratio: subject.measurement.requestsPerSec / baseRate,
        met: own < OWN_START_GOAL_MS,
        threshold: `< ${OWN_START_GOAL_MS} ms`,
        measured: `${own.toFixed(1)} ms (median ${subject.measurement.latencyMs.p50.toFixed(1)} ms, ${BASELINE} ${base!.measurement.latencyMs.p50.toFixed(1)} ms)`,
      };
      result.goals.push(goal);
    }
    result.info.runs = count;
  });
}

/** Start-up time of the CLI (`--help`, and a client command against a server) against `node -e 0`. */
export const cliSuite: Suite = {
  name: 'cli',
  description: 'start-up of `mailroom --help` and `mailroom mailboxes list` (logged in) against `node -e 0`, median of BENCH_CLI_RUNS runs',
  budgetS: (_s: Readonly<BenchSettings>) => SETUP_BUDGET_S + (runs() * 3 * RUN_TIMEOUT_MS) / 1000 / 10,
  async run(context: SuiteContext): Promise<SuiteResult> {
    const result: SuiteResult = { suite: 'cli', rows: [], skipped: [], failed: [], info: { database: 'sqlite (the CLI client does not touch it)' } };
    try {
      await runCase(context, result);
    } catch (err) {
      if (context.signal.aborted) throw err;
      result.failed.push({ case: 'start-up', error: err instanceof Error ? err.message : String(err) });
    }
    return result;
  },
};
