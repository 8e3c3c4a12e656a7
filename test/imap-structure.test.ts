import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  binarySection,
  bodyStructure,
  envelope,
  fetchSection,
  parseMime,
  serializeImapValue,
  type ImapValue,
  type SectionSpec,
} from '../src/lib/imap-message/index.js';
import { DOVECOT_MISSING, hasDovecot, startDovecot, type DovecotPeer, type ImapRawClient } from './helpers/dovecot.js';
import { fetchItems, type ParsedValue } from './helpers/imap-response.js';

// What our FETCH functions say about each message, against what Dovecot 2.3 (the reference) answers for the same
// bytes. Values are compared after reading both into the same shape, so a string Dovecot sends as a literal and
// we would quote still compares equal; everything else (order, NIL, case, sizes, bytes) must be identical.

const FIXTURES = new URL('./fixtures/eml/', import.meta.url);
const crlf = (text: string) => Buffer.from(text.replace(/\r?\n/g, '\r\n'), 'utf8');

/** Edge cases the corpus lacks; each is a shape where Dovecot's answer is a judgement call. */
const EDGE_CASES: Record<string, Buffer> = {
  'multipart-without-boundary': crlf(`From: a@example.com
Subject: no boundary parameter
MIME-Version: 1.0
Content-Type: multipart/mixed

--x
Content-Type: text/plain

hello
--x--
`),
  'boundary-prefixes': crlf(`From: a@example.com
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="abc"

preamble
--abc
Content-Type: multipart/alternative; boundary="abcdef"

--abcdef
Content-Type: text/plain

inner one
--abcdef
Content-Type: text/html

<p>inner two</p>
--abc
Content-Type: text/plain; charset="iso-8859-1"

outer two (closes the inner multipart without its closing boundary)
--abc--trailing garbage
epilogue
`),
  digest: crlf(`From: digest@example.com
Subject: Digest
MIME-Version: 1.0
Content-Type: multipart/digest; boundary="d"

--d

From: one@example.com
Subject: First

Body one
--d
Content-Type: text/plain

Not a message
--d--
`),
  'groups-and-broken-addresses': crlf(`From: "Team \\"Q\\" Lead" <lead@example.com> (comment)
Sender: bare-word
Reply-To: <>
To: undisclosed-recipients:;
Cc: Friends: a@example.com, "B  B" <b@example.com>;, c@example.com (Cee Person)
Bcc: John Smith, broken@, @nolocal.example, <@route.example:x@y.example>
Subject:   spaced \t subject  with "quotes" and \\ backslash
Date: Mon, 1 Jan 2024
 10:00:00 +0000
Message-ID: <id@example.com>
In-Reply-To: <a@example.com>
 <b@example.com>

body
`),
  'content-headers-without-mime-version': crlf(`From: a@example.com
Content-Transfer-Encoding: base64
Content-Disposition: attachment; filename=x.bin

aGVsbG8=
`),
  'header-cut-by-boundary': crlf(`From: a@example.com
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary=b

--b
Content-Type: text/plain
--b
Content-Type: text/plain

second
--b--
`),
  'all-content-fields': crlf(`From: a@example.com
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary=b; Charset=X
Content-Language: en, de-CH
Content-Location: http://example.com/
 folded

--b
Content-Type: TEXT/Plain; Format=Flowed
Content-ID: <cid@example.com>
Content-Description: A description
 on two lines
Content-MD5: Q2hlY2sgSW50ZWdyaXR5IQ==
Content-Language: fr
Content-Disposition: INLINE; FileName="a b.txt"; size=3
Content-Disposition: attachment
Content-Transfer-Encoding: QUOTED-PRINTABLE
Content-Location: a.txt

abc
--b
Content-Type: application/x-thing; name*0="one"; name*2="three"; title*=us-ascii'en'This%20is; title*1*=%20more
Content-Type: text/plain

x
--b
Content-Type: message/rfc822

Subject: no MIME-Version here
Content-Type: text/html

<p>plain text after all</p>
--b--
`),
  'message-rfc822-at-root': crlf(`From: outer@example.com
Subject: outer
MIME-Version: 1.0
Content-Type: message/rfc822

From: inner@example.com
Subject: inner
MIME-Version: 1.0
Content-Type: multipart/alternative; boundary=i

--i
Content-Type: text/plain

inner text
--i
Content-Type: text/html

<b>inner</b>
--i--
`),
  'broken-content-type': crlf(`From: a@example.com
MIME-Version: 1.0
Content-Type: text

body
`),
};

