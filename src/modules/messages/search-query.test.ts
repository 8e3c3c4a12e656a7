import { describe, expect, it } from 'vitest';
import { DomainError } from '../../lib/errors.js';
import {
  containsText,
  MAX_QUERY_DEPTH,
  MAX_QUERY_LENGTH,
  MAX_QUERY_TERMS,
  parseSearchQuery,
  SearchQueryError,
  unaccent,
  type SearchNode,
  type TextField,
} from './search-query.js';

const t = (value: string, field: TextField | null = null): SearchNode => ({ kind: 'text', field, value });
const ph = (value: string, field: TextField | null = null): SearchNode => ({ kind: 'phrase', field, value });
const px = (value: string, field: TextField | null = null): SearchNode => ({ kind: 'prefix', field, value });
const and = (...children: SearchNode[]): SearchNode => ({ kind: 'and', children });
const or = (...children: SearchNode[]): SearchNode => ({ kind: 'or', children });
const not = (child: SearchNode): SearchNode => ({ kind: 'not', child });
const folder = (value: 'inbox' | 'archive' | 'sent' | 'spam' | 'trash'): SearchNode => ({ kind: 'filter', filter: 'folder', value });
const label = (value: string): SearchNode => ({ kind: 'filter', filter: 'label', value });
const read = (value: boolean): SearchNode => ({ kind: 'filter', filter: 'read', value });
const mailbox = (value: string): SearchNode => ({ kind: 'filter', filter: 'mailbox', value });
const after = (value: string): SearchNode => ({ kind: 'filter', filter: 'after', value });
const before = (value: string): SearchNode => ({ kind: 'filter', filter: 'before', value });
const attachment: SearchNode = { kind: 'filter', filter: 'has_attachment' };

const words = (n: number): string => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');
const nested = (depth: number): string => `${'('.repeat(depth)}a${')'.repeat(depth)}`;

