import { decodeTime, isValid } from 'ulid';
import { describe, expect, it } from 'vitest';
import { looksLikeId, newId, ulid } from './ids.js';

describe('ids', () => {
  it('are ULIDs that the reference implementation reads back, with the time they were made', () => {
    const at = Date.UTC(2026, 10, 21, 12, 34, 56, 789);
    const id = ulid(at + 1_000_000); // later than anything made so far in this process
    expect(isValid(id.toUpperCase())).toBe(true);
    expect(decodeTime(id.toUpperCase())).toBe(at + 1_000_000);
    expect(id).toMatch(/^[0-9a-hjkmnp-tv-z]{26}$/);
  });

  it('sort in creation order within one millisecond and when the clock steps back', () => {
    const t = Date.now() + 5_000_000;
    const ids = [ulid(t), ...Array.from({ length: 5000 }, () => ulid(t)), ulid(t - 10), ulid(t + 1)];
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('carry prefixes and are told apart by looksLikeId', () => {
    const id = newId('msg');
    expect(looksLikeId(id, 'msg')).toBe(true);
    expect(looksLikeId(id, 'thr')).toBe(false);
    expect(looksLikeId('msg_' + 'u'.repeat(26), 'msg')).toBe(false);
    // Random parts differ between ids made in different milliseconds.
    const a = ulid(Date.now() + 9_000_000);
    const b = ulid(Date.now() + 9_000_001);
    expect(a.slice(10)).not.toBe(b.slice(10));
  });
});
