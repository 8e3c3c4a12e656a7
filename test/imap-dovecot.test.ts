import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/lib/logger.js';
import { createImapServer } from '../src/transports/imap/server.js';
import { TEST_DIALECT } from './helpers/database.js';
import { connectClient, DOVECOT_MISSING, hasDovecot, startDovecot, type DovecotPeer, type ImapRawClient } from './helpers/dovecot.js';
import { fetchItems, parseValue, type ParsedValue } from './helpers/imap-response.js';
import { mailWorld } from './helpers/world.js';

// The whole server against Dovecot 2.3 (the reference): the same messages in a Mailroom INBOX (delivered over SMTP)
// and in a private Dovecot's INBOX (the bytes Mailroom stored, with its INTERNALDATE), the same commands on both over
// real sockets, and the answers compared as a client reads them. Normalised, and only these: response texts (and the
// tag), UIDVALIDITY and MODSEQ values, UIDs, and the differences kept by decision 596 (PERMANENTFLAGS' \Draft,
// NONEXISTENT) and Dovecot's CLIENTBUG advice. Messages with NUL bytes are also compared byte for byte (decision 613),
// and the edges of decisions 610-611: an empty mailbox, numbers past 32 bits.

const FIXTURES = new URL('./fixtures/eml/', import.meta.url);
const MAILBOX = 'interop@mailroom.localhost';
const crlf = (text: string) => Buffer.from(text.replace(/\r?\n/g, '\r\n'), 'utf8');

/** A few plain messages beside the MIME corpus. */
const PLAIN: Array<[string, Buffer]> = [
  ['plain-ascii', crlf(`From: Plain Sender <plain@sender.test>
To: interop@mailroom.localhost
Subject: A plain one
Date: Fri, 20 Nov 2026 10:00:00 +0000
Message-ID: <plain-1@sender.test>

Just text.
`)],
  ['plain-qp-utf8', crlf(`From: plain@sender.test
To: "Interop" <interop@mailroom.localhost>, other@example.com
Cc: cc@example.com
Subject: =?utf-8?q?caf=C3=A9?= and more
Date: Sat, 21 Nov 2026 08:30:00 -0500
Message-ID: <plain-2@sender.test>
In-Reply-To: <plain-1@sender.test>
MIME-Version: 1.0
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: quoted-printable

Caf=C3=A9 au lait.
Second line.
`)],
  ['plain-base64', crlf(`From: plain@sender.test
To: interop@mailroom.localhost
Subject: Base64 body
MIME-Version: 1.0
Content-Type: text/plain; charset=us-ascii
Content-Transfer-Encoding: base64

SGVsbG8sIHdvcmxkIQ==
`)],
];

/** Messages with NUL bytes and 8-bit text: in a header, in an 8bit body, in a base64 part (BINARY decodes it). */
const WITH_NUL: Array<[string, Buffer]> = [
  ['nul-header', crlf(`From: "Nul\0Name" <nul@sender.test>
To: interop@mailroom.localhost
Subject: caf\u00e9 with a \0 NUL
Date: Sun, 22 Nov 2026 10:00:00 +0000
Message-ID: <nul-1@sender.test>
In-Reply-To: <nul\0x@sender.test>

Plain body.
`)],
  ['nul-body', crlf(`From: nul@sender.test
To: interop@mailroom.localhost
Subject: NUL in an 8bit body
MIME-Version: 1.0
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: 8bit

before\0after caf\u00e9
`)],
  ['nul-base64', crlf(`From: nul@sender.test
To: interop@mailroom.localhost
Subject: NUL in a base64 part
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="b"

--b
Content-Type: application/octet-stream
Content-Transfer-Encoding: base64

${Buffer.from('a\0b\xff\r\nc\0', 'latin1').toString('base64')}
--b
Content-Type: text/plain

second
--b--
`)],
];

const NUL_FIXTURE = '30-broken-nul-bytes.eml';
const HEADER_FIELDS = 'BODY.PEEK[HEADER.FIELDS (From To Subject Date Message-ID)]';
const FETCH_ALL = `FETCH 1:* (FLAGS RFC822.SIZE ENVELOPE BODYSTRUCTURE ${HEADER_FIELDS} BODY.PEEK[1.MIME] BODY.PEEK[TEXT]<0.100>)`;
const FETCH_STRUCTURES = 'FETCH 1:* (FLAGS ENVELOPE BODYSTRUCTURE BODY)';

