import { describe, expect, it } from 'vitest';
import { binarySection, bodyStructure, envelope, fetchSection, findPart, MAX_NESTING, MAX_PARTS, parseMime, serializeImapValue } from './index.js';
import type { MimePart } from './mime-parser.js';

const crlf = (text: string) => Buffer.from(text.replace(/\r?\n/g, '\r\n'), 'utf8');
const text = (raw: Buffer, part: MimePart) => serializeImapValue(bodyStructure(raw, part, false)).toString('latin1');
const depthOf = (part: MimePart): number => Math.max(part.depth, ...part.children.map(depthOf));

describe('MIME parsing stays bounded', () => {
  it('multiparts nested 5,000 deep: split to the nesting limit, the rest is one leaf, fast', () => {
    const depth = 5000;
    let head = 'MIME-Version: 1.0\n';
    let tail = '';
    for (let i = 0; i < depth; i++) {
      head += `Content-Type: multipart/mixed; boundary=b${i}\n\n--b${i}\n`;
      tail = `\n--b${i}--\n${tail}`;
    }
    const raw = crlf(`${head}Content-Type: text/plain\n\ndeep${tail}`);
    const started = performance.now();
    const tree = parseMime(raw);
    const structure = bodyStructure(raw, tree, true);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(depthOf(tree)).toBe(MAX_NESTING - 1);
    // The deepest multipart is left whole and shown as application/octet-stream, as Dovecot shows it.
    let leaf = tree;
    while (leaf.children[0]) leaf = leaf.children[0];
    expect(leaf.truncated).toBe(true);
    expect(text(raw, leaf).startsWith('("application" "octet-stream" ("boundary" "b99")')).toBe(true);
    expect(serializeImapValue(structure).length).toBeGreaterThan(0);
  });

  it('message/rfc822 nested 5,000 deep stops at the nesting limit', () => {
    let body = '';
    for (let i = 0; i < 5000; i++) body += 'Content-Type: message/rfc822\n\n';
    const raw = crlf(`${body}Subject: inside\n\nx\n`);
    const started = performance.now();
    const tree = parseMime(raw);
    expect(depthOf(tree)).toBe(MAX_NESTING - 1);
    expect(bodyStructure(raw, tree, true)).toBeTruthy();
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('a multipart of 50,000 parts keeps MAX_PARTS parts; the rest of the message is the last part, fast', () => {
    let body = 'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=p\n\n';
    for (let i = 0; i < 50_000; i++) body += `--p\n\n${i}\n`;
    const raw = crlf(`${body}--p--\n`);
    const started = performance.now();
    const tree = parseMime(raw);
    const structure = bodyStructure(raw, tree, true);
    expect(performance.now() - started).toBeLessThan(2000);
    expect(tree.children).toHaveLength(MAX_PARTS - 1);
    const last = tree.children.at(-1) as MimePart;
    expect(last.bodyEnd).toBe(raw.length);
    expect(Array.isArray(structure)).toBe(true);
  });

  it('a megabyte of lines that look like boundaries but are not is read in one pass', () => {
    const line = '--bb-not-the-boundary-at-all\r\n';
    const raw = Buffer.concat([crlf('Content-Type: multipart/mixed; boundary=zz\n\n--zz\n\n'), Buffer.from(line.repeat(40_000)), crlf('--zz--\n')]);
    const started = performance.now();
    const tree = parseMime(raw);
    expect(performance.now() - started).toBeLessThan(500);
    expect(tree.children).toHaveLength(1);
    expect(tree.children[0]?.bodyLines).toBe(39_999);
  });

  it('a header line of a megabyte without a line end', () => {
    const raw = Buffer.concat([Buffer.from('Subject: '), Buffer.alloc(1 << 20, 0x61)]);
    const tree = parseMime(raw);
    expect(tree.bodyStart).toBe(raw.length);
    expect(text(raw, tree)).toBe('("text" "plain" ("charset" "us-ascii") NIL NIL "7bit" 0 0)');
  });
});

describe('part numbers and sections', () => {
  const raw = crlf(`Subject: outer
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary=o

--o
Content-Type: text/plain

one
--o
Content-Type: message/rfc822

Subject: inner
MIME-Version: 1.0
Content-Type: multipart/alternative; boundary=i

--i
Content-Type: text/plain

two-one
--i
Content-Type: text/html

two-two
--i--
--o--
`);
  const tree = parseMime(raw);
  const section = (part: number[], more: Partial<Parameters<typeof fetchSection>[2]> = {}) =>
    fetchSection(raw, tree, { part, ...more }).toString('latin1');

  it.each([
    [[1], 'one'],
    [[2, 1], 'two-one'],
    [[2, 2], 'two-two'],
    [[1, 1], 'one'],
    [[3], ''],
    [[2, 3], ''],
  ])('BODY[%j] is %j', (path, want) => {
    expect(section(path)).toBe(want);
  });

  it('a message/rfc822 part: its body is the whole message, HEADER and TEXT are the message\'s, MIME is its own', () => {
    expect(section([2]).startsWith('Subject: inner\r\n')).toBe(true);
    expect(section([2], { text: 'HEADER' })).toBe('Subject: inner\r\nMIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=i\r\n\r\n');
    expect(section([2], { text: 'TEXT' }).startsWith('--i\r\n')).toBe(true);
    expect(section([2], { text: 'MIME' })).toBe('Content-Type: message/rfc822\r\n\r\n');
    expect(section([1], { text: 'HEADER' })).toBe('');
  });

  it('a single-part message is its own part 1', () => {
    const single = crlf('Subject: s\n\nbody\n');
    const root = parseMime(single);
    expect(findPart(root, [1])).toBe(root);
    expect(fetchSection(single, root, { part: [1] }).toString()).toBe('body\r\n');
    expect(fetchSection(single, root, { part: [1], text: 'MIME' }).toString()).toBe('Subject: s\r\n\r\n');
    expect(findPart(root, [2])).toBeNull();
  });

  it('slices the stored bytes without copying, and cuts partial ranges', () => {
    const body = fetchSection(raw, tree, { part: [] });
    expect(body.buffer).toBe(raw.buffer);
    expect(section([], { partial: { origin: 9, count: 5 } })).toBe('outer');
    expect(section([], { partial: { origin: raw.length, count: 5 } })).toBe('');
  });

  it('HEADER.FIELDS keeps folded lines and ends with an empty line', () => {
    const folded = crlf('Subject: a\n b\nX-Other: c\nFrom: d@example.com\n\nbody\n');
    const root = parseMime(folded);
    expect(fetchSection(folded, root, { part: [], text: 'HEADER.FIELDS', fields: ['from', 'SUBJECT'] }).toString()).toBe('Subject: a\r\n b\r\nFrom: d@example.com\r\n\r\n');
    expect(fetchSection(folded, root, { part: [], text: 'HEADER.FIELDS.NOT', fields: ['from', 'SUBJECT'] }).toString()).toBe('X-Other: c\r\n\r\n');
  });

  it('a NUL is sent as 0x80 (IMAP literals may not carry NUL); the size stays', () => {
    const withNul = Buffer.from('Subject: x\r\n\r\na\0b\r\n', 'latin1');
    const out = fetchSection(withNul, parseMime(withNul), { part: [1] });
    expect([...out]).toEqual([0x61, 0x80, 0x62, 0x0d, 0x0a]);
  });
});

describe('ENVELOPE from the header alone', () => {
  it('reads only up to the empty line, keeps encoded words and 8-bit bytes raw', () => {
    const raw = Buffer.from('Subject: =?utf-8?q?caf=C3=A9?= and caf\xc3\xa9\r\nFrom: =?utf-8?q?Ren=C3=A9?= <r@example.com>\r\n\r\nSubject: not this\r\n', 'latin1');
    const value = serializeImapValue(envelope(raw)).toString('latin1');
    expect(value).toBe('(NIL {31}\r\n=?utf-8?q?caf=C3=A9?= and caf\xc3\xa9 (("=?utf-8?q?Ren=C3=A9?=" NIL "r" "example.com")) (("=?utf-8?q?Ren=C3=A9?=" NIL "r" "example.com")) (("=?utf-8?q?Ren=C3=A9?=" NIL "r" "example.com")) NIL NIL NIL NIL NIL)');
  });
});

describe('BINARY undoes the transfer encoding', () => {
  const part = (cte: string, body: string) => crlf(`MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: application/octet-stream\nContent-Transfer-Encoding: ${cte}\n\n${body}\n--b--\n`);
  const binary = (raw: Buffer) => binarySection(raw, parseMime(raw), { part: [1] });

  it.each([
    ['base64', 'aGVs\nbG8=', 'hello'],
    ['BASE64', 'aGVsbG8gd29ybGQ=', 'hello world'],
    ['quoted-printable', 'caf=C3=A9 =\nsoft  \nend=20', 'café soft\r\nend '],
    ['7bit', 'as is', 'as is'],
    ['8bit', 'as is', 'as is'],
  ])('%s', (cte, body, want) => {
    const result = binary(part(cte, body));
    expect('bytes' in result && result.bytes.toString('utf8')).toBe(want);
  });

  it('an unknown encoding is UNKNOWN-CTE; undecodable data is PARSE', () => {
    expect(binary(part('x-uuencode', 'begin 644 x'))).toEqual({ error: 'UNKNOWN-CTE' });
    expect(binary(part('base64', 'not base64!'))).toEqual({ error: 'PARSE' });
    expect(binary(part('quoted-printable', 'bad =ZZ escape'))).toEqual({ error: 'PARSE' });
  });
});
