import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CommandReader,
  ResponseWriter,
  countRanges,
  decodeModifiedUtf7,
  encodeModifiedUtf7,
  fetchItemName,
  formatDateTime,
  formatFetchItem,
  formatSearchKey,
  formatSequenceSet,
  inRanges,
  parseAppendCommand,
  parseDate,
  parseDateTime,
  parseFetchCommand,
  parseMailboxName,
  parseSearchCommand,
  parseSelectCommand,
  parseSequenceSet,
  parseStoreCommand,
  resolveSequenceSet,
  type Command,
  type FetchItem,
  type ReaderEvent,
  type ReaderOptions,
  type SearchKey,
  type SequenceSet,
  type Token,
  type Value,
} from '../src/transports/imap/protocol/index.js';

/**
 * The IMAP protocol layer on its own: the reader against the RFCs' examples and every bound, feeding split at
 * every byte, and fast-check properties (arbitrary bytes never throw and stay linear; writer output reads back as
 * the values written; typed arguments round-trip). IMAP_FUZZ_RUNS multiplies the runs for a long fuzzing session,
 * IMAP_FUZZ_SEED changes the seed (fixed here so a failure is reproducible):
 *
 *   IMAP_FUZZ_RUNS=100 IMAP_FUZZ_SEED=7 nice -n 19 npx vitest run test/imap-protocol.test.ts --testTimeout=0
 */
const SCALE = Number(process.env.IMAP_FUZZ_RUNS ?? 1);
const SEED = Number(process.env.IMAP_FUZZ_SEED ?? 20261129);
const runs = (n: number) => ({ numRuns: Math.max(1, Math.round(n * SCALE)), seed: SEED, endOnFailure: true });

/** Feeds the chunks one at a time and drains the events after each. */
function feed(chunks: Array<Buffer | string>, options?: ReaderOptions, reader = new CommandReader(options)): ReaderEvent[] {
  const events: ReaderEvent[] = [];
  for (const c of chunks) {
    reader.push(typeof c === 'string' ? Buffer.from(c, 'latin1') : c);
    for (let ev = reader.next(); ev; ev = reader.next()) events.push(ev);
  }
  return events;
}

const commands = (events: ReaderEvent[]): Command[] => events.flatMap((e) => (e.kind === 'command' ? [e.command] : []));
const one = (text: string, options?: ReaderOptions): Command => {
  const cmds = commands(feed([text], options));
  expect(cmds).toHaveLength(1);
  return cmds[0]!;
};
const atom = (value: string): Token => ({ type: 'atom', value });
const str = (value: string): Token => ({ type: 'string', value: Buffer.from(value) });
const lit = (value: string, binary = false): Token => ({ type: 'literal', value: Buffer.from(value), binary });

describe('command reader: RFC examples', () => {
  it('reads atoms, numbers, quoted strings with escapes, NIL and nested lists', () => {
    expect(one('a001 login SMITH "SE\\"SA\\\\ME"\r\n')).toEqual({ tag: 'a001', name: 'LOGIN', args: [atom('SMITH'), str('SE"SA\\ME')] });
    const c = one('A654 FETCH 2:4 (FLAGS BODY[HEADER.FIELDS (DATE FROM)]) nil 007 42 ((a) ())\r\n');
    expect(c.args).toEqual([
      atom('2:4'),
      { type: 'list', items: [atom('FLAGS'), atom('BODY[HEADER.FIELDS'), { type: 'list', items: [atom('DATE'), atom('FROM')] }, atom(']')] },
      { type: 'nil' },
      atom('007'),
      { type: 'number', value: 42 },
      { type: 'list', items: [{ type: 'list', items: [atom('a')] }, { type: 'list', items: [] }] },
    ]);
  });

  it('asks for a continuation before a synchronizing literal and keeps its bytes exactly', () => {
    const message = 'Date: Mon, 7 Feb 1994 21:52:25 -0800 (PST)\r\nFrom: Fred Foobar <foobar@Blurdybloop.example>\r\n\r\nHello Joe, do you think we can meet at 3:30 tomorrow?\r\n\x00\xff';
    const reader = new CommandReader();
    const first = feed([`A003 APPEND saved-messages (\\Seen) {${message.length}}\r\n`], {}, reader);
    expect(first).toEqual([{ kind: 'continue', tag: 'A003', name: 'APPEND', size: message.length }]);
    const rest = feed([message, '\r\n'], {}, reader);
    expect(commands(rest)[0]!.args).toEqual([atom('saved-messages'), { type: 'list', items: [atom('\\Seen')] }, { type: 'literal', value: Buffer.from(message, 'latin1'), binary: false }]);
  });

  it('reads LITERAL+ without a continuation, literal8, and several literals in one command', () => {
    const events = feed(['A1 LOGIN {5+}\r\nfred\x00 ~{3}\r\nb\ncd {0}\r\n\r\n']);
    // Two continuations: for ~{3} and {0}, not for {5+}.
    expect(events.map((e) => e.kind)).toEqual(['continue', 'continue', 'command']);
    expect(commands(events)[0]!.args).toEqual([lit('fred\x00'), lit('b\nc', true), atom('d'), lit('')]);
  });

  it('reads the RFC 7888 LITERAL+ example without a continuation', () => {
    const events = feed(['A001 LOGIN {11+}\r\nFRED FOOBAR {7+}\r\nfat man\r\n']);
    expect(events).toEqual([{ kind: 'command', command: { tag: 'A001', name: 'LOGIN', args: [lit('FRED FOOBAR'), lit('fat man')] } }]);
  });

  it('joins UID with its command, tolerates bare LF and ignores empty lines', () => {
    expect(one('\r\n\nA1 uid fetch 1:* (FLAGS)\n')).toEqual({ tag: 'A1', name: 'UID FETCH', args: [atom('1:*'), { type: 'list', items: [atom('FLAGS')] }] });
  });

  it('gives raw lines to readLine (AUTHENTICATE responses, DONE) and commands to next', () => {
    const reader = new CommandReader();
    reader.push(Buffer.from('A1 AUTHENTICATE PLAIN\r\nAGZyZWQAc2VjcmV0\r\n\r\nA2 NOOP\r\n'));
    expect(reader.next()).toMatchObject({ kind: 'command', command: { name: 'AUTHENTICATE' } });
    expect(reader.readLine()).toEqual({ kind: 'line', line: Buffer.from('AGZyZWQAc2VjcmV0') });
    expect(reader.readLine()).toEqual({ kind: 'line', line: Buffer.alloc(0) });
    expect(reader.next()).toMatchObject({ kind: 'command', command: { tag: 'A2', name: 'NOOP' } });
    expect(reader.next()).toBeNull();
  });

  it('refuses malformed commands with the tag when it has one, and goes on at the next line', () => {
    const events = feed(['A1 FETCH 1 (FLAGS\r\n', ')\r\n', '* NOOP\r\n', 'A2 X "abc\r\n', 'A3 X a{3}\r\n', 'A4 X ~{x}\r\n', 'A5 NOOP\r\n']);
    expect(events).toEqual([
      { kind: 'bad', tag: 'A1', text: "Missing ')'." },
      { kind: 'bad', tag: null, text: 'Error in IMAP command received by server.' },
      { kind: 'bad', tag: null, text: 'Error in IMAP command received by server.' },
      { kind: 'bad', tag: 'A2', text: 'Missing \'"\'.' },
      { kind: 'bad', tag: 'A3', text: 'Invalid characters in atom.' },
      { kind: 'bad', tag: 'A4', text: 'Invalid literal.' },
      { kind: 'command', command: { tag: 'A5', name: 'NOOP', args: [] } },
    ]);
  });

  it('skips the non-synchronizing literal of a refused command instead of reading it as commands', () => {
    const events = feed(['A1 X ) {12+}\r\nA2 LOGOUT\r\n more {4+}\r\nA3 X\r\nA4 NOOP\r\n']);
    expect(events).toEqual([
      { kind: 'bad', tag: 'A1', text: "Unexpected ')'." },
      { kind: 'command', command: { tag: 'A4', name: 'NOOP', args: [] } },
    ]);
  });
});

