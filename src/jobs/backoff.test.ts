import { describe, expect, it } from 'vitest';
import { backoffDelay, type BackoffPolicy } from './backoff.js';

const exact: BackoffPolicy = { baseMs: 1000, factor: 2, capMs: 60_000, jitter: 0 };
const jittered: BackoffPolicy = { ...exact, jitter: 0.2 };

describe('backoffDelay', () => {
  const cases: Array<[string, BackoffPolicy, number, number, number]> = [
    // name, policy, attempt, random(), expected ms
    ['first attempt waits the base', exact, 1, 0.5, 1000],
    ['second attempt multiplies by the factor', exact, 2, 0.5, 2000],
    ['third attempt', exact, 3, 0.5, 4000],
    ['sixth attempt, just under the cap', exact, 6, 0.5, 32_000],
    ['seventh attempt is capped', exact, 7, 0.5, 60_000],
    ['a huge attempt stays at the cap', exact, 5000, 0.5, 60_000],
    ['attempt 0 counts as the first', exact, 0, 0.5, 1000],
    ['no jitter ignores random()', exact, 3, 0.99, 4000],
    ['jitter low end: delay × (1 − jitter)', jittered, 1, 0, 800],
    ['jitter middle: the raw delay', jittered, 1, 0.5, 1000],
    ['jitter high end: delay × (1 + jitter)', jittered, 1, 1, 1200],
    ['jitter applies after the cap', jittered, 10, 0, 48_000],
    ['a constant policy (factor 1)', { baseMs: 50, factor: 1, capMs: 50, jitter: 0 }, 9, 0.5, 50],
    ['rounds to whole milliseconds', { baseMs: 3, factor: 1, capMs: 10, jitter: 0.5 }, 1, 0, 2],
    ['never negative, even with jitter above 1', { baseMs: 1000, factor: 1, capMs: 1000, jitter: 1.5 }, 1, 0, 0],
  ];

  it.each(cases)('%s', (_name, policy, attempt, random, expected) => {
    expect(backoffDelay(policy, attempt, () => random)).toBe(expected);
  });

  it('stays within ±jitter of the raw delay with the default random source', () => {
    for (let i = 0; i < 200; i += 1) {
      const delay = backoffDelay(jittered, 3);
      expect(delay).toBeGreaterThanOrEqual(3200);
      expect(delay).toBeLessThanOrEqual(4800);
    }
  });
});