/** One multipart with more parts than anyone may have: past the limit the rest belongs to the last part. */
function manyParts(count: number): Buffer {
  let text = 'From: a@example.com\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=m\n\n';
  for (let i = 0; i < count; i++) text += `--m\nContent-Type: text/plain\n\npart ${i}\n`;
  return crlf(`${text}--m--\n`);
}

/** message/rfc822 inside message/rfc822, deeper than the nesting limit. */
function deepMessages(depth: number): Buffer {
  let text = '';
  for (let i = 0; i < depth; i++) text += `Subject: level ${i}\nMIME-Version: 1.0\nContent-Type: message/rfc822\n\n`;
  return crlf(`${text}Subject: innermost\n\nbody\n`);
}
EDGE_CASES['too-many-parts'] = manyParts(10_050);
EDGE_CASES['too-deep-messages'] = deepMessages(120);

interface Sample {
  name: string;
  raw: Buffer;
}

function samples(): Sample[] {
  const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.eml')).sort();
  const out: Sample[] = files.map((name) => ({ name, raw: readFileSync(new URL(name, FIXTURES)) }));
  for (const [name, raw] of Object.entries(EDGE_CASES)) out.push({ name, raw });
  return out;
}

/** The fixture with NUL bytes in a header and in bodies. */
const NUL_BYTES = '30-broken-nul-bytes.eml';

/** The one fixture stored with bare LFs: Dovecot serves and counts it with CRLF, we serve it as stored. */
const BARE_LF = '24-broken-bare-lf.eml';

const SECTIONS: Array<[string, SectionSpec]> = [
  ['BODY[]', { part: [] }],
  ['BODY[HEADER]', { part: [], text: 'HEADER' }],
  ['BODY[TEXT]', { part: [], text: 'TEXT' }],
  ['BODY[1]', { part: [1] }],
  ['BODY[1.MIME]', { part: [1], text: 'MIME' }],
  ['BODY[2]', { part: [2] }],
  ['BODY[2.MIME]', { part: [2], text: 'MIME' }],
  ['BODY[2.HEADER]', { part: [2], text: 'HEADER' }],
  ['BODY[2.TEXT]', { part: [2], text: 'TEXT' }],
  ['BODY[3]', { part: [3] }],
  ['BODY[3.HEADER]', { part: [3], text: 'HEADER' }],
  ['BODY[1.1]', { part: [1, 1] }],
  ['BODY[1.2]', { part: [1, 2] }],
  ['BODY[1.2.MIME]', { part: [1, 2], text: 'MIME' }],
  ['BODY[2.1]', { part: [2, 1] }],
  ['BODY[3.1]', { part: [3, 1] }],
  ['BODY[1.1.1]', { part: [1, 1, 1] }],
  ['BODY[1.2.1]', { part: [1, 2, 1] }],
  ['BODY[HEADER.FIELDS (SUBJECT FROM)]', { part: [], text: 'HEADER.FIELDS', fields: ['SUBJECT', 'FROM'] }],
  ['BODY[HEADER.FIELDS.NOT (SUBJECT FROM CONTENT-TYPE)]', { part: [], text: 'HEADER.FIELDS.NOT', fields: ['SUBJECT', 'FROM', 'CONTENT-TYPE'] }],
  ['BODY[3.HEADER.FIELDS (SUBJECT)]', { part: [3], text: 'HEADER.FIELDS', fields: ['subject'] }],
  ['BODY[2.HEADER.FIELDS (SUBJECT)]', { part: [2], text: 'HEADER.FIELDS', fields: ['Subject'] }],
  ['BODY[2.HEADER.FIELDS.NOT (SUBJECT)]', { part: [2], text: 'HEADER.FIELDS.NOT', fields: ['SUBJECT'] }],
  ['BODY[1.HEADER.FIELDS.NOT (FROM)]', { part: [1], text: 'HEADER.FIELDS.NOT', fields: ['FROM'] }],
  ['BODY[]<10>', { part: [], partial: { origin: 10, count: 20 } }],
  ['BODY[TEXT]<5>', { part: [], text: 'TEXT', partial: { origin: 5, count: 1000 } }],
  ['BODY[1]<100000000>', { part: [1], partial: { origin: 100_000_000, count: 5 } }],
];
/** How each section is asked for (partial ranges go in the request, Dovecot names them by origin only). */
const request = (name: string, spec: SectionSpec) =>
  `BODY.PEEK${name.replace(/^BODY/, '').replace(/<\d+>$/, '')}${spec.partial ? `<${spec.partial.origin}.${spec.partial.count}>` : ''}`;

