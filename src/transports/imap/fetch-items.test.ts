import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ResponseBytes } from './fetch-items.js';

/** A random piece: text (short or long, with code units past ASCII) or bytes (small or past the copy bound). */
function piece(): string | Buffer {
  const kind = Math.floor(Math.random() * 4);
  if (kind === 0) return String.fromCharCode(...Array.from({ length: Math.floor(Math.random() * 70) }, () => Math.floor(Math.random() * 300)));
  if (kind === 1) return 'x'.repeat(Math.floor(Math.random() * 9000));
  if (kind === 2) return randomBytes(Math.floor(Math.random() * 600));
  return randomBytes(16 * 1024 + Math.floor(Math.random() * 4096));
}

describe('ResponseBytes', () => {
  it('hands out what was written, in order, text as latin1, over many blocks and takes', () => {
    for (let round = 0; round < 50; round++) {
      const out = new ResponseBytes();
      const expected: Buffer[] = [];
      const got: Buffer[] = [];
      for (let n = 0; n < 200; n++) {
        const p = piece();
        if (typeof p === 'string') out.text(p);
        else out.bytes(p);
        expected.push(typeof p === 'string' ? Buffer.from(p, 'latin1') : p);
        if (Math.random() < 0.05) got.push(...out.take());
      }
      got.push(...out.take());
      expect(Buffer.concat(got).equals(Buffer.concat(expected))).toBe(true);
    }
  });

  it('forgets what came after a mark', () => {
    const out = new ResponseBytes();
    out.text('* 1 FETCH (');
    const mark = out.mark();
    out.text('UID 7 ');
    out.bytes(randomBytes(20_000));
    out.reset(mark);
    out.text('FLAGS ())\r\n');
    expect(Buffer.concat(out.take()).toString('latin1')).toBe('* 1 FETCH (FLAGS ())\r\n');
  });
});