const PARSES: Array<[string, SearchNode]> = [
  // Words, phrases, prefixes: NFKC + lower case, accents kept.
  ['invoice', t('invoice')],
  ['Invoice', t('invoice')],
  ['two words', and(t('two'), t('words'))],
  ['"quarterly report"', ph('quarterly report')],
  ['"  Quarterly \t REPORT "', ph('quarterly report')],
  ['invo*', px('invo')],
  ['INVO**', px('invo')],
  ['Ｉｎｖｏｉｃｅ', t('invoice')],
  ['ﬁle', t('file')],
  ['Café', t('café')],
  ['😀', t('😀')],
  ['order-1234', t('order-1234')],
  ['a\u00a0b\tc\n', and(t('a'), t('b'), t('c'))],
  ['"phrase"x', and(ph('phrase'), t('x'))],
  // An unknown operator is plain text, as in Gmail: times, URLs and "re:" are ordinary words in mail.
  ['foo:bar', t('foo:bar')],
  ['10:30', t('10:30')],
  ['https://example.com/x', t('https://example.com/x')],
  [':a', t(':a')],
  ['ORE', t('ore')],
  // Text fields.
  ['from:alice', t('alice', 'from')],
  // A whole address after from: is the sender's address; a part of one stays words.
  ['FROM:Alice@Example.COM', { kind: 'filter', filter: 'from_address', value: 'alice@example.com' }],
  ['from:"alice@example.com"', { kind: 'filter', filter: 'from_address', value: 'alice@example.com' }],
  ['from:alice@example', t('alice@example', 'from')],
  ['from:alice@example.', t('alice@example.', 'from')],
  ['from:alice@example.c*', px('alice@example.c', 'from')],
  ['from:"alice@example.com bob"', ph('alice@example.com bob', 'from')],
  ['to:alice@example.com', t('alice@example.com', 'to')],
  ['from:"Alice Example"', ph('alice example', 'from')],
  ['from:ali*', px('ali', 'from')],
  ['to:bob', t('bob', 'to')],
  ['Cc:carol', t('carol', 'cc')],
  ['subject:"quarterly report"', ph('quarterly report', 'subject')],
  ['subject:re:', t('re:', 'subject')],
  ['filename:receipt.pdf', t('receipt.pdf', 'filename')],
  ['filename:rece*', px('rece', 'filename')],
  ['from:-alice', t('-alice', 'from')],
  // Column filters.
  ['has:attachment', attachment],
  ['HAS:Attachment', attachment],
  ['is:unread', read(false)],
  ['is:READ', read(true)],
  ['label:order-1234', label('order-1234')],
  ['label:Work', label('work')],
  ['label:x:y.z_1-2', label('x:y.z_1-2')],
  ['in:inbox', folder('inbox')],
  ['IN:Trash', folder('trash')],
  ['in:"archive"', folder('archive')],
  ['mailbox:Helpdesk@Mailroom.localhost', mailbox('helpdesk@mailroom.localhost')],
  ['mailbox:"helpdesk@mailroom.localhost"', mailbox('helpdesk@mailroom.localhost')],
  // Dates are UTC days: after: from the day's start (inclusive), before: up to it (the day excluded).
  ['after:2026-11-21', after('2026-11-21T00:00:00.000Z')],
  ['before:2026/1/5', before('2026-01-05T00:00:00.000Z')],
  ['after:2024-02-29', after('2024-02-29T00:00:00.000Z')],
  ['before:"2026-12-31"', before('2026-12-31T00:00:00.000Z')],
  // Negation.
  ['-spam', not(t('spam'))],
  ['-from:alice', not(t('alice', 'from'))],
  ['-"out of office"', not(ph('out of office'))],
  ['-in:spam', not(folder('spam'))],
  ['-(a b)', not(and(t('a'), t('b')))],
  ['a -b', and(t('a'), not(t('b')))],
  ['a-b', t('a-b')],
  // OR binds tighter than adjacency, as in Gmail; parentheses group; same-kind nodes are flattened.
  ['a OR b', or(t('a'), t('b'))],
  ['a OR b OR c', or(t('a'), t('b'), t('c'))],
  ['a b OR c', and(t('a'), or(t('b'), t('c')))],
  ['a OR b c', and(or(t('a'), t('b')), t('c'))],
  ['-a OR b', or(not(t('a')), t('b'))],
  ['a OR -b', or(t('a'), not(t('b')))],
  ['(a OR b) c', and(or(t('a'), t('b')), t('c'))],
  ['(a b) OR c', or(and(t('a'), t('b')), t('c'))],
  ['(a OR b) OR c', or(t('a'), t('b'), t('c'))],
  ['a (b c)', and(t('a'), t('b'), t('c'))],
  ['(a)(b)', and(t('a'), t('b'))],
  ['((((a))))', t('a')],
  ['a AND b', and(t('a'), t('b'))],
  ['a AND b OR c', and(t('a'), or(t('b'), t('c')))],
  ['a or b', and(t('a'), t('or'), t('b'))],
  [
    'from:alice in:inbox is:unread after:2026-01-01 -label:done "order 1234" invo*',
    and(t('alice', 'from'), folder('inbox'), read(false), after('2026-01-01T00:00:00.000Z'), not(label('done')), ph('order 1234'), px('invo')),
  ],
  // The bounds themselves are allowed.
  [words(MAX_QUERY_TERMS), and(...Array.from({ length: MAX_QUERY_TERMS }, (_, i) => t(`w${i}`)))],
  [nested(MAX_QUERY_DEPTH), t('a')],
  ['x'.repeat(MAX_QUERY_LENGTH), t('x'.repeat(MAX_QUERY_LENGTH))],
  ['😀'.repeat(MAX_QUERY_LENGTH), t('😀'.repeat(MAX_QUERY_LENGTH))],
];