describe('command reader: bounds', () => {
  it('refuses a line over the length bound, with its tag, and reads the next command', () => {
    const events = feed([`A1 X ${'a'.repeat(200)}`, `${'b'.repeat(100)}\r\nA2 NOOP\r\n`], { maxLineLength: 128 });
    expect(events).toEqual([
      { kind: 'bad', tag: 'A1', text: 'Too long argument.' },
      { kind: 'command', command: { tag: 'A2', name: 'NOOP', args: [] } },
    ]);
    // The bound counts the whole command outside its literals.
    const split = feed(['A1 X {3+}\r\nabc', ` ${'c'.repeat(120)}\r\nA2 NOOP\r\n`], { maxLineLength: 128 });
    expect(split.map((e) => e.kind)).toEqual(['bad', 'command']);
    expect(commands(feed([`A1 X ${'a'.repeat(121)}\r\n`], { maxLineLength: 128 }))).toHaveLength(1);
  });

  it('refuses a synchronizing literal over the bound (the client sends nothing) and goes on', () => {
    const limit = (name: string) => (name === 'APPEND' ? 1000 : 10);
    const events = feed(['A1 LOGIN {11}\r\n', 'A2 APPEND INBOX {1001}\r\n', 'A3 APPEND INBOX {11}\r\n', 'hello world\r\n'], { maxLiteralSize: limit });
    expect(events).toEqual([
      { kind: 'bad', tag: 'A1', text: 'Literal too large.', code: 'TOOBIG' },
      { kind: 'bad', tag: 'A2', text: 'Literal too large.', code: 'TOOBIG' },
      { kind: 'continue', tag: 'A3', name: 'APPEND', size: 11 },
      { kind: 'command', command: { tag: 'A3', name: 'APPEND', args: [atom('INBOX'), lit('hello world')] } },
    ]);
  });

  it('ends the stream at a non-synchronizing literal over the bound', () => {
    const reader = new CommandReader({ maxLiteralSize: 10 });
    const events = feed(['A1 LOGIN {11+}\r\nhello world\r\nA2 NOOP\r\n'], {}, reader);
    expect(events).toEqual([{ kind: 'bad', tag: 'A1', text: 'Literal too large.', code: 'TOOBIG', fatal: true }]);
    expect(reader.closed).toBe(true);
    expect(feed(['A3 NOOP\r\n'], {}, reader)).toEqual([]);
    // Also when the literal ends a refused line, and when its size is padded to hide it.
    expect(feed(['A1 X ) {11+}\r\nhello world\r\n'], { maxLiteralSize: 10 })[0]).toMatchObject({ fatal: true });
    expect(feed([`A1 X ) {${'0'.repeat(60)}5+}\r\nhello\r\n`])[0]).toMatchObject({ fatal: true });
    expect(feed(['A1 X {99999999999999999999999}\r\n'])[0]).toMatchObject({ code: 'TOOBIG' });
  });

  it('refuses LITERAL+ when it is off, skipping the bytes the client sends anyway', () => {
    expect(feed(['A1 LOGIN {5+}\r\nA2 X\r\nA3 NOOP\r\n'], { literalPlus: false })).toEqual([
      { kind: 'bad', tag: 'A1', text: 'Invalid literal.' },
      { kind: 'command', command: { tag: 'A3', name: 'NOOP', args: [] } },
    ]);
  });

  it('bounds raw lines too, and joins a literal dribbled a byte at a time', () => {
    const reader = new CommandReader({ maxLineLength: 16 });
    reader.push(Buffer.from(`${'x'.repeat(40)}\r\nshort\r\n`));
    expect(reader.readLine()).toEqual({ kind: 'bad', tag: null, text: 'Too long argument.' });
    expect(reader.readLine()).toEqual({ kind: 'line', line: Buffer.from('short') });
    const data = Buffer.from(Array.from({ length: 40_000 }, (_, i) => i % 251));
    const events = feed(['A1 APPEND INBOX {40000+}\r\n', ...Array.from({ length: data.length }, (_, i) => data.subarray(i, i + 1)), '\r\n']);
    expect(commands(events)[0]!.args[1]).toEqual({ type: 'literal', value: data, binary: false });
  });

  it('refuses lists nested too deep and too many tokens', () => {
    expect(feed([`A1 X ${'('.repeat(33)}${')'.repeat(33)}\r\nA2 NOOP\r\n`])).toEqual([
      { kind: 'bad', tag: 'A1', text: 'Too deeply nested lists.' },
      { kind: 'command', command: { tag: 'A2', name: 'NOOP', args: [] } },
    ]);
    expect(commands(feed([`A1 X ${'('.repeat(32)}${')'.repeat(32)}\r\n`]))).toHaveLength(1);
    expect(feed([`A1 X ${'a '.repeat(101)}\r\n`], { maxTokens: 100 })).toEqual([{ kind: 'bad', tag: 'A1', text: 'Too many arguments.' }]);
  });
});