const text = (value: ImapValue | ParsedValue) => serializeImapValue(value).toString('latin1');

function ours(raw: Buffer) {
  const tree = parseMime(raw);
  return {
    ENVELOPE: envelope(raw, 0, tree.bodyStart),
    BODYSTRUCTURE: bodyStructure(raw, tree, true),
    BODY: bodyStructure(raw, tree, false),
    'RFC822.SIZE': raw.length,
    section: (spec: SectionSpec) => fetchSection(raw, tree, spec),
    binary: (path: number[]) => binarySection(raw, tree, { part: path }),
  };
}

const describeBinary = (value: unknown) => (Buffer.isBuffer(value) ? `bytes ${value.toString('latin1')}` : String(value));

describe.skipIf(!hasDovecot())('FETCH answers against Dovecot', () => {
  const all = samples();
  let dovecot: DovecotPeer;
  let client: ImapRawClient;
  let items: Map<number, Map<string, ParsedValue>>;

  beforeAll(async () => {
    dovecot = await startDovecot();
    await dovecot.addMessages('INBOX', all.map((s) => ({ raw: s.raw })));
    client = await dovecot.connect();
    await client.command('SELECT INBOX');
    items = fetchItems(await client.command('FETCH 1:* (ENVELOPE BODYSTRUCTURE BODY RFC822.SIZE)'));
    const sections = fetchItems(await client.command(`FETCH 1:* (${SECTIONS.map(([n, s]) => request(n, s)).join(' ')})`));
    for (const [seq, map] of sections) for (const [k, v] of map) items.get(seq)?.set(k, v);
  }, 60_000);

  /** BINARY items are asked one per command: Dovecot fails a whole FETCH with NO [PARSE] when one part is broken. */
  const BINARY_PATHS = [[1], [2], [1, 1], [2, 1], [3]];
  const binary = new Map<string, Buffer | number | 'PARSE' | 'UNKNOWN-CTE'>();

  beforeAll(async () => {
    for (let seq = 1; seq <= all.length; seq++) {
      for (const path of BINARY_PATHS) {
        for (const item of ['BINARY.PEEK', 'BINARY.SIZE']) {
          const answer = await client.command(`FETCH ${seq} (${item}[${path.join('.')}])`);
          const tagged = /^t\d+ (OK|NO|BAD) (\[[A-Z-]+\])?/m.exec(answer.toString('latin1'));
          const key = `${seq} ${item.replace('.PEEK', '')}[${path.join('.')}]`;
          if (tagged?.[1] === 'OK') binary.set(key, fetchItems(answer).get(seq)?.get(key.slice(key.indexOf(' ') + 1)) as Buffer | number);
          else binary.set(key, (tagged?.[2] ?? '').replace(/[[\]]/g, '') as 'PARSE');
        }
      }
    }
  }, 120_000);

  afterAll(async () => {
    await client?.close();
    await dovecot?.stop();
  });

  it.each(all.map((s, i) => [s.name, i + 1] as const))('%s: ENVELOPE, BODYSTRUCTURE, BODY, RFC822.SIZE and sections', (name, seq) => {
    const sample = all[seq - 1] as Sample;
    const theirs = items.get(seq);
    expect(theirs, `no FETCH answer for ${name}`).toBeDefined();
    // Dovecot adds the CRs a bare-LF message lacks; we serve the stored bytes. Same structure over CRLF bytes.
    const raw = name === BARE_LF ? crlf(sample.raw.toString('utf8')) : sample.raw;
    const mine = ours(raw);
    for (const item of ['ENVELOPE', 'BODYSTRUCTURE', 'BODY', 'RFC822.SIZE'] as const) {
      // Dovecot writes a header's NUL as 0x80 when it reads the header alone and as U+FFFD when, as here, one FETCH
      // also asks for the body's structure; ours is the first (decision 613). test/imap-dovecot.test.ts compares that message's
      // ENVELOPE byte for byte as a client asks for it.
      if (item === 'ENVELOPE' && name === NUL_BYTES) continue;
      expect(text(mine[item]), `${name} ${item}`).toBe(text(theirs?.get(item) ?? 'missing'));
    }
    for (const [label, spec] of SECTIONS) {
      const key = label;
      const want = theirs?.get(key);
      expect(want, `${name} ${key} missing from Dovecot's answer`).toBeInstanceOf(Buffer);
      expect(mine.section(spec).toString('latin1'), `${name} ${key}`).toBe((want as Buffer).toString('latin1'));
    }
    for (const path of BINARY_PATHS) {
      // The same for a part's NUL in BINARY: 0x80 in a plain literal or NUL in a literal8, by what Dovecot parsed before.
      if (name === NUL_BYTES) continue;
      const result = mine.binary(path);
      const got = 'error' in result ? result.error : result.bytes;
      const label = path.join('.');
      expect(describeBinary(got), `${name} BINARY[${label}]`).toBe(describeBinary(binary.get(`${seq} BINARY[${label}]`)));
      const size = 'error' in result ? result.error : result.bytes.length;
      expect(size, `${name} BINARY.SIZE[${label}]`).toBe(binary.get(`${seq} BINARY.SIZE[${label}]`));
    }
  });
});

