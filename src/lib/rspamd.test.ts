import { describe, expect, it } from 'vitest';
import { parseVerdict, RspamdError, RSPAMD_TOP_SYMBOLS } from './rspamd.js';

describe('parseVerdict', () => {
  it('keeps the score, the action and the highest-scoring symbols, at most ten', () => {
    const symbols = Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`SYM_${String(i).padStart(2, '0')}`, { name: `SYM_${i}`, score: i - 3 }]));
    const verdict = parseVerdict({ is_skipped: false, score: 7.256, required_score: 15, action: 'add header', symbols });
    expect(verdict.score).toBe(7.26);
    expect(verdict.action).toBe('add header');
    expect(verdict.symbols).toHaveLength(RSPAMD_TOP_SYMBOLS);
    expect(verdict.symbols[0]).toEqual({ name: 'SYM_14', score: 11 });
    expect(verdict.symbols.map((s) => s.score)).toEqual([11, 10, 9, 8, 7, 6, 5, 4, 3, 2]);
  });

  it.each([
    ['no object', 'reject'],
    ['no score', { action: 'reject' }],
    ['an unknown action', { score: 1, action: 'discard' }],
    ['a score that is no number', { score: 'high', action: 'reject' }],
  ])('refuses an answer with %s', (_why, answer) => {
    expect(() => parseVerdict(answer)).toThrow(RspamdError);
  });

  it('takes a verdict without symbols', () => {
    expect(parseVerdict({ score: 0, action: 'no action' })).toEqual({ score: 0, action: 'no action', symbols: [] });
  });
});
