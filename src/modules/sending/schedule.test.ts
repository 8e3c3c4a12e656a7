import { describe, expect, it } from 'vitest';
import { DomainError } from '../../lib/errors.js';
import { MAX_SCHEDULE_MS, rfc5322Date, scheduledTime, withDate } from './schedule.js';

const NOW = Date.UTC(2026, 10, 21, 12, 0, 0);

function refusal(text: string): string {
  try {
    scheduledTime(text, NOW);
  } catch (err) {
    if (err instanceof DomainError) return `${err.code}: ${err.message}`;
    throw err;
  }
  throw new Error(`${text} was taken`);
}

describe('scheduledTime', () => {
  it('takes RFC 3339 date-times with an offset; now, the past and no send_at mean "send now" (null)', () => {
    expect(scheduledTime('2026-11-21T13:00:00+01:00', NOW)).toBeNull();
    expect(scheduledTime('2026-11-21T11:00:00Z', NOW)).toBeNull();
    expect(scheduledTime(undefined, NOW)).toBeNull();
    expect(scheduledTime('2026-11-21T14:30:00.250+01:00', NOW)).toBe(NOW + 90 * 60_000 + 250);
    expect(scheduledTime('2026-11-21t12:01z', NOW)).toBe(NOW + 60_000);
    expect(scheduledTime(new Date(NOW + MAX_SCHEDULE_MS).toISOString(), NOW)).toBe(NOW + MAX_SCHEDULE_MS);
  });

  it('refuses what is no date-time with an offset, a day that does not exist, and more than 30 days ahead, naming send_at', () => {
    for (const text of ['2026-11-21T13:00:00', '2026-11-21', 'tomorrow', '2026-02-30T09:00:00Z', '2026-11-21T24:00:00Z', '2026-11-21T12:00:00+1:00', '']) {
      expect(refusal(text), text).toMatch(/^invalid_request: send_at '.*' is not an ISO 8601 date-time with an offset/);
    }
    expect(refusal(new Date(NOW + MAX_SCHEDULE_MS + 1).toISOString())).toBe('invalid_request: send_at must be at most 30 days ahead (2026-12-21T12:00:00.000Z)');
    // Hostile length: the detail quotes at most 64 characters of it.
    expect(refusal('x'.repeat(10_000)).length).toBeLessThan(200);
  });
});

describe('withDate', () => {
  const body = Buffer.from('Date: in the body is not a header\r\n\r\nsecond paragraph', 'utf8');
  const message = (head: string) => Buffer.concat([Buffer.from(`${head}\r\n\r\n`, 'latin1'), body]);

  it('replaces the Date field, folded lines included, and leaves every other byte as it was', () => {
    const at = Date.UTC(2026, 11, 1, 8, 5, 9);
    const dated = withDate(message('From: a@b.example\r\nDate: Sat, 21 Nov 2026\r\n 12:00:00 +0000\r\nSubject: x'), at);
    expect(dated.toString('latin1')).toBe(`From: a@b.example\r\nDate: Tue, 01 Dec 2026 08:05:09 +0000\r\nSubject: x\r\n\r\n${body.toString('latin1')}`);
    expect(rfc5322Date(at)).toBe('Tue, 01 Dec 2026 08:05:09 +0000');
  });

  it('adds a Date field to a message without one', () => {
    const dated = withDate(message('From: a@b.example'), Date.UTC(2026, 11, 1));
    expect(dated.toString('latin1').split('\r\n').slice(0, 2)).toEqual(['Date: Tue, 01 Dec 2026 00:00:00 +0000', 'From: a@b.example']);
  });
});
