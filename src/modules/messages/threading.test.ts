import { describe, expect, it } from 'vitest';
import { normalizeSubject, shareParticipant } from './threading.js';

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
