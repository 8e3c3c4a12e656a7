import { describe, expect, it } from 'vitest';
import { normalizeSubject, shareParticipant, SUBJECT_KEY_LENGTH } from './threading.js';

describe('normalizeSubject', () => {
  it.each([
    ['Hello', 'hello'],
    ['Re: Hello', 'hello'],
    ['RE: re: Fwd: Hello', 'hello'],
    ['Re[2]: Hello', 'hello'],
    ['AW: WG: Angebot', 'angebot'],
    ['SV: Møte', 'møte'],
    ['[team] Re: Plan  for   Q3', 'plan for q3'],
    ['Fw: ', ''],
    ['Rebate offer', 'rebate offer'],
    ['Read me: now', 'read me: now'],
    ['Re：全角', '全角'],
  ])('%s → %s', (subject, expected) => {
    expect(normalizeSubject(subject)).toBe(expected);
  });
});

describe('shareParticipant', () => {
  it('finds a shared address', () => {
    expect(shareParticipant(['a@x', 'b@x'], ['c@x', 'b@x'])).toBe(true);
    expect(shareParticipant(['a@x'], ['c@x'])).toBe(false);
    expect(shareParticipant([], [])).toBe(false);
  });
});

describe('normalizeSubject on long subjects', () => {
  it('cuts the key to SUBJECT_KEY_LENGTH characters, whole code points', () => {
    const emoji = '😀'.repeat(SUBJECT_KEY_LENGTH + 10);
    expect([...normalizeSubject(`Re: ${emoji}`)]).toHaveLength(SUBJECT_KEY_LENGTH);
    expect(normalizeSubject(`Re: ${emoji}`)).toBe('😀'.repeat(SUBJECT_KEY_LENGTH));
    expect(normalizeSubject('x'.repeat(998))).toBe('x'.repeat(SUBJECT_KEY_LENGTH));
  });
});