const SAMPLES = [
  'A003 APPEND saved-messages (\\Seen) {12}\r\nHello\r\nWorld\r\n',
  'A1 LOGIN {5+}\r\nfred\x00 ~{3}\r\nb\ncd\r\nA2 NOOP\n',
  'A1 X ) {12+}\r\nA2 LOGOUT\r\n more {4+}\r\nA3 X\r\nA4 NOOP\r\n',
  'a UID STORE 1:* (UNCHANGEDSINCE 5) +FLAGS.SILENT (\\Seen $Junk)\r\n\r\nb SEARCH OR (FROM "x\\"y") NOT 1:5 {3}\r\nabc\r\n',
  `A1 X ${'a'.repeat(90)}\r\nA2 X {30}\r\nA3 NOOP ((((((((\r\n`,
];

describe('command reader: chunking', () => {
  it('gives the same events however the bytes are split', () => {
    const options = { maxLineLength: 64, maxLiteralSize: 16, maxDepth: 4 };
    for (const sample of SAMPLES) {
      const whole = feed([sample], options);
      expect(feed(sample.split(''), options)).toEqual(whole);
      for (let i = 1; i < sample.length; i++) expect(feed([sample.slice(0, i), sample.slice(i)], options)).toEqual(whole);
    }
  });
});

// ---- fuzzing ----------------------------------------------------------------------------------------------------

const imapish = fc.oneof(
  fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b)),
  fc
    .array(fc.constantFrom('A1 ', 'FETCH ', '(', ')', '{3}\r\n', '{2+}\r\n', '~{1}\r\n', '"', '\\', '\r\n', '\n', '\r', ' ', 'NIL', '1:*', '[', ']', 'abc', '{', '}', '+', '\x00', '\xff', '{999999999999+}', 'UID '), { maxLength: 30 })
    .map((parts) => Buffer.from(parts.join(''), 'latin1')),
);

describe('fuzzing: arbitrary bytes', () => {
  it('never throws, consumes everything, and answers every line', () => {
    fc.assert(
      fc.property(fc.array(imapish, { maxLength: 20 }), fc.boolean(), (chunks, byteByByte) => {
        const reader = new CommandReader({ maxLineLength: 256, maxLiteralSize: (n) => (n === 'APPEND' ? 64 : 8), maxDepth: 5, maxTokens: 50 });
        const input = Buffer.concat(chunks);
        const parts = byteByByte ? [...input].map((b) => Buffer.from([b])) : chunks;
        const events = feed(parts, {}, reader);
        expect(reader.buffered).toBe(0);
        expect(events.length).toBeLessThanOrEqual(input.length + 1);
        // The same events whole as in pieces.
        if (!reader.closed) expect(feed([input], { maxLineLength: 256, maxLiteralSize: (n) => (n === 'APPEND' ? 64 : 8), maxDepth: 5, maxTokens: 50 })).toEqual(events);
      }),
      runs(2000),
    );
  });

  it('takes linear time on hostile input, even fed one byte at a time', () => {
    const patterns = ['(', '"', 'a', '{', '\\', ' ', 'a{1+}\r\n', '{1}\r\n', ')', '\r', '((a) ', 'A1 X {1+}\r\nx\r\n'];
    for (const p of patterns) {
      const time = (n: number, bytewise: boolean) => {
        const input = Buffer.from(`A1 X ${p.repeat(Math.ceil(n / p.length))}\r\n`, 'latin1');
        const start = performance.now();
        const reader = new CommandReader({ maxTokens: 1_000_000, maxDepth: 1_000_000, maxLineLength: 1 << 22 });
        if (bytewise) for (let i = 0; i < input.length; i++) reader.push(input.subarray(i, i + 1));
        else reader.push(input);
        while (reader.next());
        return performance.now() - start;
      };
      // An absolute bound: linear work here takes tens to hundreds of milliseconds even on a loaded machine,
      // where one quadratic step would take seconds (60,000² is 3.6e9); ratios of small timings proved too noisy.
      const took = time(60_000, false) + time(30_000, true);
      expect(took, `pattern ${JSON.stringify(p)}`).toBeLessThan(2000);
    }
  });
});

/** A token as the round trip compares it: quoted strings and literals are both strings (the writer chooses). */
type Norm = { t: string; v?: unknown };
function normToken(t: Token): Norm {
  switch (t.type) {
    case 'atom':
      return { t: 'atom', v: t.value };
    case 'number':
      return { t: 'number', v: t.value };
    case 'nil':
      return { t: 'nil' };
    case 'string':
      return { t: 'str', v: t.value.toString('hex') };
    case 'literal':
      return { t: t.binary ? 'bin' : 'str', v: t.value.toString('hex') };
    case 'list':
      return { t: 'list', v: t.items.map(normToken) };
  }
}
/** What the reader makes of an atom: NIL and canonical safe numbers are their own kinds. */
function normAtom(a: string): Norm {
  if (a.toUpperCase() === 'NIL') return { t: 'nil' };
  if (/^(0|[1-9]\d{0,15})$/.test(a) && Number.isSafeInteger(Number(a))) return { t: 'number', v: Number(a) };
  return { t: 'atom', v: a };
}
function normValue(v: Value): Norm {
  if (v === null) return { t: 'nil' };
  if (typeof v === 'number') return { t: 'number', v };
  if (typeof v === 'string') return { t: 'str', v: Buffer.from(v, 'utf8').toString('hex') };
  if (Buffer.isBuffer(v)) return { t: 'str', v: v.toString('hex') };
  if (Array.isArray(v)) return { t: 'list', v: (v as Value[]).map(normValue) };
  if (typeof v === 'object' && 'atom' in v) return normAtom(v.atom);
  if (typeof v === 'object' && 'literal' in v) return { t: v.binary ? 'bin' : 'str', v: v.literal.toString('hex') };
  throw new Error('not generated');
}

