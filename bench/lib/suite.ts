import { join } from 'node:path';
import type { Measurement } from './load.js';
import type { ProcessGroup } from './processes.js';

/** Knobs shared by every suite, read from the environment by run.ts. */
export interface BenchSettings {
  /** Measured seconds per target (BENCH_DURATION_S). */
  durationS: number;
  /** Discarded warm-up seconds before each measurement (BENCH_WARMUP_S). */
  warmupS: number;
  /** Concurrent connections of the load generator (BENCH_CONNECTIONS). */
  connections: number;
  /** When set (BENCH_CPU_PROFILE=1), servers run with --cpu-prof and write their profiles here. */
  cpuProfileDir: string | null;
  /** MAILROOM_* settings given to every Mailroom child (BENCH_SERVICE_ENV), recorded with the results. */
  serviceEnv: Record<string, string>;
  /** Runs of each suite (BENCH_REPEAT); the report gives each case's median run (lib/repeat.ts). */
  repeat: number;
}

/**
 * Node flags for a server child: --cpu-prof when profiling is on. Each child gets its own directory
 * and Node's default file names, because a child with loader threads (`--import tsx`) writes one
 * profile per thread and a fixed --cpu-prof-name would let them overwrite each other.
 */
export function profileFlags(settings: Readonly<BenchSettings>, name: string): string[] {
  return settings.cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${join(settings.cpuProfileDir, `${name}-${Date.now()}`)}`] : [];
}

export interface SuiteContext {
  settings: Readonly<BenchSettings>;
  /** Every child process goes through this group, so the runner can always kill it. */
  processes: ProcessGroup;
  /** A private temporary directory for this run (removed at the end). */
  workDir: string;
  /** Aborted on Ctrl-C/SIGTERM or when the suite overruns its budget. */
  signal: AbortSignal;
  log: (line: string) => void;
}

/**
 * One line of the report. A suite measures a subject against a baseline measured in the same run
 * (the ratio, not the absolute number, is what stays comparable across machines).
 */
export interface ResultRow {
  suite: string;
  /** A variant of the suite, e.g. the database. */
  case: string;
  target: string;
  role: 'baseline' | 'subject';
  /** What `rate` counts, e.g. "req/s" or "msg/s". */
  unit: string;
  rate: number;
  latencyMs: Measurement['latencyMs'] | null;
  /** subject rate ÷ baseline rate of the same case; 1 for the baseline itself. */
  ratio: number | null;
  measurement: Measurement | null;
}

export interface SuiteResult {
  suite: string;
  rows: ResultRow[];
  /** Cases that could not run here, and why (e.g. PostgreSQL not answering). */
  skipped: Array<{ case: string; reason: string }>;
  /** Cases that were attempted and failed. */
  failed: Array<{ case: string; error: string }>;
  /** Facts worth keeping beside the numbers (database URLs, body sizes…). */
  info: Record<string, unknown>;
  /** Targets the suite is held to (a ratio against its baseline), printed beside the table. */
  goals?: Goal[];
}

/** "The subject of `case` reaches at least `minRatio` × its baseline." */
export interface Goal {
  /** The goal as stated (e.g. in the issue that asked for it). */
  goal: string;
  case: string;
  minRatio: number;
  /** The measured ratio; null when the case did not run. */
  ratio: number | null;
  /** null when the case did not run. */
  met: boolean | null;
  /** An absolute goal instead of a ratio (e.g. "≥ 1,000 deliveries/s"): printed instead of "≥ minRatio× baseline". */
  threshold?: string;
  /** The measured value of an absolute goal, as printed (e.g. "1,234 deliveries/s"). */
  measured?: string;
}

/** Check `minRatio` against the subject row of `caseName` (null ratio when that case has no row). */
export function goal(result: SuiteResult, text: string, caseName: string, minRatio: number): Goal {
  const row = result.rows.find((r) => r.case === caseName && r.role === 'subject');
  const ratio = row?.ratio ?? null;
  return { goal: text, case: caseName, minRatio, ratio, met: ratio === null ? null : ratio >= minRatio };
}

export interface Suite {
  /** The name given on the command line: `npm run bench -- <name>`. */
  name: string;
  description: string;
  /** The longest this suite may take with these settings; the runner aborts it after that. */
  budgetS(settings: Readonly<BenchSettings>): number;
  run(context: SuiteContext): Promise<SuiteResult>;
}

/** A baseline row and its subject row, with the subject's ratio filled in. */
export function pairRows(
  suite: string,
  caseName: string,
  unit: string,
  baseline: { target: string; measurement: Measurement },
  subject: { target: string; measurement: Measurement },
): ResultRow[] {
  const base = baseline.measurement.requestsPerSec;
  return [
    { suite, case: caseName, target: baseline.target, role: 'baseline', unit, rate: base, latencyMs: baseline.measurement.latencyMs, ratio: 1, measurement: baseline.measurement },
    {
      suite,
      case: caseName,
      target: subject.target,
      role: 'subject',
      unit,
      rate: subject.measurement.requestsPerSec,
      latencyMs: subject.measurement.latencyMs,
      ratio: base > 0 ? subject.measurement.requestsPerSec / base : null,
      measurement: subject.measurement,
    },
  ];
}
