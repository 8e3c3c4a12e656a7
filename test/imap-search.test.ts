import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { holdsPhrase } from '../src/lib/mail-text.js';
import { createLogger } from '../src/lib/logger.js';
import { createImapServer } from '../src/transports/imap/server.js';
import { TEST_DIALECT } from './helpers/database.js';
import { connectClient, DOVECOT_MISSING, hasDovecot, startDovecot, type DovecotPeer, type ImapRawClient } from './helpers/dovecot.js';
import { session } from './helpers/harness.js';
import { mailWorld, type WorldTenant } from './helpers/world.js';

// IMAP SEARCH: text keys through the full-text index, HEADER and sent dates from the stored header fields, and
// SEARCHRES (`$`). The same messages are loaded into Mailroom (delivered over SMTP) and into a private Dovecot (the
// bytes Mailroom stored, the internal dates it gave them); the two servers' UID SEARCH answers, as message
// positions, must be the same. Text keys use whole words, where Dovecot's substring rule and our word rule agree.

const FIXTURES = new URL('./fixtures/eml/', import.meta.url);
const crlf = (text: string) => Buffer.from(text.replace(/\r?\n/g, '\r\n'), 'utf8');
const fixture = (name: string) => readFileSync(new URL(name, FIXTURES));
const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

/** Distinctive words in headers and bodies; encoded-word subjects; quoted-printable and base64 bodies. */
const CORPUS: Buffer[] = [
  fixture('01-plain-7bit.eml'),
  fixture('02-qp-utf8-soft-breaks.eml'),
  fixture('03-base64-text.eml'),
  fixture('04-alternative.eml'),
  fixture('08-iso-8859-1.eml'),
  fixture('12-encoded-words.eml'),
  crlf(`Date: Sat, 1 Nov 2025 23:30:00 -0800
From: Ops Robot <robot@ops.example>
To: team@example.net
Cc: Manager <boss@example.net>
Subject: Nightly backup report
Message-ID: <s1.nightly@ops.example>
X-Ticket: T-4242
MIME-Version: 1.0
Content-Type: text/plain; charset=utf-8

All volumes copied. Checksum verified for the zebra cluster.
`),
  crlf(`Date: Mon, 10 Nov 2025 08:15:00 +0000
From: Billing <billing@shop.example.com>
To: bob@example.net
Subject: Invoice 2025-117 for your order
Message-ID: <s2.invoice@shop.example.com>
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="b1"

--b1
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: base64

${b64('Your invoice is attached. Payment due within thirty days.\r\nKangaroo logistics thanks you.\r\n')}
--b1
Content-Type: application/pdf; name="invoice-117.pdf"
Content-Disposition: attachment; filename="invoice-117.pdf"
Content-Transfer-Encoding: base64

JVBERi0xLjQK
--b1--
`),
  crlf(`Date: Tue, 11 Nov 2025 09:00:00 +0100
From: =?UTF-8?Q?Ren=C3=A9_Dupont?= <rene@example.fr>
To: bob@example.net
Subject: =?UTF-8?B?${b64('Café crème meeting')}?=
Message-ID: <s3.cafe@example.fr>
MIME-Version: 1.0
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: quoted-printable

Rendez-vous au caf=C3=A9 demain. Ordre du jour: budget.
`),
  crlf(`Date: Wed, 12 Nov 2025 12:00:00 +0000
From: Archive Bot <archiver@example.net>
To: bob@example.net
Subject: Monthly export
Message-ID: <s4.export@example.net>
MIME-Version: 1.0
Content-Type: text/plain; charset=utf-8

${'filler line of the export, nothing to see here\n'.repeat(120)}The walrus is at the end.
`),
  crlf(`Date: Thu, 13 Nov 2025 18:45:00 +0000
From: Carol <carol@example.net>
To: bob@example.net
Bcc: secret-agent@example.org
Subject: Lunch plans
Message-ID: <s5.lunch@example.net>
MIME-Version: 1.0
Content-Type: text/plain; charset=utf-8

Pizza or sushi on Friday?
`),
];

/** Positions (1-based) of the corpus messages, by name, for the answers checked on their own. */
const AT = { quarterly: 1, grusse: 2, base64: 3, spring: 4, latin1: 5, encoded: 6, backup: 7, invoice: 8, cafe: 9, export: 10, lunch: 11 };