/** Values written as an untagged response, turned into a command (`*` becomes a tag), read back. */
function writeThenRead(values: Value[], utf8 = false): ReaderEvent[] {
  const out = new ResponseWriter({ utf8 }).untagged({ atom: 'X' }, ...values).take();
  out[0] = 0x41; // '*' → 'A'
  return feed([out], { maxLiteralSize: 1 << 20, maxLineLength: 1 << 20 });
}

const atomArb = fc.string({ unit: fc.constantFrom(...'abcNILnil0123456789\\$[]<>.%*:,-+~!#&\'/_'.split('')), minLength: 1, maxLength: 10 });
const valueArb: fc.Arbitrary<Value> = fc.letrec<{ value: Value }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    atomArb.map((a) => ({ atom: a })),
    fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
    fc.string({ unit: 'grapheme', maxLength: 20 }),
    fc.string({ unit: 'binary-ascii', maxLength: 20 }),
    fc.string({ unit: fc.constantFrom('a', '"', '\\', '\r', '\n', ' ', '{1}', '}'), maxLength: 12 }),
    fc.uint8Array({ maxLength: 30 }).map((b) => Buffer.from(b)),
    fc.uint8Array({ maxLength: 10 }).map((b) => ({ literal: Buffer.from(b), binary: true })),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
  ),
})).value;

describe('fuzzing: the writer and the reader agree', () => {
  it('reads back every value written, whatever the text (no value can break the framing)', () => {
    fc.assert(
      fc.property(fc.array(valueArb, { maxLength: 6 }), fc.boolean(), (values, utf8) => {
        const events = writeThenRead(values, utf8);
        const cmds = commands(events);
        expect(events.filter((e) => e.kind !== 'continue')).toHaveLength(1);
        expect(cmds[0]!.args.map(normToken)).toEqual(values.map(normValue));
      }),
      runs(1500),
    );
  });

  it('keeps control characters out of free text and refuses atoms and item names that could break a line', () => {
    const w = new ResponseWriter();
    w.tagged('A1', 'NO', 'bad\r\n* 1 EXISTS {5}', { name: 'ALERT' }).status('OK', 'caf\u00e9 {12}');
    expect(w.take().toString('latin1')).toBe('A1 NO [ALERT] bad  * 1 EXISTS {5}.\r\n* OK caf? {12}.\r\n');
    expect(() => w.untagged({ atom: 'a\r\nb' })).toThrow();
    expect(() => w.untagged({ atom: 'a b' })).toThrow();
    expect(() => w.untagged({ raw: 'BODY[]\r\n' })).toThrow();
    expect(() => w.untagged({ raw: 'x {5}' })).toThrow();
    expect(() => w.tagged('A 1', 'OK', 'x')).toThrow();
    expect(() => w.untagged(-1)).toThrow();
  });

  it('writes RFC 9051 responses byte for byte', () => {
    const w = new ResponseWriter();
    w.status('OK', 'Predicted next UID', { name: 'UIDNEXT', args: [4392] })
      .status('OK', 'Limited', { name: 'PERMANENTFLAGS', args: [[{ atom: '\\Deleted' }, { atom: '\\Seen' }, { atom: '\\*' }]] })
      .untagged(12, { atom: 'FETCH' }, [{ atom: 'FLAGS' }, [{ atom: '\\Seen' }], { atom: 'UID' }, 4827313, { raw: 'BODY[HEADER.FIELDS (FROM)]<0>' }, Buffer.from('From: a\r\n'), { atom: 'ENVELOPE' }, [null, 'Mon, 7 Feb 1994', 'a"b\\']])
      .untagged({ atom: 'SEARCH' }, 2, 84n, 882)
      .continuation('Ready for additional command text')
      .tagged('A142', 'OK', 'SELECT completed', { name: 'READ-WRITE' });
    expect(w.take().toString('latin1')).toBe(
      '* OK [UIDNEXT 4392] Predicted next UID\r\n' +
        '* OK [PERMANENTFLAGS (\\Deleted \\Seen \\*)] Limited\r\n' +
        '* 12 FETCH (FLAGS (\\Seen) UID 4827313 BODY[HEADER.FIELDS (FROM)]<0> {9}\r\nFrom: a\r\n ENVELOPE (NIL "Mon, 7 Feb 1994" "a\\"b\\\\"))\r\n' +
        '* SEARCH 2 84 882\r\n' +
        '+ Ready for additional command text\r\n' +
        'A142 OK [READ-WRITE] SELECT completed\r\n',
    );
    expect(new ResponseWriter().untagged('x'.repeat(2000), 'caf\u00e9').take().toString('utf8')).toBe(`* {2000}\r\n${'x'.repeat(2000)} {5}\r\ncaf\u00e9\r\n`);
    expect(new ResponseWriter({ utf8: true }).untagged('caf\u00e9').take().toString('utf8')).toBe('* "caf\u00e9"\r\n');
  });
});

// ---- typed arguments ---------------------------------------------------------------------------------------------

const args = (text: string): Token[] => one(`A1 X ${text}\r\n`).args;