/** The FETCHes compared byte for byte for a message with NUL bytes (its number `seq`), by step name. */
function nulSteps(name: string, seq: number): Array<[string, string]> {
  return [
    [`ENVELOPE of ${name}`, `FETCH ${seq} (ENVELOPE)`],
    [`BODY[] of ${name}`, `FETCH ${seq} (BODY.PEEK[])`],
    [`BODY[TEXT] of ${name}`, `FETCH ${seq} (BODY.PEEK[TEXT])`],
    [`BINARY[1] of ${name}`, `FETCH ${seq} (BINARY.PEEK[1])`],
    [`BINARY.SIZE[1] of ${name}`, `FETCH ${seq} (BINARY.SIZE[1])`],
  ];
}

/** Single-part base64 and quoted-printable messages and a multipart one, whose BINARY sections are compared. */
const BINARY_TEXT = ['plain-base64', 'plain-qp-utf8', '05-mixed-pdf.eml'];

/** BINARY with BODY's sections (TEXT, the whole message, HEADER), compared byte for byte, literal8 or not. */
function binaryTextSteps(name: string, seq: number): Array<[string, string]> {
  return [
    [`BINARY.PEEK[TEXT] of ${name}`, `FETCH ${seq} (BINARY.PEEK[TEXT])`],
    [`BINARY.SIZE[TEXT] of ${name}`, `FETCH ${seq} (BINARY.SIZE[TEXT])`],
    [`BINARY[TEXT] of ${name}`, `FETCH ${seq} (BINARY[TEXT])`],
    [`BINARY.PEEK[TEXT]<2.5> of ${name}`, `FETCH ${seq} (BINARY.PEEK[TEXT]<2.5>)`],
    [`BINARY.PEEK[] and BINARY.SIZE[] of ${name}`, `FETCH ${seq} (BINARY.PEEK[] BINARY.SIZE[])`],
    [`BINARY.PEEK[HEADER] and [1.MIME] of ${name}`, `FETCH ${seq} (BINARY.PEEK[HEADER] BINARY.PEEK[1.MIME] BINARY.SIZE[HEADER.FIELDS (Subject)])`],
  ];
}

/** The steps after the script's: 32-bit limits in INBOX, then an empty mailbox (Archive holds nothing on either). */
const EDGES: Array<[string, string]> = [
  ['FETCH past 32 bits', 'FETCH 4294967296 (FLAGS)'],
  ['UID FETCH past 32 bits', 'UID FETCH 1:4294967296 (FLAGS)'],
  ['UID FETCH of the largest UID', 'UID FETCH 4294967295 (FLAGS)'],
  ['UID SEARCH past 32 bits', 'UID SEARCH UID 4294967296'],
  ['UID STORE past 32 bits', 'UID STORE 4294967296 +FLAGS (\\Seen)'],
  ['SELECT an empty mailbox', 'SELECT Archive'],
  ['FETCH 1:* of an empty mailbox', 'FETCH 1:* (FLAGS)'],
  ['FETCH * of an empty mailbox', 'FETCH * (FLAGS)'],
  ['FETCH 1 of an empty mailbox', 'FETCH 1 (FLAGS)'],
  ['UID FETCH 1:* of an empty mailbox', 'UID FETCH 1:* (FLAGS)'],
  ['SEARCH 1:* of an empty mailbox', 'SEARCH 1:*'],
  ['SEARCH ALL of an empty mailbox', 'SEARCH ALL'],
  ['UID SEARCH 1:* of an empty mailbox', 'UID SEARCH 1:*'],
  ['STORE 1:* of an empty mailbox', 'STORE 1:* +FLAGS (\\Seen)'],
  ['UID STORE 1:* of an empty mailbox', 'UID STORE 1:* +FLAGS (\\Seen)'],
  ['COPY 1:* of an empty mailbox', 'COPY 1:* INBOX'],
  ['UID COPY 1:* of an empty mailbox', 'UID COPY 1:* INBOX'],
];

