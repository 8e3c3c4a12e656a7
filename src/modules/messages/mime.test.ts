import { describe, expect, it } from 'vitest';
import { capAddressHeaders, MAX_ADDRESS_FIELD_BYTES, MAX_ADDRESS_HEADERS_BYTES, MAX_ADDRESSES, MAX_ATTACHMENTS, MAX_PARSED_DELIMITERS, MAX_REFERENCES, parseInput, parseMessage } from './mime.js';

/** The bounds the parse keeps on what one message makes the store hold. */
describe('parse bounds', () => {
  const multipart = (parts: number) =>
    Buffer.from(
      `From: a@sender.test\r\nTo: b@mailroom.localhost\r\nSubject: parts\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n${Array.from({ length: parts }, (_, i) => `--b\r\nContent-Type: application/x-part\r\n\r\n${i}\r\n`).join('')}--b--\r\n`,
    );

  it('gives the parser the message up to the delimiter past its bound, and a smaller one whole', () => {
    const small = multipart(10);
    expect(parseInput(small)).toBe(small);
    const large = multipart(MAX_PARSED_DELIMITERS + 50);
    const given = parseInput(large).toString('latin1');
    expect(given.split('\n--').length - 1).toBe(MAX_PARSED_DELIMITERS);
    expect(given.endsWith(`${MAX_PARSED_DELIMITERS - 1}\r\n`)).toBe(true);
  });

  it(`keeps ${MAX_ATTACHMENTS} parts as attachments`, async () => {
    const parsed = await parseMessage(multipart(MAX_ATTACHMENTS + 500));
    expect(parsed.parseError).toBeNull();
    expect(parsed.attachments).toHaveLength(MAX_ATTACHMENTS);
    expect(parsed.attachments.at(-1)!.content.toString().trim()).toBe(String(MAX_ATTACHMENTS - 1));
  });

  it(`keeps ${MAX_ADDRESSES} addresses of a field and ${MAX_REFERENCES} references, the first and the latest`, async () => {
    const to = Array.from({ length: MAX_ADDRESSES + 10 }, (_, i) => `r${i}@x.test`).join(', ');
    const references = Array.from({ length: 500 }, (_, i) => `<ref${i}@x.test>`).join(' ');
    const parsed = await parseMessage(Buffer.from(`From: a@sender.test\r\nTo: ${to}\r\nReferences: ${references}\r\nSubject: s\r\n\r\nbody\r\n`));
    expect(parsed.to).toHaveLength(MAX_ADDRESSES);
    expect(parsed.references).toHaveLength(MAX_REFERENCES);
    expect(parsed.references[0]).toBe('ref0@x.test');
    expect(parsed.references[1]).toBe(`ref${500 - MAX_REFERENCES + 1}@x.test`);
    expect(parsed.references.at(-1)).toBe('ref499@x.test');
    expect(parsed.snippet).toBe('body');
  });

  it('cuts each address field at a comma within its bytes, all of them within theirs, and leaves every other byte', () => {
    const small = Buffer.from('From: a@sender.test\r\nTo: b@x.test\r\n\r\nbody\r\n');
    expect(capAddressHeaders(small)).toBe(small);
    const long = Array.from({ length: 5000 }, (_, i) => `r${i}@x.test`).join(',\r\n ');
    const raw = Buffer.from(`From: a@sender.test\r\nTo: ${long}\r\nSubject: kept\r\nCc: ${long}\r\nBcc: ${long}\r\nX-Other: ${long}\r\n\r\nTo: ${long}\r\n`);
    const capped = capAddressHeaders(raw).toString('latin1');
    const field = (name: string) => new RegExp(`^${name}: ?(.*?)\r\n(?![ \t])`, 'ms').exec(capped)![1]!;
    expect(field('To').length).toBeLessThanOrEqual(MAX_ADDRESS_FIELD_BYTES);
    expect(field('To').length).toBeGreaterThan(MAX_ADDRESS_FIELD_BYTES - 20);
    expect(field('To').endsWith('@x.test')).toBe(true);
    expect(field('Cc').length).toBeLessThanOrEqual(MAX_ADDRESS_HEADERS_BYTES - field('To').length - 'a@sender.test'.length);
    expect(field('Bcc')).toBe('');
    expect(field('X-Other')).toBe(long);
    expect(capped).toContain('\r\nSubject: kept\r\n');
    expect(capped.endsWith(`\r\n\r\nTo: ${long}\r\n`)).toBe(true); // the body is not headers
  });

  it('parses a megabyte of To in time linear in what is kept, and keeps the rest of the message', async () => {
    const to = Array.from({ length: 80_000 }, (_, i) => `r${i}@x.test`).join(', ');
    const raw = Buffer.from(`From: a@sender.test\r\nTo: ${to}\r\nSubject: s\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nbody\r\n--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename="a.pdf"\r\n\r\n%PDF\r\n--b--\r\n`);
    expect(raw.length).toBeGreaterThan(1024 * 1024);
    const parsed = await parseMessage(raw);
    expect(parsed.parseError).toBeNull();
    expect(parsed.to.length).toBeGreaterThan(100);
    expect(parsed.to[0]).toEqual({ name: '', address: 'r0@x.test' });
    expect(parsed.text?.trim()).toBe('body');
    expect(parsed.attachments.map((a) => a.filename)).toEqual(['a.pdf']);
  });
});
