import { describe, expect, it } from 'vitest';
import { htmlToText } from '../../lib/mail-text.js';
import { SNIPPET_SOURCE_CHARS, snippetOf } from './mime.js';

/** The plain definition of a snippet: every line read, then flattened (what snippetOf must equal). */
function reference(text: string, length: number): string {
  const flat = text
    .split(/\r?\n/)
    .filter((line) => !line.startsWith('>'))
    .join(' ')
    .replace(/\s+/g, ' ')
    .trim();
  return flat.length > length ? `${flat.slice(0, length - 1)}…` : flat;
}

/** A small deterministic generator (mulberry32), so a failure can be replayed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('snippetOf', () => {
  it('cuts the flattened text without quoted lines, with an ellipsis', () => {
    expect(snippetOf({ text: 'Hello,\r\n\r\n> quoted\r\n  my   order\tis late.\n', html: null }, 200)).toBe('Hello, my order is late.');
    expect(snippetOf({ text: 'abcdef', html: null }, 4)).toBe('abc…');
    expect(snippetOf({ text: 'abcd', html: null }, 4)).toBe('abcd');
    expect(snippetOf({ text: null, html: '<style>p{}</style><p>Hi&nbsp;there</p>' }, 200)).toBe('Hi there');
    expect(snippetOf({ text: null, html: null }, 200)).toBe('');
  });

  it('equals flattening the whole text, for texts of every shape', () => {
    const pieces = ['', ' ', '  ', '\n', '\r\n', '\r', '\r\r\n', '>', '> quoted', 'a', 'word', 'Hello there', '\t', '\u00a0', 'é', 'x'.repeat(50), '\n\n', '>>', ' >', '😀'];
    const next = random(20261124);
    for (let i = 0; i < 20_000; i++) {
      let text = '';
      const count = Math.floor(next() * 40);
      for (let j = 0; j < count; j++) text += pieces[Math.floor(next() * pieces.length)];
      for (const length of [1, 2, 5, 10, 200]) expect(snippetOf({ text, html: null }, length), JSON.stringify(text)).toBe(reference(text, length));
    }
    const long = 'Lorem ipsum dolor sit amet.\r\n'.repeat(400);
    expect(snippetOf({ text: long, html: null })).toBe(reference(long, 200));
    // One long line, and one whose start is mostly white space (its start alone is not enough).
    const oneLine = 'Lorem ipsum dolor sit amet. '.repeat(400);
    expect(snippetOf({ text: oneLine, html: null })).toBe(reference(oneLine, 200));
    const spacedStart = `${' \t'.repeat(300)}${oneLine}`;
    expect(snippetOf({ text: `> quoted\n${spacedStart}`, html: null })).toBe(reference(spacedStart, 200));
  });
});

/** Attacker input of 1 MiB: each must take linear time, where the old regular expressions took minutes. */
const MiB = 1024 * 1024;
const HOSTILE: Array<[string, string]> = [
  ['<', '<'.repeat(MiB)],
  ['<style', '<style'.repeat(MiB / 6)],
  ['<a ', '<a '.repeat(MiB / 3)],
  ['<<<>', '<<<>'.repeat(MiB / 4)],
  ['<script', '<script'.repeat(MiB / 7)],
  ['<!--', '<!--'.repeat(MiB / 4)],
  ['<style>…</style', `<style>${'</style'.repeat(MiB / 7)}`],
  ['> quoted lines', '> q\n'.repeat(MiB / 4)],
  ['white space', `${' \t\r\n'.repeat(MiB / 4)}end`],
];
/** Far beyond what the linear code needs (milliseconds), far below what the quadratic code took (minutes). */
const GENEROUS_MS = 5000;

describe('snippetOf on hostile input', () => {
  it.each(HOSTILE)('reads a bounded prefix of 1 MiB of %s, as HTML and as text', (_name, body) => {
    const started = performance.now();
    const fromHtml = snippetOf({ text: null, html: body });
    const fromText = snippetOf({ text: body, html: null });
    expect(performance.now() - started).toBeLessThan(GENEROUS_MS);
    expect(fromHtml.length).toBeLessThanOrEqual(200);
    expect(fromText.length).toBeLessThanOrEqual(200);
  });

  it('reads no further than SNIPPET_SOURCE_CHARS', () => {
    expect(snippetOf({ text: null, html: `<style>${'a'.repeat(SNIPPET_SOURCE_CHARS)}</style>Hello` })).toBe('');
    expect(snippetOf({ text: `${'> q\n'.repeat(SNIPPET_SOURCE_CHARS / 4)}Hello`, html: null })).toBe('');
    expect(snippetOf({ text: null, html: `<style>${'a'.repeat(SNIPPET_SOURCE_CHARS / 2)}</style>Hello` })).toBe('Hello');
  });
});

describe('htmlToText', () => {
  it.each([
    ['<p>Hello</p> <b>world</b>', 'Hello world'],
    ['<style>p{}</style>Hi', 'Hi'],
    ['<STYLE type="text/css">a>b{}</STYLE >Hi<script>if (a<b) x()</script>!', 'Hi !'],
    ['<styles>kept</styles>', 'kept'],
    ['<!-- a > b -->Hi', 'Hi'],
    ['a < b and c > d', 'a d'],
    ['1 < 2', '1 < 2'],
    ['<<<>x', 'x'],
    ['<style>never closed', ''],
    ['<!-- never closed', ''],
    ['Fish &amp; chips&nbsp;&LT;3 &quot;ok&quot; &copy;', 'Fish & chips <3 "ok" &copy;'],
  ])('%j → %j', (html, text) => {
    expect(htmlToText(html).replace(/\s+/g, ' ').trim()).toBe(text);
  });
});