/** The session both servers get, in order: name and command. `n` is the number of messages in INBOX. */
function script(n: number, nul: Array<[string, number]> = [], binaryText: Array<[string, number]> = []): Array<[string, string]> {
  const steps: Array<[string, string]> = [
    ['NAMESPACE', 'NAMESPACE'],
    ['LIST root', 'LIST "" ""'],
    ['LIST INBOX', 'LIST "" INBOX'],
    ['SUBSCRIBE INBOX', 'SUBSCRIBE INBOX'],
    ['LSUB INBOX', 'LSUB "" INBOX'],
    ['LIST RETURN (CHILDREN)', 'LIST "" INBOX RETURN (CHILDREN)'],
    ['LIST RETURN ()', 'LIST "" INBOX RETURN ()'],
    ['LIST (SUBSCRIBED)', 'LIST (SUBSCRIBED) "" INBOX'],
    ['LIST pattern list', 'LIST "" (INBOX)'],
    ['STATUS in any order', 'STATUS INBOX (UNSEEN MESSAGES UIDNEXT UIDVALIDITY RECENT)'],
    ['STATUS of a missing mailbox', 'STATUS Nope (MESSAGES)'],
    ['CREATE of INBOX', 'CREATE inbox'],
    ['CREATE of an existing folder', 'CREATE Archive'],
    ['CREATE of an existing folder with the delimiter', 'CREATE Archive/'],
    ['EXAMINE', 'EXAMINE INBOX'],
    ['STORE on an EXAMINEd mailbox', 'STORE 1 +FLAGS (\\Flagged)'],
    ['EXPUNGE on an EXAMINEd mailbox', 'EXPUNGE'],
    ['SELECT', 'SELECT INBOX'],
    ['FETCH', FETCH_ALL],
    // No section: answered from the kept structures, computed by the first, read back by the second (decision 600).
    ['FETCH structures', FETCH_STRUCTURES],
    ['FETCH structures again', FETCH_STRUCTURES],
    ['FETCH INTERNALDATE', 'FETCH 1:* (INTERNALDATE)'],
    ['FETCH item order', 'FETCH 1 (BODY.PEEK[TEXT]<0.10> ENVELOPE FLAGS UID RFC822.SIZE)'],
    ['UID FETCH', 'UID FETCH 1:* (FLAGS)'],
  ];
  for (let seq = 1; seq <= n; seq++) steps.push([`BINARY ${seq}`, `FETCH ${seq} (BINARY.PEEK[1])`]);
  steps.push(
    ['FETCH past the end', `FETCH ${n + 1} (FLAGS)`],
    ['FETCH a range past the end', `FETCH 1:${n + 3} (FLAGS)`],
    ['FETCH 0', 'FETCH 0 (FLAGS)'],
    ['FETCH a bad sequence set', 'FETCH 1:x (FLAGS)'],
    ['FETCH an unknown item', 'FETCH 1 (NOSUCHITEM)'],
    ['unknown command', 'FROBNICATE'],
    ['UID FETCH of a missing UID', 'UID FETCH 4000000 (FLAGS)'],
    ['UID FETCH of missing UIDs', 'UID FETCH 4000000:4000010 (FLAGS)'],
    ['STORE', 'STORE 1 +FLAGS (\\Seen \\Flagged)'],
    ['FETCH that sets \\Seen', 'FETCH 1:2 (BODY[HEADER.FIELDS (Subject)])'],
    ['STATUS HIGHESTMODSEQ while selected', 'STATUS INBOX (HIGHESTMODSEQ MESSAGES)'],
    ['STORE once CONDSTORE is on', 'STORE 3 +FLAGS (\\Answered)'],
    ['COPY to a name that is not mUTF-7', 'COPY 1 "a&b"'],
    ['SELECT of a name that is not mUTF-7', 'SELECT "a&b"'],
    ['SELECT of a missing mailbox', 'SELECT Nope'],
    ['FETCH with nothing selected', 'FETCH 1 (FLAGS)'],
    ['EXAMINE again', 'EXAMINE INBOX'],
    ['conditional STORE on an EXAMINEd mailbox', 'STORE 1 (UNCHANGEDSINCE 1) +FLAGS (\\Flagged)'],
  );
  for (const [name, seq] of nul) steps.push(...nulSteps(name, seq));
  for (const [name, seq] of binaryText) steps.push(...binaryTextSteps(name, seq));
  steps.push(...EDGES);
  return steps;
}