/** [query, position, detail]: every detail ends with the position, 0-based, in code points. */
const FAILS: Array<[string, number, string]> = [
  ['', 0, 'empty query'],
  ['  \t ', 0, 'empty query'],
  ['say "hello', 4, 'unterminated quote'],
  ['subject:"abc', 8, 'unterminated quote'],
  ['😀 "x', 2, 'unterminated quote'],
  ['a -', 2, "'-' must be followed by a term"],
  ['- a', 0, "'-' must be followed by a term"],
  ['-)', 0, "'-' must be followed by a term"],
  ['--a', 0, "'-' must be followed by a term"],
  ['-OR a', 0, "'-' must be followed by a term"],
  ['OR a', 0, "'OR' needs a term before it"],
  ['a OR', 2, "'OR' needs a term after it"],
  ['a OR OR b', 2, "'OR' needs a term after it"],
  ['(a OR) b', 3, "'OR' needs a term after it"],
  ['(OR a)', 1, "'OR' needs a term before it"],
  ['AND a', 0, "'AND' needs a term before it"],
  ['a AND', 2, "'AND' needs a term after it"],
  ['a AND OR b', 2, "'AND' needs a term after it"],
  ['from:', 0, "'from:' needs a value"],
  ['a From: b', 2, "'from:' needs a value"],
  ['subject:(a b)', 0, "'subject:' needs a value"],
  ['after:2026-13-01', 6, "invalid date '2026-13-01' (write YYYY-MM-DD or YYYY/MM/DD)"],
  ['before:2026-02-30', 7, "invalid date '2026-02-30' (write YYYY-MM-DD or YYYY/MM/DD)"],
  ['after:2026-11/21', 6, "invalid date '2026-11/21' (write YYYY-MM-DD or YYYY/MM/DD)"],
  ['after:yesterday', 6, "invalid date 'yesterday' (write YYYY-MM-DD or YYYY/MM/DD)"],
  ['in:drafts', 3, "unknown folder 'drafts' (one of inbox, archive, sent, spam, trash)"],
  ['is:starred', 3, "unknown 'is:starred' (is:read or is:unread)"],
  ['has:drive', 4, "unknown 'has:drive' (has:attachment)"],
  ['label:"has space"', 6, "invalid label 'has space' (1 to 64 of a-z, 0-9, _ . : -)"],
  [`mailbox:${'a'.repeat(255)}`, 8, 'a mailbox is 1 to 254 characters'],
  ['(a', 0, "unclosed '('"],
  ['a (b (c)', 2, "unclosed '('"],
  ['a)', 1, "unmatched ')'"],
  [')', 0, "unmatched ')'"],
  ['()', 0, 'empty parentheses'],
  ['*', 0, "'*' must follow a word"],
  ['from:*', 5, "'*' must follow a word"],
  ['""', 0, 'empty phrase'],
  ['subject:" "', 8, 'empty phrase'],
  ['a\u0000b', 1, 'a control character'],
  ['a \ud800', 2, 'a control character'],
  // The first problem from the left is the one reported.
  ['OR "abc', 0, "'OR' needs a term before it"],
  ['x'.repeat(MAX_QUERY_LENGTH + 1), MAX_QUERY_LENGTH, 'the query is longer than 1000 characters'],
  ['('.repeat(1024 * 1024), MAX_QUERY_LENGTH, 'the query is longer than 1000 characters'],
  ['"'.repeat(1024 * 1024), MAX_QUERY_LENGTH, 'the query is longer than 1000 characters'],
  [words(MAX_QUERY_TERMS + 1), words(MAX_QUERY_TERMS).length + 1, 'more than 50 terms'],
  [nested(MAX_QUERY_DEPTH + 1), MAX_QUERY_DEPTH, 'parentheses nested deeper than 10'],
  ['('.repeat(MAX_QUERY_LENGTH), MAX_QUERY_DEPTH, 'parentheses nested deeper than 10'],
];