describe('sequence sets', () => {
  it('parses and resolves sets as ranges, never as numbers', () => {
    const set = parseSequenceSet(atom('3,5:7,*:4,9:*')) as SequenceSet;
    expect(set.ranges).toEqual([{ from: 3, to: 3 }, { from: 5, to: 7 }, { from: '*', to: 4 }, { from: 9, to: '*' }]);
    expect(resolveSequenceSet(set, 20, { uid: false })).toEqual([[3, 20]]);
    expect(resolveSequenceSet(parseSequenceSet(atom('2,4:5,9')) as SequenceSet, 20, { uid: false })).toEqual([[2, 2], [4, 5], [9, 9]]);
    const huge = resolveSequenceSet(parseSequenceSet(atom('1:4294967295,2:*')) as SequenceSet, 4_294_967_295, { uid: true });
    expect(huge).toEqual([[1, 4294967295]]);
    expect(countRanges(huge as Array<[number, number]>)).toBe(4294967295);
    expect(resolveSequenceSet(parseSequenceSet(atom('5:*')) as SequenceSet, 3, { uid: true })).toEqual([[3, 3]]);
    expect(resolveSequenceSet(parseSequenceSet(atom('5')) as SequenceSet, 3, { uid: false })).toEqual({ bad: 'Invalid messageset.' });
    // An empty mailbox has no message for any set to name, `1:*` included (Dovecot's BAD); by UID it is nothing.
    expect(resolveSequenceSet(parseSequenceSet(atom('1:*')) as SequenceSet, 0, { uid: false })).toEqual({ bad: 'Invalid messageset.' });
    expect(resolveSequenceSet(parseSequenceSet(atom('1:*')) as SequenceSet, 0, { uid: true })).toEqual([]);
    // Past 32 bits is not a number IMAP has (RFC 9051's nz-number).
    for (const past of ['4294967296', '1:4294967296', '99999999999']) expect(parseSequenceSet(atom(past))).toHaveProperty('bad');
    expect(parseSequenceSet(atom('$'))).toEqual({ saved: true, ranges: [] });
    for (const badSet of ['0', '1:0', '', '1,', 'a', '4294967296', '01', '1::2']) expect(parseSequenceSet(atom(badSet))).toHaveProperty('bad');
    expect(parseSequenceSet(str('1'))).toHaveProperty('bad');
  });

  const num = fc.oneof(fc.integer({ min: 1, max: 0xffffffff }), fc.constant('*' as const));
  const setArb = fc.array(fc.record({ from: num, to: num }), { minLength: 1, maxLength: 8 }).map((ranges): SequenceSet => ({ saved: false, ranges }));

  it('round-trips random sets through the writer and the reader', () => {
    fc.assert(
      fc.property(setArb, (set) => {
        const [tok] = commands(writeThenRead([{ atom: formatSequenceSet(set) }]))[0]!.args;
        expect(parseSequenceSet(tok)).toEqual(set);
      }),
      runs(1000),
    );
  });

  it('resolves exactly as membership says', () => {
    const small = fc.oneof(fc.integer({ min: 1, max: 40 }), fc.constant('*' as const));
    fc.assert(
      fc.property(fc.array(fc.record({ from: small, to: small }), { minLength: 1, maxLength: 6 }), fc.integer({ min: 0, max: 40 }), fc.boolean(), (ranges, max, uid) => {
        const r = resolveSequenceSet({ saved: false, ranges }, max, { uid });
        const ends = ranges.map(({ from, to }) => [from === '*' ? max : from, to === '*' ? max : to] as const);
        if (!uid && (max === 0 || ends.some(([a, b]) => Math.max(a, b) > max))) {
          expect(r).toHaveProperty('bad');
          return;
        }
        for (let n = 1; n <= 45; n++) {
          const want = n <= max && ends.some(([a, b]) => Math.min(a, b) <= n && n <= Math.max(a, b));
          expect(inRanges(r as Array<[number, number]>, n)).toBe(want);
        }
      }),
      runs(500),
    );
  });
});

