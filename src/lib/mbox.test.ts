import { describe, expect, it } from 'vitest';
import { asctime, fromLine, mboxrdBody, parseFromLine, readMbox, type MboxFormat } from './mbox.js';

/** Feed a buffer in pieces of `size` bytes, as a file stream would. */
async function* pieces(data: Buffer, size: number): AsyncGenerator<Buffer> {
  for (let i = 0; i < data.length; i += size) yield data.subarray(i, i + size);
}

async function readAll(data: Buffer, options: { format?: MboxFormat; maxBytes?: number; piece?: number } = {}) {
  const out = [];
  for await (const m of readMbox(pieces(data, options.piece ?? 7), { format: options.format ?? 'mboxrd', maxBytes: options.maxBytes ?? 1 << 20 })) out.push(m);
  return out;
}

describe('mbox', () => {
  const tricky = [
    Buffer.from('Subject: a\r\n\r\nFrom the top\r\n>From once\r\n>>From twice\r\nFrom\r\n\r\n'),
    Buffer.from('Subject: b\n\nno newline at the end of a line here\n'),
    Buffer.from('Subject: c\r\n\r\nends with an empty line\r\n\r\n'),
    Buffer.from(`Subject: d\n\n${'y'.repeat(200_000)}\nFrom inside a long one\n`),
  ];

  it('round-trips any message byte for byte through mboxrd, whatever the chunking', async () => {
    const file = Buffer.concat(tricky.flatMap((raw, i) => [Buffer.from(fromLine(i === 1 ? '' : 'a@b.test', Date.UTC(2026, 10, 8, 9, 5, 7), i === 0 ? 'S' : '')), mboxrdBody(raw)]));
    for (const piece of [1, 7, 4096, 1 << 20]) {
      const read = await readAll(file, { piece });
      expect(read.map((m) => m.raw!.toString('latin1'))).toEqual(tricky.map((r) => r.toString('latin1')));
      expect(read.map((m) => m.from.flags)).toEqual(['S', '', '', '']);
      expect(read[1]!.from.sender).toBe('MAILER-DAEMON');
      expect(read[0]!.from.receivedAt).toBe(Date.UTC(2026, 10, 8, 9, 5, 7));
    }
    expect(mboxrdBody(tricky[0]!).toString()).toContain('\r\n>From the top\r\n>>From once\r\n>>>From twice\r\nFrom\r\n');
  });

  it('writes and reads asctime dates; an unparsable date is null', () => {
    expect(asctime(Date.UTC(2026, 10, 8, 9, 5, 7))).toBe('Sun Nov  8 09:05:07 2026');
    expect(parseFromLine('From x@y.test Sun Nov  8 09:05:07 2026').receivedAt).toBe(Date.UTC(2026, 10, 8, 9, 5, 7));
    expect(parseFromLine('From x@y.test Sun Nov 8 09:05 2026').receivedAt).toBe(Date.UTC(2026, 10, 8, 9, 5));
    expect(parseFromLine('From x@y.test yesterday').receivedAt).toBeNull();
  });

  it('mboxo keeps quoted lines; an oversized message comes without its bytes; a file that is no mbox is refused', async () => {
    const file = Buffer.from('From a Sun Nov  8 09:05:07 2026\n\n>From quoted\n\nFrom b Sun Nov  8 09:05:08 2026\n\nsmall\n\n');
    expect((await readAll(file, { format: 'mboxo' }))[0]!.raw!.toString()).toBe('\n>From quoted\n');
    expect((await readAll(file))[0]!.raw!.toString()).toBe('\nFrom quoted\n');
    const big = await readAll(Buffer.concat([Buffer.from('From a Sun Nov  8 09:05:07 2026\n'), Buffer.alloc(5000, 'z'), Buffer.from('\n\n'), file]), { maxBytes: 1000 });
    expect(big.map((m) => m.raw?.toString() ?? null)).toEqual([null, '\nFrom quoted\n', '\nsmall\n']);
    expect(big[0]!.size).toBeGreaterThan(5000);
    await expect(readAll(Buffer.from('Subject: not mbox\n\nbody\n'))).rejects.toThrow(/not an mbox file/);
  });
});
