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
  /** Node flags of every `mailroom serve` child (BENCH_NODE_FLAGS; by default those `npm start` gives). */
  serverNodeFlags: readonly string[];
}

/**
 * Node flags for a server child: --cpu-prof when profiling is on. Each child gets its own directory
 * and Node's default file names, because a child with loader threads (`--import tsx`) writes one
 * profile per thread and a fixed --cpu-prof-name would let them overwrite each other.
 */
export function profileFlags(settings: Readonly<BenchSettings>, name: string): string[] {
  return settings.cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${join(settings.cpuProfileDir, `${name}-${Date.now()}`)}`] : [];
}

/** Node flags for a `mailroom serve` child: the server's own (as `npm start` runs it), then profiling's. */
export function serverFlags(settings: Readonly<BenchSettings>, name: string): string[] {
  return [...settings.serverNodeFlags, ...profileFlags(settings, name)];
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
  /** `reference`: a further baseline of the same case (e.g. Postfix beside the bare sink), see `versus`. */
  role: 'baseline' | 'subject' | 'reference';
  /** What `rate` counts, e.g. "req/s" or "msg/s". */
  unit: string;
  rate: number;
  latencyMs: Measurement['latencyMs'] | null;
  /** subject (or reference) rate ÷ baseline rate of the same case; 1 for the baseline itself. */
  ratio: number | null;
  measurement: Measurement | null;
  /**
   * On a subject row: its rate ÷ each reference's of the same case, by the reference's short name (printed as a
   * `vs <name>` column), or why that reference could not be measured.
   */
  versus?: Record<string, { ratio: number } | { unavailable: string }>;
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
  /** A ratio against a reference (a key of the subject row's `versus`, e.g. "postfix") instead of the baseline. */
  against?: string;
}

/**
 * Check `minRatio` against the subject row of `caseName` (null ratio when that case has no row, or when the
 * reference named in `against` could not be measured): its ratio to the baseline, or to that reference.
 */
export function goal(result: SuiteResult, text: string, caseName: string, minRatio: number, against?: string): Goal {
  const row = result.rows.find((r) => r.case === caseName && r.role === 'subject');
  const versus = against === undefined ? undefined : row?.versus?.[against];
  const ratio = against === undefined ? (row?.ratio ?? null) : versus && 'ratio' in versus ? versus.ratio : null;
  return { goal: text, case: caseName, minRatio, ratio, met: ratio === null ? null : ratio >= minRatio, ...(against === undefined ? {} : { against }) };
}

export interface Suite {
  /** The name given on the command line: `npm run bench -- <name>`. */
  name: string;
  description: string;
  /** The longest this suite may take with these settings; the runner aborts it after that. */
  budgetS(settings: Readonly<BenchSettings>): number;
  run(context: SuiteContext): Promise<SuiteResult>;
}

/**
 * The row of a reference measured beside the baseline of a case (its ratio is to that baseline), and the subject row's
 * `versus` entry for it; without a measurement, only the entry saying why.
 */
export function addReference(rows: ResultRow[], name: string, reference: { target: string; measurement: Measurement } | { unavailable: string }): void {
  const baseline = rows.find((r) => r.role === 'baseline');
  const subject = rows.find((r) => r.role === 'subject');
  if (!baseline || !subject) throw new Error('addReference: the rows need a baseline and a subject');
  if ('unavailable' in reference) {
    subject.versus = { ...subject.versus, [name]: { unavailable: reference.unavailable } };
    return;
  }
  const rate = reference.measurement.requestsPerSec;
  rows.splice(rows.indexOf(baseline) + 1, 0, {
    ...baseline,
    target: reference.target,
    role: 'reference',
    rate,
    latencyMs: reference.measurement.latencyMs,
    ratio: baseline.rate > 0 ? rate / baseline.rate : null,
    measurement: reference.measurement,
    versus: { [name]: { ratio: 1 } },
  });
  subject.versus = { ...subject.versus, [name]: rate > 0 ? { ratio: subject.rate / rate } : { unavailable: `${reference.target} measured 0 ${subject.unit}` } };
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