describe('FETCH', () => {
  it('parses the RFC examples, macros and modifiers', () => {
    expect(parseFetchCommand(args('2:4 (FLAGS BODY[HEADER.FIELDS (DATE FROM)])'), { uid: false })).toEqual({
      set: { saved: false, ranges: [{ from: 2, to: 4 }] },
      items: [{ kind: 'FLAGS' }, { kind: 'BODY[]', peek: false, section: { part: [], text: 'HEADER.FIELDS', fields: ['DATE', 'FROM'] } }],
      vanished: false,
    });
    expect(parseFetchCommand(args('1 body.peek[1.2.MIME]<0.100>'), { uid: false })).toMatchObject({
      items: [{ kind: 'BODY[]', peek: true, section: { part: [1, 2], text: 'MIME' }, partial: { offset: 0, length: 100 } }],
    });
    expect(parseFetchCommand(args('1 FULL'), { uid: false })).toMatchObject({ items: ['FLAGS', 'INTERNALDATE', 'RFC822.SIZE', 'ENVELOPE', 'BODY'].map((kind) => ({ kind })) });
    expect(parseFetchCommand(args('1 BODY[HEADER.FIELDS.NOT (Received)]<5.10> (CHANGEDSINCE 12345 VANISHED)'), { uid: true })).toMatchObject({
      items: [{ kind: 'BODY[]', section: { text: 'HEADER.FIELDS.NOT', fields: ['Received'] }, partial: { offset: 5, length: 10 } }],
      changedSince: 12345n,
      vanished: true,
    });
    expect(parseFetchCommand(args('1:* (BINARY.PEEK[1]<0.10> BINARY.SIZE[2.1] BINARY[] MODSEQ UID)'), { uid: false })).toMatchObject({
      items: [{ kind: 'BINARY[]', peek: true, section: { part: [1] } }, { kind: 'BINARY.SIZE', section: { part: [2, 1] } }, { kind: 'BINARY[]', peek: false, section: { part: [] } }, { kind: 'MODSEQ' }, { kind: 'UID' }],
    });
    // As Dovecot: BINARY takes BODY's sections, and BINARY.SIZE reads nothing after its bracket.
    expect(parseFetchCommand(args('1 (BINARY[TEXT] BINARY.SIZE[2.TEXT]<0.1> BINARY.PEEK[1.MIME] BINARY.PEEK[HEADER.FIELDS (Subject)]<0.5>)'), { uid: false })).toMatchObject({
      items: [
        { kind: 'BINARY[]', peek: false, section: { part: [], text: 'TEXT' } },
        { kind: 'BINARY.SIZE', section: { part: [2], text: 'TEXT' } },
        { kind: 'BINARY[]', peek: true, section: { part: [1], text: 'MIME' } },
        { kind: 'BINARY[]', peek: true, section: { part: [], text: 'HEADER.FIELDS', fields: ['Subject'] }, partial: { offset: 0, length: 5 } },
      ],
    });
    const cases: Array<[string, boolean]> = [
      ['1 (FLAGS ALL)', false], ['1 ()', false], ['1 BODY[MIME]', false], ['1 BODY[HEADER.FIELDS]', false], ['1 BODY[1.0]', false],
      ['1 BODY[]<0.0>', false], ['1 BODY[]<5>', false], ['1 BINARY[MIME]', false], ['1 BINARY[FOO]', false], ['1 BINARY[1]<5>', false], ['1 FOO', false],
      ['1 FLAGS (VANISHED)', true], ['1 FLAGS (CHANGEDSINCE 1 VANISHED)', false], ['1 FLAGS (CHANGEDSINCE x)', false], ['1 BODY[HEADER.FIELDS (a:b)]', false],
      ['1 FLAGS UID', false],
    ];
    for (const [text, uid] of cases) expect(parseFetchCommand(args(text), { uid }), text).toHaveProperty('bad');
  });

  it('names items in responses as RFC 9051 shows them', () => {
    const r = parseFetchCommand(args('1 (BODY.PEEK[1.HEADER.FIELDS (From To)]<0.100> BINARY.PEEK[1]<4.1> BINARY.PEEK[TEXT] BINARY.SIZE[HEADER.FIELDS (Subject)] RFC822.SIZE)'), { uid: false });
    expect('items' in r && r.items.map(fetchItemName)).toEqual(['BODY[1.HEADER.FIELDS (FROM TO)]<0>', 'BINARY[1]<4>', 'BINARY[TEXT]', 'BINARY.SIZE[HEADER.FIELDS (SUBJECT)]', 'RFC822.SIZE']);
  });

  const part = fc.array(fc.integer({ min: 1, max: 99 }), { maxLength: 3 });
  const partial = fc.option(fc.record({ offset: fc.integer({ min: 0, max: 0xffffffff }), length: fc.integer({ min: 1, max: 0xffffffff }) }), { nil: undefined });
  const field = fc.string({ unit: fc.constantFrom(...'abcXYZ-_0'.split('')), minLength: 1, maxLength: 8 });
  const section = fc.oneof(
    part.map((p) => ({ part: p })),
    fc.record({ part, text: fc.constantFrom('HEADER' as const, 'TEXT' as const) }),
    fc.record({ part: part.filter((p) => p.length > 0), text: fc.constant('MIME' as const) }),
    fc.record({ part, text: fc.constantFrom('HEADER.FIELDS' as const, 'HEADER.FIELDS.NOT' as const), fields: fc.array(field, { minLength: 1, maxLength: 4 }) }),
  );
  const clean = <T extends object>(o: T): T => JSON.parse(JSON.stringify(o)) as T;
  const itemArb: fc.Arbitrary<FetchItem> = fc.oneof(
    fc.constantFrom('FLAGS', 'UID', 'INTERNALDATE', 'RFC822.SIZE', 'ENVELOPE', 'BODYSTRUCTURE', 'BODY', 'RFC822', 'RFC822.HEADER', 'RFC822.TEXT', 'MODSEQ').map((kind) => ({ kind })),
    fc.record({ kind: fc.constant('BODY[]' as const), peek: fc.boolean(), section, partial }).map(clean),
    fc.record({ kind: fc.constant('BINARY[]' as const), peek: fc.boolean(), section, partial }).map(clean),
    fc.record({ kind: fc.constant('BINARY.SIZE' as const), section }),
  );

  it('round-trips random attribute lists through the writer and the reader', () => {
    fc.assert(
      fc.property(fc.array(itemArb, { minLength: 1, maxLength: 6 }), (items) => {
        const cmd = commands(writeThenRead([1, items.map((i) => ({ raw: formatFetchItem(i) }))]))[0]!;
        expect(parseFetchCommand(cmd.args, { uid: false })).toEqual({ set: { saved: false, ranges: [{ from: 1, to: 1 }] }, items, vanished: false });
      }),
      runs(1000),
    );
  });
});

describe('STORE, SELECT, APPEND', () => {
  it('parses STORE with modifiers, silent forms and bare flags', () => {
    expect(parseStoreCommand(args('2:4 +FLAGS (\\deleted)'))).toEqual({ set: { saved: false, ranges: [{ from: 2, to: 4 }] }, op: 'add', silent: false, flags: ['\\Deleted'] });
    expect(parseStoreCommand(args('7,5,9 (UNCHANGEDSINCE 320162338) -flags.silent \\Seen $Junk \\SEEN'))).toEqual({
      set: { saved: false, ranges: [{ from: 7, to: 7 }, { from: 5, to: 5 }, { from: 9, to: 9 }] }, unchangedSince: 320162338n, op: 'remove', silent: true, flags: ['\\Seen', '$Junk'],
    });
    expect(parseStoreCommand(args('1 FLAGS ()'))).toMatchObject({ op: 'set', flags: [] });
    // NIL where a flag goes is the keyword NIL, as Dovecot takes it.
    expect(parseStoreCommand(args('1 +FLAGS NIL'))).toMatchObject({ op: 'add', flags: ['NIL'] });
    expect(parseStoreCommand(args('1 FLAGS (nil \\Seen)'))).toMatchObject({ op: 'set', flags: ['NIL', '\\Seen'] });
    for (const text of ['1 +FLAGS (\\Recent)', '1 +FLAGS (\\Foo)', '1 FLAGS', '1 LABELS (a)', '1 (UNCHANGEDSINCE) FLAGS (a)', '1 +FLAGS ("a")', '1 +FLAGS (a%)']) {
      expect(parseStoreCommand(args(text)), text).toHaveProperty('bad');
    }
    expect(parseStoreCommand(args('1 +FLAGS (\\Recent)'))).toEqual({ bad: 'Invalid system flag \\Recent.' });
  });

  it('parses SELECT with CONDSTORE and the RFC 7162 QRESYNC examples', () => {
    expect(parseSelectCommand(args('inbox (CONDSTORE)'), { utf8: false })).toEqual({ mailbox: 'INBOX', condstore: true });
    expect(parseSelectCommand(args('INBOX (QRESYNC (67890007 20050715194045000 41,43:211,214:541))'), { utf8: false })).toEqual({
      mailbox: 'INBOX', condstore: false,
      qresync: { uidValidity: 67890007, modseq: 20050715194045000n, knownUids: parseSequenceSet(atom('41,43:211,214:541')) },
    });
    expect(parseSelectCommand(args('INBOX (QRESYNC (67890007 90060115194045000 41:211,214:541 (1:10,15 41:50,57)))'), { utf8: false })).toMatchObject({
      qresync: { seqMatch: { seqs: parseSequenceSet(atom('1:10,15')), uids: parseSequenceSet(atom('41:50,57')) } },
    });
    expect(parseSelectCommand(args('INBOX (QRESYNC (1 2 (1 2)))'), { utf8: false })).toMatchObject({ qresync: { seqMatch: {} } });
    for (const text of ['INBOX (QRESYNC (0 1))', 'INBOX (QRESYNC (1))', 'INBOX (FOO)', 'INBOX CONDSTORE', 'INBOX (QRESYNC (1 2 1:*))']) {
      expect(parseSelectCommand(args(text), { utf8: false }), text).toHaveProperty('bad');
    }
  });

  it('parses APPEND with flags, date-time, literal8 and the UTF8 form', () => {
    const events = feed(['A003 APPEND saved-messages (\\Seen) "17-Jul-1996 02:44:25 -0700" {5+}\r\nhello\r\n']);
    const r = parseAppendCommand(commands(events)[0]!.args, { utf8: false });
    expect(r).toEqual({ mailbox: 'saved-messages', flags: ['\\Seen'], date: { date: new Date('1996-07-17T09:44:25Z'), zone: -420 }, message: Buffer.from('hello'), binary: false, utf8: false });
    expect(parseAppendCommand(commands(feed(['A1 APPEND INBOX ~{3+}\r\na\x00b\r\n']))[0]!.args, { utf8: false })).toMatchObject({ binary: true, message: Buffer.from('a\x00b') });
    expect(parseAppendCommand(commands(feed(['A1 APPEND INBOX UTF8 (~{2+}\r\nhi)\r\n']))[0]!.args, { utf8: true })).toMatchObject({ utf8: true, message: Buffer.from('hi') });
    for (const text of ['INBOX "hello"', 'INBOX (\\Recent) {1+}\r\nx', 'INBOX "32-Jul-1996 02:44:25 -0700" {1+}\r\nx', 'INBOX {1+}\r\nx {1+}\r\ny']) {
      expect(parseAppendCommand(args(text), { utf8: false }), text).toHaveProperty('bad');
    }
  });
});