describe.skipIf(!hasDovecot())('the Dovecot peer', () => {
  it('stores flags, INTERNALDATE and other folders, and stops without leaving processes', async () => {
    const peer = await startDovecot();
    try {
      const internalDate = new Date('2024-03-01T12:34:56Z');
      await peer.addMessages('Archive', [{ raw: crlf('Subject: kept\n\nx\n'), flags: ['\\Seen', '\\Flagged'], internalDate }]);
      const imap = await peer.connect();
      expect((await imap.command('EXAMINE Archive')).toString()).toContain('* 1 EXISTS');
      const fetched = (await imap.command('FETCH 1 (FLAGS INTERNALDATE RFC822.SIZE)')).toString();
      expect(fetched).toMatch(/FLAGS \(\\Flagged \\Seen( \\Recent)?\)/);
      expect(fetched).toContain('INTERNALDATE "01-Mar-2024 12:34:56 +0000"');
      expect(fetched).toContain('RFC822.SIZE 20');
      await imap.close();
    } finally {
      await peer.stop();
    }
    await expect(peer.connect()).rejects.toThrow();
  });
});

describe('a message stored with bare LFs is served and measured as stored', () => {
  it('sizes and BODY[] are the stored bytes (Dovecot would add a CR to each line)', () => {
    const raw = readFileSync(new URL(BARE_LF, FIXTURES));
    expect(raw.includes('\r')).toBe(false);
    const tree = parseMime(raw);
    expect(fetchSection(raw, tree, { part: [] })).toBe(raw);
    const [plain] = bodyStructure(raw, tree, false) as ImapValue[];
    // "backup ok\nline two" is 18 bytes and 1 line here; Dovecot says 19 bytes (with the CR it adds), 1 line.
    expect(text(plain as ImapValue)).toBe('("text" "plain" ("charset" "utf-8") NIL NIL "7bit" 18 1)');
  });
});

if (!hasDovecot()) describe.skip(`FETCH answers against Dovecot: ${DOVECOT_MISSING}`, () => undefined);