/** Each message's internal date: a day apart, at noon UTC, from 1 Oct 2026. */
const internalDate = (i: number) => Date.UTC(2026, 9, 1 + i, 12, 0, 0);

/** `{n+}` literal of a UTF-8 string (LITERAL+, which both servers offer). */
const lit = (text: string) => `{${Buffer.byteLength(text)}+}\r\n${text}`;

/** The numbers of a `* SEARCH` reply. */
function searchNumbers(reply: Buffer): number[] {
  const line = reply.toString('utf8').split('\r\n').find((l) => l.startsWith('* SEARCH'));
  if (line === undefined) throw new Error(`no SEARCH reply in ${reply.toString('utf8')}`);
  return line.slice('* SEARCH'.length).trim().split(' ').filter(Boolean).map(Number);
}

function tagged(reply: Buffer): string {
  const lines = reply.toString('utf8').trimEnd().split('\r\n');
  return lines[lines.length - 1]!.replace(/^\S+ /, '');
}

async function ok(client: ImapRawClient, command: string): Promise<Buffer> {
  const reply = await client.command(command);
  if (!tagged(reply).startsWith('OK')) throw new Error(`${command}: ${reply.toString('utf8')}`);
  return reply;
}

/** The answer of `UID SEARCH query` as the positions of the UIDs found. */
async function positions(client: ImapRawClient, query: string): Promise<number[]> {
  const all = searchNumbers(await ok(client, 'UID SEARCH ALL'));
  return searchNumbers(await ok(client, `UID SEARCH ${query}`)).map((uid) => all.indexOf(uid) + 1);
}

/** The literal of `* n FETCH (BODY[] {size}…)`. */
function fetchedBody(reply: Buffer): Buffer {
  const text = reply.toString('latin1');
  const m = /BODY\[\] \{(\d+)\}\r\n/.exec(text);
  if (!m) throw new Error(`no BODY[] in ${text.slice(0, 200)}`);
  const start = m.index + m[0].length;
  return reply.subarray(start, start + Number(m[1]));
}

describe('holdsPhrase (PostgreSQL BODY confirms its candidates with it)', () => {
  /** The obvious quadratic rule it must agree with. */
  const naive = (hay: string[], words: string[]) =>
    hay.some((_, i) => i + words.length <= hay.length && words.every((w, j) => (j === words.length - 1 ? hay[i + j]!.startsWith(w) : hay[i + j] === w)));

  it('finds the words in a row, the last as a prefix, as the quadratic rule does', () => {
    const word = fc.constantFrom('a', 'ab', 'b', 'abc', 'c');
    fc.assert(fc.property(fc.array(word, { maxLength: 30 }), fc.array(word, { minLength: 1, maxLength: 5 }), (hay, words) => holdsPhrase(hay, words) === naive(hay, words)));
    expect(holdsPhrase(['a', 'a', 'b', 'a', 'a', 'a', 'c'], ['a', 'a', 'a', 'c'])).toBe(true);
    expect(holdsPhrase(['zebra', 'cluster'], ['zeb'])).toBe(true);
    expect(holdsPhrase(['the', 'zebra'], ['ebra'])).toBe(false);
  });
});

const MAILBOX = 'search-user@mailroom.localhost';
const SECOND = 'search-second@mailroom.localhost';
const OTHER = 'search-other@mailroom.localhost';

