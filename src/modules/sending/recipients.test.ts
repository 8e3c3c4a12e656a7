import { describe, expect, it } from 'vitest';
import { DomainError } from '../../lib/errors.js';
import { MAX_RECIPIENTS, parseRecipients } from './recipients.js';

const MiB = 1024 * 1024;
/** Far beyond what the linear code needs (milliseconds), far below what the backtracking pattern took on 1 MiB of `<` (minutes). */
const GENEROUS_MS = 5000;

function refusal(value: string | string[]): { error: string; detail: string } {
  try {
    parseRecipients(value, 'to', { required: true });
  } catch (err) {
    if (err instanceof DomainError) return { error: err.code, detail: err.message };
    throw err;
  }
  throw new Error('accepted');
}

describe('parseRecipients', () => {
  it.each([
    ['a@b.example', ['a@b.example']],
    [' A@B.example , Carol <c@d.example>,c@d.example', ['a@b.example', 'c@d.example']],
    ['Jane Doe <j@d.example>  ', ['j@d.example']],
    ['x <y <z@d.example>', ['z@d.example']],
  ])('%j → %j', (value, expected) => {
    expect(parseRecipients(value, 'to', { required: true })).toEqual(expected);
  });

  it('refuses what is no address, quoting a bounded part of it', () => {
    expect(refusal('not an address')).toMatchObject({ error: 'invalid_recipient' });
    expect(refusal('<>')).toMatchObject({ error: 'invalid_recipient' });
    expect(refusal(Array.from({ length: MAX_RECIPIENTS + 1 }, (_, i) => `r${i}@d.example`))).toMatchObject({ error: 'too_many_recipients' });
  });

  it.each([
    ['<', '<'.repeat(MiB)],
    ['<style', '<style'.repeat(MiB / 6)],
    ['<a ', '<a '.repeat(MiB / 3)],
    ['<<<>', '<<<>'.repeat(MiB / 4)],
    ['<…a@b.example>', `${'<'.repeat(MiB)}a@b.example>`],
  ])('answers at once on 1 MiB of %s', (_name, value) => {
    const started = performance.now();
    let outcome: string[] | DomainError;
    try {
      outcome = parseRecipients(value, 'to', { required: true });
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      outcome = err;
    }
    expect(performance.now() - started).toBeLessThan(GENEROUS_MS);
    if (outcome instanceof DomainError) {
      expect(outcome.code).toBe('invalid_recipient');
      expect(outcome.message.length).toBeLessThan(200);
    } else expect(outcome).toEqual(['a@b.example']);
  });

  it('stops reading a long list once it is past the limit', () => {
    const started = performance.now();
    const list = Array.from({ length: 200_000 }, (_, i) => `r${i}@d.example`);
    expect(refusal(list.join(','))).toMatchObject({ error: 'too_many_recipients' });
    expect(refusal(list)).toMatchObject({ error: 'too_many_recipients' });
    expect(parseRecipients(Array(200_000).fill('same@d.example'), 'to', { required: true })).toEqual(['same@d.example']);
    expect(performance.now() - started).toBeLessThan(GENEROUS_MS);
  });
});