/** A value as a client reads it: a literal and a quoted string are the same string. */
function canon(v: ParsedValue): string {
  if (v === null) return 'NIL';
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') return v;
  if (Buffer.isBuffer(v)) return JSON.stringify(v.toString('latin1'));
  return `(${v.map(canon).join(' ')})`;
}

/** Values that legitimately differ between two servers, by the name before them. */
function normaliseData(values: ParsedValue[]): string[] {
  const out = values.map(canon);
  const name = String(values[1] ?? '');
  if (name === 'FETCH' && Array.isArray(values[2])) {
    const items = values[2];
    const pairs: string[] = [];
    for (let i = 0; i + 1 < items.length; i += 2) {
      const key = String(items[i]);
      pairs.push(key, key === 'UID' ? 'U' : key === 'MODSEQ' ? '(N)' : canon(items[i + 1] as ParsedValue));
    }
    out[2] = `(${pairs.join(' ')})`;
  }
  if (values[0] === 'STATUS' && Array.isArray(values[2])) {
    const items = values[2];
    out[2] = `(${items.map((v, i) => (i % 2 === 1 && /^(UIDVALIDITY|HIGHESTMODSEQ|UIDNEXT)$/.test(String(items[i - 1])) ? 'N' : canon(v))).join(' ')})`;
  }
  return out;
}

/** A response code without the values that differ (PERMANENTFLAGS' \Draft: Mailroom does not keep it). */
function normaliseCode(code: string): string {
  const [name] = code.split(' ');
  if (name === 'UIDVALIDITY' || name === 'HIGHESTMODSEQ' || name === 'UIDNEXT') return `${name} N`;
  if (name === 'CAPABILITY') return name;
  // Mailroom adds RFC 5530's NONEXISTENT where Dovecot 2.3 says a bare NO; CLIENTBUG is Dovecot's advice (decision 596).
  if (name === 'NONEXISTENT' || name === 'CLIENTBUG') return '';
  if (name === 'PERMANENTFLAGS') return code.replace(/ ?\\Draft/, '').replace('( ', '(');
  return code;
}

/**
 * Every response of a command, one string each: status responses as their status and code (the text is the
 * server's own), data responses as their values, normalised.
 */
function shape(bytes: Buffer): string[] {
  const out: string[] = [];
  let pos = 0;
  while (pos < bytes.length) {
    const eol = bytes.indexOf('\r\n', pos);
    const line = bytes.toString('latin1', pos, eol < 0 ? bytes.length : eol);
    const status = /^(\*|t\d+) (OK|NO|BAD|BYE|PREAUTH)(?: \[([^\]]*)\])?/.exec(line);
    if (status) {
      const code = status[3] === undefined ? '' : normaliseCode(status[3]);
      out.push(`${status[1] === '*' ? '*' : 'tag'} ${status[2]}${code === '' ? '' : ` [${code}]`}`);
      pos = eol < 0 ? bytes.length : eol + 2;
      continue;
    }
    const values: ParsedValue[] = [];
    pos += line.startsWith('* ') ? 2 : 0;
    while (pos < bytes.length && !(bytes[pos] === 0x0d && bytes[pos + 1] === 0x0a)) {
      if (bytes[pos] === 0x20) {
        pos++;
        continue;
      }
      const [value, next] = parseValue(bytes, pos);
      values.push(value);
      pos = next;
    }
    pos += 2;
    out.push(`* ${normaliseData(values).join(' ')}`);
  }
  return out;
}

/** The FETCH lines of a response by message number (normalised). */
function fetchLines(bytes: Buffer): Map<number, string> {
  const out = new Map<number, string>();
  for (const line of shape(bytes)) {
    const m = /^\* (\d+) FETCH /.exec(line);
    if (m) out.set(Number(m[1]), line);
  }
  return out;
}