describe(`IMAP SEARCH (${TEST_DIALECT})`, () => {
  const world = mailWorld({ peer: false, env: { MAILROOM_ALLOW_PLAINTEXT_AUTH: 'loopback' } });
  let acme: WorldTenant;
  let port: number;
  const passwords = new Map<string, string>();

  const appPassword = async (tenant: WorldTenant, mailbox: string): Promise<void> => {
    const token = await world.ownerSession(tenant);
    const res = await world.h.app.inject({ method: 'POST', url: '/app/api/app-passwords', headers: session(token), payload: { name: 'search', mailbox } });
    expect(res.statusCode).toBe(201);
    passwords.set(mailbox, res.json<{ password: string }>().password);
  };
  const deliver = async (to: string, raw: Buffer, at: number): Promise<void> => {
    world.h.clock.set(at);
    await world.h.sendRaw(raw, { from: 'sender@sender.test', to: [to] });
  };
  const connect = async (mailbox: string): Promise<ImapRawClient> => {
    const client = await connectClient(port, mailbox, `"${passwords.get(mailbox)!}"`);
    world.own({ close: () => client.close() });
    return client;
  };
  const simple = (subject: string, body: string) => crlf(`From: Dana <dana@example.net>\nTo: x@example.net\nSubject: ${subject}\nDate: Fri, 20 Nov 2026 10:00:00 +0000\nMessage-ID: <${subject.replace(/\W/g, '')}@example.net>\n\n${body}\n`);

  beforeAll(async () => {
    acme = await world.tenant('Acme', [MAILBOX, SECOND]);
    const other = await world.tenant('Other', [OTHER]);
    for (const [tenant, mailbox] of [[acme, MAILBOX], [acme, SECOND], [other, OTHER]] as const) await appPassword(tenant, mailbox);
    const server = createImapServer({ access: world.h.services.imapAccess, logger: createLogger('silent'), appendLimit: 1024 * 1024, maxClients: 20, maxClientsPerIp: 20, allowPlaintextAuth: 'loopback', tls: null });
    world.own(server);
    port = await server.listen('127.0.0.1', 0);
    for (const [i, raw] of CORPUS.entries()) await deliver(MAILBOX, raw, internalDate(i));
    for (const [i, subject] of ['alpha one', 'beta two', 'alpha three', 'gamma four'].entries()) await deliver(SECOND, simple(subject, i === 3 ? 'A zebra here too.' : 'Nothing.'), internalDate(i));
    await deliver(OTHER, simple('Nightly backup report', 'zebra quarterly kangaroo'), internalDate(0));
  });

  it('answers text keys from the full-text index: whole words and word prefixes, decoded, per field', async () => {
    const imap = await connect(MAILBOX);
    expect(tagged(await ok(imap, 'SELECT INBOX'))).toMatch(/^OK/);
    const q = (query: string) => positions(imap, query);
    expect(await q('ALL')).toHaveLength(CORPUS.length);
    expect(await q('SUBJECT quarterly')).toEqual([AT.quarterly]);
    expect(await q('SUBJECT quart')).toEqual([AT.quarterly]);
    // Word prefixes, not substrings: the middle of a word is not found (documented; Dovecot with FTS does the same).
    expect(await q('SUBJECT arterly')).toEqual([]);
    expect(await q('SUBJECT "backup report"')).toEqual([AT.backup]);
    expect(await q('SUBJECT "report backup"')).toEqual([]);
    // BODY is the body alone (on PostgreSQL confirmed on the body text), TEXT also the header fields.
    expect(await q('BODY backup')).toEqual([]);
    expect(await q('TEXT backup')).toEqual([AT.backup]);
    expect(await q('BODY kangaroo')).toEqual([AT.invoice]);
    expect(await q(`BODY ${lit('demain')}`)).toEqual([AT.cafe]);
    expect(await q(`CHARSET UTF-8 SUBJECT ${lit('Grüße')}`)).toEqual([AT.grusse, AT.encoded]);
    expect(await q(`CHARSET UTF-8 SUBJECT ${lit('crème')}`)).toEqual([AT.cafe]);
    expect(await q('SUBJECT creme')).toEqual([AT.cafe]);
    expect(await q('FROM rene')).toEqual([AT.cafe]);
    expect(await q('FROM example.de')).toEqual([AT.grusse, AT.encoded]);
    expect(await q('CC boss')).toEqual([AT.backup]);
    expect(await q('TEXT invoice-117')).toEqual([AT.invoice]);
    // A string with no letter or digit matches every message, as in the search API.
    expect(await q('SUBJECT "!!!"')).toHaveLength(CORPUS.length);
    expect(await q('OR SUBJECT lunch NOT BODY zebra')).not.toContain(AT.backup);
  });

  it('keeps text searches to the selected folder of the mailbox logged in to', async () => {
    const mine = await connect(MAILBOX);
    await ok(mine, 'SELECT INBOX');
    expect(await positions(mine, 'BODY zebra')).toEqual([AT.backup]);
    const second = await connect(SECOND);
    await ok(second, 'SELECT INBOX');
    expect(await positions(second, 'BODY zebra')).toEqual([4]);
    expect(await positions(second, 'SUBJECT quarterly')).toEqual([]);
    await ok(second, 'SELECT Archive');
    expect(await positions(second, 'BODY zebra')).toEqual([]);
    const other = await connect(OTHER);
    await ok(other, 'SELECT INBOX');
    expect(await positions(other, 'BODY kangaroo')).toEqual([1]);
    expect(await positions(other, 'BODY walrus')).toEqual([]);
  });

  it('refuses other charsets with BADCHARSET and bounds the text keys of one SEARCH', async () => {
    const imap = await connect(MAILBOX);
    await ok(imap, 'SELECT INBOX');
    expect(tagged(await imap.command('SEARCH CHARSET ISO-8859-1 SUBJECT caf'))).toMatch(/^NO \[BADCHARSET \(UTF-8 US-ASCII\)\]/);
    expect(tagged(await imap.command('SEARCH CHARSET US-ASCII SUBJECT lunch'))).toMatch(/^OK/);
    const many = Array.from({ length: 17 }, (_, i) => `OR SUBJECT w${i}`).join(' ');
    expect(tagged(await imap.command(`SEARCH ${many} ALL`))).toMatch(/^NO \[LIMIT\]/);
    expect(tagged(await imap.command(`SEARCH SUBJECT "${'a'.repeat(1001)}"`))).toMatch(/^NO \[LIMIT\]/);
    expect(tagged(await imap.command('NOOP'))).toMatch(/^OK/);
  });

  it('a MODSEQ key adds the highest MODSEQ of what is returned: of MIN and MAX alone, else of every match', async () => {
    const imap = await connect(SECOND);
    await ok(imap, 'SELECT INBOX (CONDSTORE)');
    const modseqs = new Map<number, number>();
    // Stored in the order 1, 3, 2, 4, as imaptest's esearch-condstore does: 2 then has a higher MODSEQ than 3.
    for (const seq of [1, 3, 2, 4]) {
      const answer = (await ok(imap, `STORE ${seq} +FLAGS (\\Seen)`)).toString();
      modseqs.set(seq, Number(/MODSEQ \((\d+)\)/.exec(answer)![1]));
    }
    const line = async (command: string) => /^\* E?SEARCH.*$/m.exec((await ok(imap, command)).toString())![0].replace(/ \(TAG "t\d+"\)/, '');
    const m = (seq: number) => modseqs.get(seq);
    expect(await line('SEARCH 1:3 MODSEQ 1')).toBe(`* SEARCH 1 2 3 (MODSEQ ${m(2)})`);
    expect(await line('SEARCH MODSEQ 99999999')).toBe('* SEARCH');
    expect(await line('SEARCH SUBJECT alpha')).toBe('* SEARCH 1 3');
    expect(await line('SEARCH RETURN (MIN) 1:3 MODSEQ 1')).toBe(`* ESEARCH MIN 1 MODSEQ ${m(1)}`);
    expect(await line('SEARCH RETURN (MAX) 1:3 MODSEQ 1')).toBe(`* ESEARCH MAX 3 MODSEQ ${m(3)}`);
    expect(await line('SEARCH RETURN () 1:3 MODSEQ 1')).toBe(`* ESEARCH ALL 1:3 MODSEQ ${m(2)}`);
    expect(await line('SEARCH RETURN (MIN MAX) 2:3 MODSEQ 1')).toBe(`* ESEARCH MIN 2 MAX 3 MODSEQ ${m(2)}`);
    expect(await line('SEARCH RETURN (COUNT) 1:4 MODSEQ 1')).toBe(`* ESEARCH COUNT 4 MODSEQ ${m(4)}`);
    expect(await line(`SEARCH RETURN (ALL) 2:3 MODSEQ ${m(4)! + 1}`)).toBe('* ESEARCH');
    // Clean up for the tests that follow.
    await ok(imap, 'STORE 1:4 -FLAGS.SILENT (\\Seen)');
    await imap.close();
  });

  it('SEARCHRES: RETURN (SAVE) keeps the result for $ in FETCH, STORE, SEARCH and UID EXPUNGE; expunged messages drop out', async () => {
    const imap = await connect(SECOND);
    expect(imap.greeting.toString()).toContain('SEARCHRES');
    await ok(imap, 'SELECT INBOX');
    const saved = await ok(imap, 'SEARCH RETURN (SAVE) SUBJECT alpha');
    expect(saved.toString()).not.toContain('ESEARCH');
    expect(tagged(saved)).toMatch(/^OK/);
    expect((await ok(imap, 'FETCH $ (FLAGS)')).toString()).toMatch(/^\* 1 FETCH .*\r\n\* 3 FETCH .*\r\nt\d+ OK/m);
    await ok(imap, 'STORE $ +FLAGS.SILENT (\\Flagged)');
    expect(searchNumbers(await ok(imap, 'SEARCH FLAGGED'))).toEqual([1, 3]);
    expect(searchNumbers(await ok(imap, 'SEARCH NOT $'))).toEqual([2, 4]);
    expect(searchNumbers(await ok(imap, 'SEARCH OR $ SUBJECT gamma'))).toEqual([1, 3, 4]);
    // MIN alone saves only the message it names; ALL beside SAVE answers ESEARCH.
    const min = await ok(imap, 'SEARCH RETURN (SAVE MIN) SUBJECT alpha');
    expect(min.toString()).toMatch(/^\* ESEARCH \(TAG "t\d+"\) MIN 1\r\n/m);
    expect(searchNumbers(await ok(imap, 'UID SEARCH UID $'))).toHaveLength(1);
    const all = await ok(imap, 'UID SEARCH RETURN (SAVE ALL) OR SUBJECT beta SUBJECT gamma');
    expect(all.toString()).toMatch(/^\* ESEARCH \(TAG "t\d+"\) UID ALL \d+,\d+\r\n/m);
    // An expunged message leaves the saved result.
    await ok(imap, 'STORE 2 +FLAGS.SILENT (\\Deleted)');
    await ok(imap, 'EXPUNGE');
    expect(searchNumbers(await ok(imap, 'SEARCH $'))).toEqual([3]);
    await ok(imap, 'STORE $ +FLAGS.SILENT (\\Deleted)');
    await ok(imap, 'UID EXPUNGE $');
    expect(searchNumbers(await ok(imap, 'SEARCH ALL'))).toEqual([1, 2]);
    expect(searchNumbers(await ok(imap, 'SEARCH $'))).toEqual([]);
  });

  it('SEARCHRES: the saved result ends with the selection and with a failed SAVE', async () => {
    const imap = await connect(SECOND);
    await ok(imap, 'SELECT INBOX');
    await ok(imap, 'SEARCH RETURN (SAVE) ALL');
    expect(searchNumbers(await ok(imap, 'SEARCH $'))).toEqual([1, 2]);
    await ok(imap, 'SELECT INBOX');
    expect(searchNumbers(await ok(imap, 'SEARCH $'))).toEqual([]);
    await ok(imap, 'SEARCH RETURN (SAVE) ALL');
    await ok(imap, 'UNSELECT');
    await ok(imap, 'EXAMINE INBOX');
    expect((await ok(imap, 'FETCH $ (UID)')).toString()).not.toContain('FETCH (');
    await ok(imap, 'SEARCH RETURN (SAVE) ALL');
    expect(tagged(await imap.command('SEARCH RETURN (SAVE) CHARSET KOI8-R ALL'))).toMatch(/^NO \[BADCHARSET/);
    expect(searchNumbers(await ok(imap, 'SEARCH $'))).toEqual([]);
    await ok(imap, 'SEARCH RETURN (SAVE) ALL');
    expect(tagged(await imap.command('SEARCH RETURN (SAVE) FROBNICATE'))).toMatch(/^BAD/);
    expect(searchNumbers(await ok(imap, 'SEARCH $'))).toEqual([]);
  });

  describe.skipIf(!hasDovecot())('against Dovecot', () => {
    let dovecot: DovecotPeer;
    let ours: ImapRawClient;
    let theirs: ImapRawClient;

    beforeAll(async () => {
      ours = await connect(MAILBOX);
      await ok(ours, 'SELECT INBOX');
      const stored = [];
      for (let i = 1; i <= CORPUS.length; i++) {
        const reply = await ok(ours, `FETCH ${i} (INTERNALDATE BODY.PEEK[])`);
        const date = /INTERNALDATE "([^"]+)"/.exec(reply.toString('latin1'))![1]!;
        stored.push({ raw: fetchedBody(reply), internalDate: new Date(date.replace(/^(\d+)-(\w+)-(\d+) /, '$2 $1 $3 ')) });
      }
      dovecot = await startDovecot();
      await dovecot.addMessages('INBOX', stored);
      theirs = await dovecot.connect();
      await ok(theirs, 'SELECT INBOX');
      // The same flags by message number on both.
      for (const store of ['STORE 1,3,7 +FLAGS (\\Seen)', 'STORE 2,7 +FLAGS (\\Flagged)', 'STORE 2,4 +FLAGS (\\Answered)', 'STORE 5 +FLAGS (\\Deleted)', 'STORE 3,6,9 +FLAGS (project)']) {
        await ok(ours, store);
        await ok(theirs, store);
      }
    }, 60_000);

    afterAll(async () => {
      await theirs?.close();
      await dovecot?.stop();
    });

    const QUERIES = [
      'ALL', 'SEEN', 'UNSEEN', 'FLAGGED', 'UNFLAGGED', 'ANSWERED', 'UNANSWERED', 'DELETED', 'UNDELETED', 'KEYWORD project', 'UNKEYWORD project',
      'SINCE 5-Oct-2026', 'BEFORE 5-Oct-2026', 'ON 7-Oct-2026', 'OR ON 1-Oct-2026 ON 11-Oct-2026', 'SINCE 3-Oct-2026 BEFORE 6-Oct-2026',
      'SENTON 1-Nov-2025', 'SENTON 2-Nov-2025', 'SENTSINCE 10-Nov-2025', 'SENTBEFORE 16-Apr-2025', 'SENTON 16-Apr-2025', 'SENTSINCE 1-Jan-2026',
      'LARGER 1500', 'SMALLER 1500', 'LARGER 4000', 'NOT LARGER 800',
      'HEADER X-Ticket T-4242', 'HEADER Message-ID qp-soft', 'HEADER List-Unsubscribe ""', 'HEADER Subject lunch', 'HEADER From example.de', 'HEADER Reply-To team',
      'BCC secret-agent',
      '2:4', '1,3,9:*', '*', 'NOT 2:3', 'OR 1 BODY zebra',
      'OR SEEN FLAGGED', 'NOT OR SEEN FLAGGED', 'OR (SEEN LARGER 2000) NOT (OR FLAGGED SUBJECT quarterly)', '(SINCE 5-Oct-2026 UNSEEN) OR BODY zebra KEYWORD project',
      'NOT (NOT (OR ANSWERED (DELETED SEEN)))',
      'SUBJECT quarterly', 'SUBJECT "backup report"', `CHARSET UTF-8 SUBJECT ${lit('Grüße')}`, `CHARSET UTF-8 SUBJECT ${lit('Réunion')}`, `CHARSET UTF-8 SUBJECT ${lit('Café')}`,
      'SUBJECT invoice', 'FROM alice', 'FROM example.de', `CHARSET UTF-8 FROM ${lit('Zoë')}`, 'TO bob', 'TO team', 'CC dave', 'CC boss',
      'BODY revenue', 'BODY zebra', 'BODY kangaroo', 'BODY absichtlich', 'BODY demain', 'BODY walrus', 'BODY backup', 'BODY quarterly',
      'TEXT backup', 'TEXT spring', 'TEXT "payment due"', 'NOT BODY zebra', 'OR SUBJECT invoice FROM alice', 'UNSEEN BODY quarterly', 'OR TO team CC dave',
    ];

    it('gives the same UID SEARCH answers, as message positions, as Dovecot for the same messages', async () => {
      const differences: string[] = [];
      let nonEmpty = 0;
      for (const query of QUERIES) {
        const [mine, reference] = [await positions(ours, query), await positions(theirs, query)];
        if (reference.length > 0 && reference.length < CORPUS.length) nonEmpty++;
        if (JSON.stringify(mine) !== JSON.stringify(reference)) differences.push(`${query.replace(/\r\n/g, ' ')}: ours ${JSON.stringify(mine)}, Dovecot ${JSON.stringify(reference)}`);
      }
      expect(differences).toEqual([]);
      // The queries discriminate: most select some of the messages, not none or all.
      expect(nonEmpty).toBeGreaterThan(QUERIES.length * 0.8);
    });
  });
});

if (!hasDovecot()) describe.skip(`IMAP SEARCH against Dovecot: ${DOVECOT_MISSING}`, () => undefined);
