import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BinaryCopyParser, runBinaryCopy, withLiterals, type BinaryRow } from '../src/db/pg-copy-binary.js';
import { TEST_DIALECT } from './helpers/database.js';

/** Rows of (int8, text, bytea or null) in PostgreSQL's binary COPY format: header, tuples, trailer. */
function copyStream(rows: ReadonlyArray<readonly [number, string, Uint8Array | null]>): Buffer {
  const parts: Buffer[] = [Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.from([0, 0, 0, 0, 0, 0, 0, 3]), Buffer.from('ext')];
  const field = (b: Buffer | null) => {
    const len = Buffer.alloc(4);
    len.writeInt32BE(b === null ? -1 : b.length);
    parts.push(len);
    if (b) parts.push(b);
  };
  for (const [n, t, b] of rows) {
    parts.push(Buffer.from([0, 3]));
    const int8 = Buffer.alloc(8);
    int8.writeBigInt64BE(BigInt(n));
    field(int8);
    field(Buffer.from(t, 'utf8'));
    field(b === null ? null : Buffer.from(b));
  }
  parts.push(Buffer.from([0xff, 0xff]));
  return Buffer.concat(parts);
}

const decoded = (r: BinaryRow) => [r.int(0), r.text(1), r.isNull(2) ? null : Buffer.from(r.bytes(2))] as const;

describe('binary COPY rows', () => {
  const row = fc.tuple(fc.integer({ min: -(2 ** 40), max: 2 ** 40 }), fc.string({ unit: 'grapheme', maxLength: 20 }), fc.option(fc.uint8Array({ maxLength: 60 })));

  it('parses any rows however the stream is cut into chunks, each chunk reused as node-postgres does (fuzzed)', () => {
    fc.assert(
      fc.property(fc.array(row, { maxLength: 8 }), fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 10 }), (rows, cuts) => {
        const stream = copyStream(rows);
        const parser = new BinaryCopyParser();
        const scratch = Buffer.alloc(stream.length);
        for (let at = 0, k = 0; at < stream.length; k++) {
          const len = Math.min(cuts[k % cuts.length]!, stream.length - at);
          // The chunk is a view of a buffer overwritten afterwards: the parser must have copied what it keeps.
          stream.copy(scratch, 0, at, at + len);
          parser.push(scratch.subarray(0, len));
          scratch.fill(0xaa);
          at += len;
        }
        expect(parser.complete).toBe(true);
        expect(parser.rows.map(decoded)).toEqual(rows.map(([n, t, b]) => [n, t, b === null ? null : Buffer.from(b)]));
      }),
      { numRuns: 300 },
    );
  });

  it('refuses what is not a binary COPY, and a stream cut short is not complete', () => {
    expect(() => new BinaryCopyParser().push(Buffer.from('PGCOPY\nxxxxxxxxxxxxxxxxxxxxxxxxxx'))).toThrow(/header/);
    const parser = new BinaryCopyParser();
    const stream = copyStream([[1, 'a', null]]);
    parser.push(stream.subarray(0, stream.length - 3));
    expect(parser.complete).toBe(false);
  });

  it('writes parameters as literals: integers in parentheses, strings quoted whatever they hold', () => {
    expect(withLiterals('select $1, $2 where a - $10', [-1, "it's a \\ back", ...Array<number>(7).fill(0), 5])).toBe("select (-1),  E'it''s a \\\\ back' where a - (5)");
    expect(() => withLiterals('select $1', [1.5])).toThrow(TypeError);
    expect(() => withLiterals('select $1', [{}])).toThrow(TypeError);
  });
});

describe.runIf(TEST_DIALECT === 'postgres')('binary COPY rows (postgres)', () => {
  const client = new pg.Client({ connectionString: process.env.MAILROOM_DATABASE_URL });
  beforeAll(() => client.connect());
  afterAll(() => client.end());
  const copy = (select: string, params: unknown[] = []) => runBinaryCopy(client, `COPY (${select}) TO STDOUT (FORMAT binary)`, params);

  it('reads every column type the stores use, every byte value and a message larger than a socket read', async () => {
    const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const big = Buffer.alloc(3 * 1024 * 1024, 'x\\\0\u00e9');
    const rows = await copy(`select 7::int2, 70000::int4, 9007199254740991::int8, (-5)::int8, 'caf\u00e9'::text, null::bytea, $1::bytea, $2::bytea, ''::bytea`, [`\\x${all.toString('hex')}`, `\\x${big.toString('hex')}`]);
    expect(rows).toHaveLength(1);
    const r = rows[0]!;
    expect([r.int(0), r.int(1), r.int(2), r.int(3), r.text(4), r.isNull(5)]).toEqual([7, 70000, 9007199254740991, -5, 'caf\u00e9', true]);
    expect(r.bytes(6)).toEqual(all);
    expect(r.bytes(7).equals(big)).toBe(true);
    expect(r.bytes(8)).toEqual(Buffer.alloc(0));
    expect(() => r.int(4)).toThrow(TypeError);
    const [beyond] = await copy('select 9007199254740992::int8');
    expect(() => beyond!.int(0)).toThrow(RangeError);
  });

  it('quoted strings reach PostgreSQL as they were (fuzzed)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'grapheme', maxLength: 40 }).filter((s) => !s.includes('\0')), async (s) => {
        const [r] = await copy('select $1::text, length($1::text)', [s]);
        expect(r!.text(0)).toBe(s);
      }),
      { numRuns: 100 },
    );
  });

  it('a statement that fails rejects with its error and leaves the connection usable; many rows come in order', async () => {
    await expect(copy('select 1 / (g - 3) from generate_series(1, 5) g')).rejects.toThrow(/division by zero/);
    const rows = await copy('select g::int8 from generate_series(1, 5000) g');
    expect(rows.map((r) => r.int(0))).toEqual(Array.from({ length: 5000 }, (_, i) => i + 1));
  });
});