describe('dates and mailbox names', () => {
  it('parses and formats dates and date-times', () => {
    expect(parseDate(atom('1-Feb-1994'))).toEqual({ year: 1994, month: 2, day: 1 });
    expect(parseDate(str('29-feb-2024'))).toEqual({ year: 2024, month: 2, day: 29 });
    for (const d of ['29-Feb-2023', '1-Foo-1994', '1-Feb-94', '001-Feb-1994']) expect(parseDate(atom(d))).toHaveProperty('bad');
    expect(parseDateTime(str(' 7-Jul-1996 02:44:25 +0130'))).toEqual({ date: new Date('1996-07-07T01:14:25Z'), zone: 90 });
    expect(parseDateTime(atom('7-Jul-1996'))).toHaveProperty('bad');
    expect(formatDateTime(new Date('1996-07-17T09:44:25Z'), -420)).toBe('17-Jul-1996 02:44:25 -0700');
    expect(formatDateTime(new Date('2024-03-05T00:00:09Z'))).toBe(' 5-Mar-2024 00:00:09 +0000');
    fc.assert(
      fc.property(fc.date({ min: new Date('1970-01-01'), max: new Date('2999-12-31'), noInvalidDate: true }), fc.integer({ min: -720, max: 840 }), (d, zone) => {
        const whole = new Date(Math.floor(d.getTime() / 1000) * 1000);
        expect(parseDateTime(str(formatDateTime(whole, zone)))).toEqual({ date: whole, zone });
      }),
      runs(500),
    );
  });

  it('decodes modified UTF-7 strictly and encodes it back', () => {
    expect(decodeModifiedUtf7('~peter/mail/&U,BTFw-/&ZeVnLIqe-')).toBe('~peter/mail/\u53f0\u5317/\u65e5\u672c\u8a9e');
    expect(encodeModifiedUtf7('~peter/mail/\u53f0\u5317/\u65e5\u672c\u8a9e')).toBe('~peter/mail/&U,BTFw-/&ZeVnLIqe-');
    expect(encodeModifiedUtf7('Tom & Jerry \u{1F600}')).toBe('Tom &- Jerry &2D3eAA-');
    for (const bad of ['&Jjo!', '&U,BTFw-&ZeVnLIqe-', '&AGE-', '&U,B-', '&2D0-', 'a&b', '&-&', 'caf\u00e9']) expect(decodeModifiedUtf7(bad), bad).toBeNull();
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 30 }), (name) => {
        expect(decodeModifiedUtf7(encodeModifiedUtf7(name))).toBe(name);
      }),
      runs(1000),
    );
  });

  it('reads mailbox names as modified UTF-7, or UTF-8 once enabled; INBOX in any case', () => {
    expect(parseMailboxName(atom('inBox'), { utf8: false })).toBe('INBOX');
    expect(parseMailboxName(atom('INBOX.sub'), { utf8: false })).toBe('INBOX.sub');
    expect(parseMailboxName(str('&ZeVnLIqe-'), { utf8: false })).toBe('\u65e5\u672c\u8a9e');
    // A name that does not decode is answered NO (the command was well formed), as Dovecot answers.
    expect(parseMailboxName(str('\u65e5\u672c'), { utf8: false })).toEqual({ bad: 'Mailbox name is not valid mUTF-7.', no: true });
    expect(parseMailboxName(str('a&b'), { utf8: false })).toEqual({ bad: 'Mailbox name is not valid mUTF-7.', no: true });
    expect(parseMailboxName(str('\u65e5\u672c &x'), { utf8: true })).toBe('\u65e5\u672c &x');
    expect(parseMailboxName({ type: 'string', value: Buffer.from([0xc3, 0x28]) }, { utf8: true })).toHaveProperty('bad');
    expect(parseMailboxName(str('a\x01b'), { utf8: true })).toHaveProperty('bad');
    expect(parseMailboxName(str('&AAE-'), { utf8: false })).toHaveProperty('bad');
    expect(parseMailboxName({ type: 'nil' }, { utf8: false })).toBe('NIL');
    expect(parseMailboxName({ type: 'list', items: [] }, { utf8: false })).toHaveProperty('bad');
  });
});

