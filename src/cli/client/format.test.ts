import { describe, expect, it } from 'vitest';
import { createStyle, displayWidth, pageFooter, relativeTime, renderTable, safeLine, truncate } from './format.js';

const NOW = Date.parse('2026-11-21T12:00:00.000Z');
const plain = createStyle(false);

describe('relativeTime', () => {
  const cases: Array<[string, string | null, string]> = [
    ['no time', null, '-'],
    ['a few seconds either way', '2026-11-21T11:59:30.000Z', 'just now'],
    ['a minute ago', '2026-11-21T11:59:00.000Z', '1 minute ago'],
    ['minutes ago', '2026-11-21T11:55:00.000Z', '5 minutes ago'],
    ['hours ago', '2026-11-21T09:00:00.000Z', '3 hours ago'],
    ['days ago', '2026-11-19T12:00:00.000Z', '2 days ago'],
    ['the future', '2026-12-05T12:00:00.000Z', 'in 14 days'],
    ['older than 30 days: the date', '2026-09-01T08:00:00.000Z', '2026-09-01'],
    ['not a time', 'yesterday', 'yesterday'],
  ];
  it.each(cases)('%s', (_name, iso, expected) => expect(relativeTime(iso, NOW)).toBe(expected));
});

describe('terminal text', () => {
  it('replaces control characters and bidi overrides, keeping the text around them', () => {
    expect(safeLine('a\u001b[31mred\u0007\u202eb\u2066c')).toBe('a\ufffd[31mred\ufffd\ufffdb\ufffdc');
    expect(safeLine('  many\n\tlines  \r\n here ')).toBe('many lines here');
  });

  it('counts wide characters twice and combining marks not at all', () => {
    expect(displayWidth('abc')).toBe(3);
    expect(displayWidth('日本語')).toBe(6);
    expect(displayWidth('e\u0301')).toBe(1);
    expect(displayWidth('\u001b[1mbold\u001b[22m')).toBe(4);
    expect(truncate('日本語の件名', 7)).toBe('日本語…');
    expect(truncate('short', 10)).toBe('short');
  });

  it('aligns columns by display width, right-aligns numbers and leaves no trailing blanks', () => {
    const rows = [
      { name: '日本', n: 5, note: '' },
      { name: 'plain', n: 120, note: 'x' },
    ];
    const lines = renderTable(
      rows,
      [
        { header: 'NAME', value: (r) => r.name },
        { header: 'N', value: (r) => String(r.n), align: 'right' },
        { header: 'NOTE', value: (r) => r.note },
      ],
      plain,
    );
    expect(lines).toEqual(['NAME     N  NOTE', '日本     5', 'plain  120  x']);
  });

  it('styles cells without disturbing the widths', () => {
    const lines = renderTable([{ s: 'ok' }, { s: 'failed' }], [{ header: 'S', value: (r) => r.s, style: (t) => `<${t}>` }, { header: 'X', value: () => 'x' }], createStyle(true));
    expect(lines[1]).toBe('<ok>      x');
    expect(lines[2]).toBe('<failed>  x');
  });
});

describe('pageFooter', () => {
  const noun = ['message', 'messages'] as const;
  const cases: Array<[string, { total: number; limit: number; offset: number }, number, string]> = [
    ['nothing', { total: 0, limit: 50, offset: 0 }, 0, 'no messages'],
    ['one', { total: 1, limit: 50, offset: 0 }, 1, '1 message'],
    ['all on one page', { total: 3, limit: 50, offset: 0 }, 3, '3 messages'],
    ['a first page of several', { total: 120, limit: 50, offset: 0 }, 50, '1–50 of 120 messages; next page: --offset 50'],
    ['the last page', { total: 120, limit: 50, offset: 100 }, 20, '101–120 of 120 messages'],
    ['past the end', { total: 120, limit: 50, offset: 500 }, 0, 'no messages at offset 500 (120 in all)'],
  ];
  it.each(cases)('%s', (_name, page, shown, expected) => expect(pageFooter(page, shown, noun)).toBe(expected));
});
