import type { Goal, SuiteResult } from './suite.js';

/** What `BENCH_REPEAT` keeps of every repetition of a case, beside the rows of its median one. */
export interface RepeatSummary {
  case: string;
  /** The subject's ratio in each repetition, in the order they ran (null where the case did not run). */
  ratios: Array<number | null>;
  /** Which repetition (0-based) the reported rows come from. */
  reported: number;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

/**
 * One result from several runs of a suite (`BENCH_REPEAT`). Each run measured its baseline and its subject
 * back to back, so each has a ratio of its own; per case the rows reported are those of the run whose ratio is
 * the median (the lower middle one for an even count), so baseline, subject and ratio stay one consistent
 * measurement. A ratio goal is judged on that median; an absolute goal is met when more than half of the runs
 * met it. Every run's ratio is kept under `info.repeats`.
 */
export function mergeRepeats(runs: readonly SuiteResult[]): SuiteResult {
  if (runs.length === 1) return runs[0]!;
  const first = runs[0]!;
  const cases = [...new Set(runs.flatMap((r) => r.rows.map((row) => row.case)))];
  const summaries: RepeatSummary[] = cases.map((caseName) => {
    const ratios = runs.map((r) => r.rows.find((row) => row.case === caseName && row.role === 'subject')?.ratio ?? null);
    const measured = ratios.flatMap((ratio, i) => (ratio === null ? [] : [{ ratio, i }]));
    const middle = measured.length > 0 ? median(measured.map((m) => m.ratio)) : null;
    const reported = middle === null ? runs.findIndex((r) => r.rows.some((row) => row.case === caseName)) : measured.find((m) => m.ratio === middle)!.i;
    return { case: caseName, ratios, reported };
  });
  const rows = summaries.flatMap((s) => runs[s.reported]!.rows.filter((row) => row.case === s.case));

  const goals: Goal[] | undefined = first.goals?.map((template, index) => {
    const all = runs.map((r) => r.goals?.[index]).filter((g): g is Goal => g !== undefined);
    if (template.threshold !== undefined) {
      const met = all.filter((g) => g.met === true).length;
      const judged = all.filter((g) => g.met !== null).length;
      return { ...template, met: judged === 0 ? null : met * 2 > judged, measured: all.map((g) => g.measured ?? '-').join(' / ') };
    }
    const ratios = all.flatMap((g) => (g.ratio === null ? [] : [g.ratio]));
    if (ratios.length === 0) return { ...template, ratio: null, met: null };
    const ratio = median(ratios);
    return { ...template, ratio, met: ratio >= template.minRatio, measured: `${ratio.toFixed(3)}× (median of ${ratios.map((r) => r.toFixed(3)).join(', ')})` };
  });

  return {
    suite: first.suite,
    rows,
    skipped: first.skipped,
    failed: runs.flatMap((r, i) => r.failed.map((f) => ({ case: f.case, error: `run ${i + 1}: ${f.error}` }))),
    info: { ...first.info, repeats: summaries },
    ...(goals ? { goals } : {}),
  };
}
