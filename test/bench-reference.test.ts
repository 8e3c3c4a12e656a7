import { describe, expect, it } from 'vitest';
import type { Measurement } from '../bench/lib/load.js';
import { mergeRepeats } from '../bench/lib/repeat.js';
import { formatTable } from '../bench/lib/report.js';
import { addReference, goal, pairRows, type SuiteResult } from '../bench/lib/suite.js';

const measured = (rate: number): Measurement => ({
  requestsPerSec: rate,
  latencyMs: { p50: 1, p90: 2, p99: 3, mean: 1, max: 3 },
  totalRequests: rate * 10,
  durationS: 10,
  connections: 10,
  errors: 0,
  timeouts: 0,
  non2xx: 0,
  serverCpuUsPerRequest: null,
  serverCpuUtilization: null,
});

/** One smtp-like run: bare sink at `bare`, the service at `service`, and Postfix at `postfix` msg/s or unavailable. */
function run(bare: number, service: number, postfix: number | string): SuiteResult {
  const rows = pairRows('smtp', 'sqlite reuse×10', 'msg/s', { target: 'bare sink', measurement: measured(bare) }, { target: 'mailroom', measurement: measured(service) });
  addReference(rows, 'postfix', typeof postfix === 'number' ? { target: 'postfix', measurement: measured(postfix) } : { unavailable: postfix });
  const result: SuiteResult = { suite: 'smtp', rows, skipped: [], failed: [], info: {} };
  result.goals = [goal(result, 'reuse ≥ 2× Postfix', 'sqlite reuse×10', 2, 'postfix')];
  return result;
}

describe('bench references (the smtp suite\'s vs postfix)', () => {
  it('adds the reference row after the baseline and the subject\'s ratio to it', () => {
    const { rows, goals } = run(3000, 1800, 900);
    expect(rows.map((r) => r.role)).toEqual(['baseline', 'reference', 'subject']);
    expect(rows[1]!.ratio).toBeCloseTo(0.3);
    expect(rows[2]!.versus).toEqual({ postfix: { ratio: 2 } });
    expect(goals![0]).toMatchObject({ ratio: 2, met: true, against: 'postfix' });
  });

  it('prints a vs postfix column beside vs baseline, and n/a with the reason when Postfix could not run', () => {
    const table = formatTable([run(3000, 1800, 900)]);
    expect(table.split('\n')[0]).toMatch(/vs baseline\s+vs postfix$/);
    expect(table).toMatch(/mailroom .*0\.600 \(60\.0%\)\s+2\.000 \(200\.0%\)/);
    expect(table).toContain('(≥ 2× postfix)');

    const missing = run(3000, 1800, 'postfix check failed');
    expect(missing.rows.map((r) => r.role)).toEqual(['baseline', 'subject']);
    expect(missing.goals![0]).toMatchObject({ ratio: null, met: null });
    const text = formatTable([missing]);
    expect(text).toMatch(/mailroom .*\s+n\/a$/m);
    expect(text).toContain('vs postfix: n/a (postfix check failed) — smtp/sqlite reuse×10');
  });

  it('keeps the reference row of the median run and judges the goal on the median ratio to Postfix', () => {
    const merged = mergeRepeats([run(3000, 1500, 1000), run(3000, 1800, 900), run(3000, 2100, 1000)]);
    expect(merged.rows.map((r) => r.role)).toEqual(['baseline', 'reference', 'subject']);
    expect(merged.rows[1]!.rate).toBe(900);
    expect(merged.goals![0]).toMatchObject({ ratio: 2, met: true, against: 'postfix' });
  });
});