/** The error a query fails with; fails the test when it parses. */
function failure(query: string): SearchQueryError {
  try {
    parseSearchQuery(query);
  } catch (err) {
    if (err instanceof SearchQueryError) return err;
    throw err;
  }
  throw new Error(`parsed: ${JSON.stringify(query)}`);
}

const shown = (query: string): string => (query.length > 60 ? `${JSON.stringify(query.slice(0, 40))}… (${query.length} units)` : JSON.stringify(query));

describe('parseSearchQuery', () => {
  it.each(PARSES.map(([query, ast]) => [shown(query), query, ast] as const))('parses %s', (_, query, ast) => {
    expect(parseSearchQuery(query)).toEqual(ast);
  });

  it.each(FAILS.map(([query, position, detail]) => [shown(query), query, position, detail] as const))(
    'refuses %s at %i',
    (_, query, position, detail) => {
      const err = failure(query);
      expect(err).toBeInstanceOf(DomainError);
      expect({ kind: err.kind, code: err.code, position: err.position, detail: err.detail }).toEqual({
        kind: 'invalid',
        code: 'invalid_query',
        position,
        detail: `${detail} at position ${position}`,
      });
    },
  );

  it('throws only its DomainError, whatever the input', () => {
    const alphabet = ['a', 'B', ' ', '"', '-', '(', ')', '*', ':', 'OR', 'AND', 'from:', 'in:', 'is:', 'after:', '2026-01-01', 'é', '😀', '\t', '\u0000', '\ud800', 'ﬁ'];
    let seed = 20261126;
    const next = (): number => {
      seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
      return seed / 2 ** 32;
    };
    for (let i = 0; i < 20_000; i++) {
      const query = Array.from({ length: Math.floor(next() * 30) }, () => alphabet[Math.floor(next() * alphabet.length)]!).join('');
      try {
        parseSearchQuery(query);
      } catch (err) {
        expect(err, JSON.stringify(query)).toBeInstanceOf(SearchQueryError);
      }
    }
  });

  it('refuses a value that is not text with the same error', () => {
    expect(() => parseSearchQuery(undefined as unknown as string)).toThrow(SearchQueryError);
  });

  it('takes time in proportion to the query, not more (hostile shapes at the length bound)', () => {
    const shapes = [
      'a'.repeat(MAX_QUERY_LENGTH),
      'a:'.repeat(MAX_QUERY_LENGTH / 2),
      '"'.repeat(MAX_QUERY_LENGTH - 1),
      `${'-'.repeat(MAX_QUERY_LENGTH - 1)}a`,
      `a${' OR a'.repeat(49)}`,
      `"${'a '.repeat(MAX_QUERY_LENGTH / 2 - 1)}`,
      `${'*'.repeat(MAX_QUERY_LENGTH - 1)}`,
    ];
    const started = performance.now();
    for (let i = 0; i < 100; i++) for (const query of shapes) failureOrTree(query);
    expect(performance.now() - started).toBeLessThan(2000);
  });
});

function failureOrTree(query: string): unknown {
  try {
    return parseSearchQuery(query);
  } catch (err) {
    if (err instanceof SearchQueryError) return err;
    throw err;
  }
}

describe('unaccent', () => {
  it.each([
    ['Café Crème', 'Cafe Creme'],
    ['Ångström', 'Angstrom'],
    ['naïve façade', 'naive facade'],
    ['Dvořák', 'Dvorak'],
    ['한국어', '한국어'],
    ['plain', 'plain'],
  ])('%s → %s', (text, expected) => {
    expect(unaccent(text)).toBe(expected);
  });
});

describe('containsText', () => {
  it.each([
    ['in:inbox is:unread', false],
    ['-label:done after:2026-01-01', false],
    ['in:inbox invoice', true],
    ['in:inbox OR -from:alice', true],
    ['(is:read OR has:attachment) -in:spam', false],
  ] as const)('%s → %s', (query, expected) => {
    expect(containsText(parseSearchQuery(query))).toBe(expected);
  });
});
