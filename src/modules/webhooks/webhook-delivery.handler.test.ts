import { describe, expect, it } from 'vitest';
import { parseRetryAfter } from './webhook-delivery.handler.js';

const NOW = Date.UTC(2026, 10, 21, 12, 0, 0);

describe('parseRetryAfter', () => {
  it.each([
    [null, null],
    ['0', 0],
    ['120', 120_000],
    [' 30 ', 30_000],
    ['3600', 3_600_000],
    ['3601', 3_600_000], // bounded to an hour
    ['99999999999', 3_600_000],
    [new Date(NOW + 90_000).toUTCString(), 90_000],
    [new Date(NOW - 90_000).toUTCString(), 0], // a date in the past: no wait
    [new Date(NOW + 86_400_000).toUTCString(), 3_600_000],
    ['-5', null],
    ['1.5', null],
    ['soon', null],
  ])('%s → %s', (value, ms) => {
    expect(parseRetryAfter(value, NOW)).toBe(ms);
  });
});