describe('SEARCH', () => {
  it('parses RFC 9051 examples into a tree', () => {
    expect(parseSearchCommand(args('FLAGGED SINCE 1-Feb-1994 NOT FROM "Smith"'))).toEqual({
      key: { type: 'and', keys: [{ type: 'flag', flag: '\\Flagged', set: true }, { type: 'date', of: 'internal', op: 'since', date: { year: 1994, month: 2, day: 1 } }, { type: 'not', key: { type: 'text', field: 'FROM', value: 'Smith' } }] },
    });
    expect(parseSearchCommand(args('RETURN (MIN COUNT) CHARSET utf-8 OR (SEEN 1:5) UID $ TEXT {5+}\r\ncaf\u00e9'.replace('caf\u00e9', 'caf\xc3\xa9')))).toEqual({
      return: ['MIN', 'COUNT'], charset: 'UTF-8',
      key: { type: 'and', keys: [{ type: 'or', left: { type: 'and', keys: [{ type: 'flag', flag: '\\Seen', set: true }, { type: 'seq', set: parseSequenceSet(atom('1:5')) }] }, right: { type: 'uid', set: { saved: true, ranges: [] } } }, { type: 'text', field: 'TEXT', value: 'caf\u00e9' }] },
    });
    expect(parseSearchCommand(args('MODSEQ "/flags/\\\\draft" all 620162338 LARGER 5 HEADER Message-ID <a@b> YOUNGER 60'))).toMatchObject({
      key: { keys: [{ type: 'modseq', modseq: 620162338n, entry: { name: '/flags/\\draft', kind: 'all' } }, { type: 'size', op: 'larger', size: 5 }, { type: 'header', field: 'Message-ID', value: '<a@b>' }, { type: 'age', op: 'younger', seconds: 60 }] },
    });
    expect(parseSearchCommand(args('RETURN () ALL'))).toEqual({ return: [], key: { type: 'all' } });
    expect(parseSearchCommand(args('CHARSET UTF-8 SUBJECT {2+}\r\n\xc3\xa9'))).toMatchObject({ charset: 'UTF-8', key: { value: '\u00e9' } });
    for (const charset of ['KOI8-R', 'ISO-8859-1']) {
      expect(parseSearchCommand(args(`CHARSET ${charset} ALL`))).toEqual({ bad: 'Unsupported charset.', no: true, code: 'BADCHARSET (UTF-8 US-ASCII)' });
    }
    for (const text of ['FOO', 'OR SEEN', 'NOT', 'SINCE 1994', '()', 'LARGER x', 'RETURN (BAR) ALL', 'KEYWORD \\Bar', 'HEADER "a b" x', 'YOUNGER 0']) {
      expect(parseSearchCommand(args(text)), text).toHaveProperty('bad');
    }
    expect(parseSearchCommand(args(`${'NOT '.repeat(70)}ALL`))).toEqual({ bad: 'Search query too complex.' });
  });

  const text = fc.string({ unit: 'grapheme', maxLength: 12 });
  const small = fc.oneof(fc.integer({ min: 1, max: 0xffffffff }), fc.constant('*' as const));
  const setArb = fc.array(fc.record({ from: small, to: small }), { minLength: 1, maxLength: 3 }).map((ranges): SequenceSet => ({ saved: false, ranges }));
  const leaf: fc.Arbitrary<SearchKey> = fc.oneof(
    fc.constantFrom<SearchKey>({ type: 'all' }, { type: 'new' }, { type: 'old' }, { type: 'recent' }),
    fc.record({ type: fc.constant('flag' as const), flag: fc.constantFrom('\\Seen', '\\Answered', '\\Draft', '$Junk', 'Work'), set: fc.boolean() }),
    fc.record({ type: fc.constant('text' as const), field: fc.constantFrom('BCC', 'BODY', 'CC', 'FROM', 'SUBJECT', 'TEXT', 'TO' as const), value: text }),
    fc.record({ type: fc.constant('header' as const), field: fc.constantFrom('X-Spam', 'Message-ID', 'list-id'), value: text }),
    fc.record({
      type: fc.constant('date' as const), of: fc.constantFrom('internal' as const, 'sent' as const), op: fc.constantFrom('before' as const, 'on' as const, 'since' as const),
      date: fc.record({ year: fc.integer({ min: 1900, max: 2100 }), month: fc.integer({ min: 1, max: 12 }), day: fc.integer({ min: 1, max: 28 }) }),
    }),
    fc.record({ type: fc.constant('size' as const), op: fc.constantFrom('larger' as const, 'smaller' as const), size: fc.integer({ min: 0, max: 0xffffffff }) }),
    fc.record({ type: fc.constant('age' as const), op: fc.constantFrom('older' as const, 'younger' as const), seconds: fc.integer({ min: 1, max: 0xffffffff }) }),
    fc.record({ type: fc.constantFrom('seq' as const, 'uid' as const), set: setArb }),
    fc.record({ type: fc.constant('modseq' as const), modseq: fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }) }),
    fc.record({ type: fc.constant('modseq' as const), modseq: fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }), entry: fc.record({ name: text, kind: fc.constantFrom('priv' as const, 'shared' as const, 'all' as const) }) }),
  );
  const keyArb: fc.Arbitrary<SearchKey> = fc.letrec<{ key: SearchKey }>((tie) => ({
    key: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      leaf,
      tie('key').map((key): SearchKey => ({ type: 'not', key })),
      fc.record({ type: fc.constant('or' as const), left: tie('key'), right: tie('key') }),
      fc.array(tie('key'), { minLength: 2, maxLength: 4 }).map((keys): SearchKey => ({ type: 'and', keys })),
    ),
  })).key;

  it('round-trips random key trees through the writer and the reader', () => {
    fc.assert(
      fc.property(keyArb, fc.boolean(), (key, utf8) => {
        const cmd = commands(writeThenRead(formatSearchKey(key), utf8))[0]!;
        expect(parseSearchCommand(cmd.args)).toEqual({ key });
      }),
      runs(1000),
    );
  });
});
