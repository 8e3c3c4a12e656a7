import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unescapeBytea } from '../src/db/dialect.js';
import { TEST_DIALECT } from './helpers/database.js';

describe('raw messages as BYTEA escape text', () => {
  it('reads the escape forms: a doubled backslash, three octal digits, the rest as it is', () => {
    expect(unescapeBytea('plain text\r\n')).toEqual(Buffer.from('plain text\r\n'));
    expect(unescapeBytea('a\\\\b\\000c\\377\\303\\251')).toEqual(Buffer.from([0x61, 0x5c, 0x62, 0x00, 0x63, 0xff, 0xc3, 0xa9]));
    expect(unescapeBytea('\\\\')).toEqual(Buffer.from('\\'));
    expect(unescapeBytea('')).toEqual(Buffer.alloc(0));
  });
});

describe.runIf(TEST_DIALECT === 'postgres')('raw messages as BYTEA escape text (postgres)', () => {
  const client = new pg.Client({ connectionString: process.env.MAILROOM_DATABASE_URL });
  beforeAll(() => client.connect());
  afterAll(() => client.end());
  const roundTrip = async (bytes: Buffer) => unescapeBytea((await client.query<{ t: string }>(`select encode($1::bytea, 'escape') as t`, [bytes])).rows[0]!.t);

  it('every byte value comes back as PostgreSQL stored it', async () => {
    const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    expect(await roundTrip(all)).toEqual(all);
    expect(await roundTrip(Buffer.from('Subject: caf\u00e9 \\ back\\slash\r\n\r\n\\\\\\\r\n'))).toEqual(Buffer.from('Subject: caf\u00e9 \\ back\\slash\r\n\r\n\\\\\\\r\n'));
  });

  it('any bytes come back as they were (fuzzed)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 300 }), async (bytes) => {
        expect(await roundTrip(Buffer.from(bytes))).toEqual(Buffer.from(bytes));
      }),
      { numRuns: 200 },
    );
  });
});