/** Runs the script on one connection: each step's bytes, by name. */
async function run(client: ImapRawClient, steps: Array<[string, string]>): Promise<Map<string, Buffer>> {
  const answers = new Map<string, Buffer>();
  for (const [name, command] of steps) answers.set(name, await client.command(command));
  await client.close();
  return answers;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
/** `21-Nov-2026 12:00:00 +0000` as a Date. */
function internalDate(text: string): Date {
  const m = /^ ?(\d{1,2})-(\w{3})-(\d{4}) (\d\d):(\d\d):(\d\d) ([+-])(\d\d)(\d\d)$/.exec(text);
  if (!m) throw new Error(`not an INTERNALDATE: ${text}`);
  const offset = (m[7] === '-' ? -1 : 1) * (Number(m[8]) * 60 + Number(m[9]));
  return new Date(Date.UTC(Number(m[3]), MONTHS.indexOf(m[2]!), Number(m[1]), Number(m[4]), Number(m[5]), Number(m[6])) - offset * 60_000);
}

describe.skipIf(!hasDovecot())(`IMAP answers against Dovecot (${TEST_DIALECT})`, () => {
  const world = mailWorld({ peer: false, env: { MAILROOM_ALLOW_PLAINTEXT_AUTH: 'loopback' } });
  let dovecot: DovecotPeer;
  let names: string[] = [];
  let ours: Map<string, Buffer>;
  let theirs: Map<string, Buffer>;
  const refused: string[] = [];
  let nulMessages: string[] = [];

  /** Delivers the corpus over SMTP; returns what INBOX then holds (bytes and INTERNALDATE), in UID order. */
  async function deliverCorpus(port: number, password: string): Promise<Array<{ raw: Buffer; date: Date }>> {
    const corpus: Array<[string, Buffer]> = readdirSync(FIXTURES).filter((f) => f.endsWith('.eml')).sort().map((f) => [f, readFileSync(new URL(f, FIXTURES))]);
    for (const [name, raw] of [...corpus, ...PLAIN, ...WITH_NUL]) {
      try {
        await world.h.sendRaw(raw, { from: 'corpus@sender.test', to: [MAILBOX] });
        names.push(name);
      } catch {
        refused.push(name);
      }
    }
    const client = await connectClient(port, MAILBOX, `"${password}"`);
    await client.command('EXAMINE INBOX');
    const items = fetchItems(await client.command('FETCH 1:* (INTERNALDATE BODY.PEEK[])'));
    await client.close();
    return [...items.keys()].sort((a, b) => a - b).map((seq) => {
      const item = items.get(seq)!;
      return { raw: item.get('BODY[]') as Buffer, date: internalDate((item.get('INTERNALDATE') as Buffer).toString('latin1')) };
    });
  }

  beforeAll(async () => {
    const tenant = await world.tenant('Interop', [MAILBOX]);
    const { password } = await world.appPassword(tenant, MAILBOX, 'interop');
    const server = world.own(createImapServer({ access: world.h.services.imapAccess, logger: createLogger('silent'), appendLimit: 1024 * 1024, maxClients: 20, maxClientsPerIp: 10, allowPlaintextAuth: 'loopback', tls: null }));
    const port = await server.listen('127.0.0.1', 0);
    const stored = await deliverCorpus(port, password);
    // INBOX may hold fewer than were accepted (a report is filed elsewhere); the comparison is over what it holds.
    names = names.slice(0, stored.length);
    dovecot = await startDovecot();
    await dovecot.addMessages('INBOX', stored.map((m) => ({ raw: m.raw, internalDate: m.date })));
    await dovecot.addMessages('Archive', []);
    // A first session takes \Recent from every message (Mailroom never sets it): both then say 0 RECENT.
    const first = await dovecot.connect();
    await first.command('SELECT INBOX');
    await first.close();
    const nul = [NUL_FIXTURE, ...WITH_NUL.map(([name]) => name)].filter((name) => names.includes(name));
    nulMessages = nul;
    const seqOf = (name: string): [string, number] => [name, names.indexOf(name) + 1];
    const steps = script(stored.length, nul.map(seqOf), BINARY_TEXT.filter((name) => names.includes(name)).map(seqOf));
    ours = await run(await connectClient(port, MAILBOX, `"${password}"`), steps);
    theirs = await run(await dovecot.connect(), steps);
  }, 180_000);

  afterAll(async () => {
    await dovecot?.stop();
  });

  it('holds the MIME corpus and the plain messages in INBOX', () => {
    expect(refused, 'messages the SMTP listener refused').toEqual([]);
    expect(names.length).toBeGreaterThanOrEqual(30);
  });

  const each = (from: string, to: string) => {
    const all = script(0).map(([name]) => name);
    return all.slice(all.indexOf(from), all.indexOf(to) + 1);
  };

  it.each(each('NAMESPACE', 'SELECT'))('%s: the same responses', (step) => {
    expect(shape(ours.get(step)!), step).toEqual(shape(theirs.get(step)!));
  });

  it.each(['FETCH', 'FETCH structures', 'FETCH structures again'])('%s: the same data for every message', (step) => {
    const mine = fetchLines(ours.get(step)!);
    const reference = fetchLines(theirs.get(step)!);
    expect(reference.size).toBe(names.length);
    for (const [seq, line] of reference) expect(mine.get(seq), `message ${seq} (${names[seq - 1]})`).toBe(line);
    expect(shape(ours.get(step)!).at(-1)).toBe(shape(theirs.get(step)!).at(-1));
  });

  it('FETCH structures again: byte for byte the answer of the first, which computed them', () => {
    expect(ours.get('FETCH structures again')!.toString('latin1').replace(/^t\d+ /m, '')).toBe(ours.get('FETCH structures')!.toString('latin1').replace(/^t\d+ /m, ''));
  });

  it.each(['FETCH INTERNALDATE', 'FETCH item order', 'UID FETCH'])('%s: the same responses', (step) => {
    expect(shape(ours.get(step)!), step).toEqual(shape(theirs.get(step)!));
  });

  it('BINARY.PEEK[1]: the same decoded bytes, or the same NO and code, for every message', () => {
    for (let seq = 1; seq <= names.length; seq++) {
      const step = `BINARY ${seq}`;
      const reference = shape(theirs.get(step)!);
      const tagged = reference.at(-1)!;
      const mine = shape(ours.get(step)!);
      expect(mine.at(-1), `${step} (${names[seq - 1]})`).toBe(tagged);
      // After a NO, which partial lines a server wrote first is its own affair.
      if (tagged === 'tag OK') expect(mine, `${step} (${names[seq - 1]})`).toEqual(reference);
    }
  });

  it.each(each('FETCH past the end', 'conditional STORE on an EXAMINEd mailbox'))('%s: the same responses', (step) => {
    expect(shape(ours.get(step)!), step).toEqual(shape(theirs.get(step)!));
  });

  it('messages with NUL bytes and 8-bit text: ENVELOPE, BODY[] and BINARY byte for byte', () => {
    expect(nulMessages).toHaveLength(WITH_NUL.length + 1);
    // Everything up to the tagged line to the byte; the tagged line by its status.
    const answer = (b: Buffer) => `${b.subarray(0, b.lastIndexOf('\r\nt') + 2).toString('latin1')}${shape(b).at(-1)}`;
    const differ: Array<[string, string, string]> = [];
    for (const name of nulMessages) {
      for (const [step] of nulSteps(name, 0)) {
        const [mine, reference] = [answer(ours.get(step)!), answer(theirs.get(step)!)];
        if (mine !== reference) differ.push([step, JSON.stringify(mine), JSON.stringify(reference)]);
      }
    }
    expect(differ).toEqual([]);
  });

  it.each(BINARY_TEXT)('BINARY[TEXT], BINARY[] and BINARY[HEADER] of %s: byte for byte', (name) => {
    expect(names).toContain(name);
    const answer = (b: Buffer) => b.toString('latin1').replace(/^t\d+ (OK|NO|BAD) .*\r\n$/m, (_line, status: string) => `tag ${status}`);
    for (const [step] of binaryTextSteps(name, 0)) expect(answer(ours.get(step)!), step).toBe(answer(theirs.get(step)!));
  });

  it.each(EDGES.map(([name]) => name).filter((name) => name !== 'SELECT an empty mailbox'))('%s: the same responses', (step) => {
    expect(shape(ours.get(step)!), step).toEqual(shape(theirs.get(step)!));
  });
});

if (!hasDovecot()) describe.skip(`IMAP answers against Dovecot: ${DOVECOT_MISSING}`, () => undefined);
