import { describe, expect, it } from 'vitest';
import { mergeRepeats } from '../bench/lib/repeat.js';
import type { ResultRow, SuiteResult } from '../bench/lib/suite.js';

const row = (caseName: string, role: 'baseline' | 'subject', rate: number, ratio: number): ResultRow => ({
  suite: 's',
  case: caseName,
  target: role === 'baseline' ? 'bare' : 'mailroom',
  role,
  unit: 'msg/s',
  rate,
  latencyMs: null,
  ratio,
  measurement: null,
});

/** One run of a suite with one case: a baseline at `base` msg/s and a subject at `subject` msg/s. */
function run(base: number, subject: number, absoluteMet: boolean): SuiteResult {
  const ratio = subject / base;
  return {
    suite: 's',
    rows: [row('c', 'baseline', base, 1), row('c', 'subject', subject, ratio)],
    skipped: [],
    failed: [],
    info: { note: 'kept' },
    goals: [
      { goal: 'ratio goal', case: 'c', minRatio: 0.55, ratio, met: ratio >= 0.55 },
      { goal: 'absolute goal', case: 'c', minRatio: 0, ratio: null, met: absoluteMet, threshold: 'p99 < 250 ms', measured: absoluteMet ? 'p99 100 ms' : 'p99 300 ms' },
    ],
  };
}

describe('bench: BENCH_REPEAT keeps the median run of each case', () => {
  it('reports the rows of the run with the median ratio and judges the ratio goal on it', () => {
    const merged = mergeRepeats([run(1000, 500, true), run(1000, 700, false), run(500, 300, true)]);
    // Ratios 0.5, 0.7, 0.6: the third run is the median one, baseline and subject from that same run.
    expect(merged.rows.map((r) => r.rate)).toEqual([500, 300]);
    expect(merged.goals?.[0]).toMatchObject({ ratio: 0.6, met: true, measured: '0.600× (median of 0.500, 0.700, 0.600)' });
    expect(merged.info).toMatchObject({ note: 'kept', repeats: [{ case: 'c', ratios: [0.5, 0.7, 0.6], reported: 2 }] });
  });

  it('meets an absolute goal only when more than half of the runs met it, and shows every run', () => {
    expect(mergeRepeats([run(1000, 500, true), run(1000, 700, false), run(500, 300, true)]).goals?.[1]).toMatchObject({ met: true, measured: 'p99 100 ms / p99 300 ms / p99 100 ms' });
    expect(mergeRepeats([run(1000, 500, true), run(1000, 700, false)]).goals?.[1]).toMatchObject({ met: false });
  });

  it('takes the lower middle run for an even count, and leaves a single run as it is', () => {
    const merged = mergeRepeats([run(1000, 800, true), run(1000, 500, true)]);
    expect(merged.goals?.[0]).toMatchObject({ ratio: 0.5, met: false });
    const single = run(1000, 500, true);
    expect(mergeRepeats([single])).toBe(single);
  });
});
