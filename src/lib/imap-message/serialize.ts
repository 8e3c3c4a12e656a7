// A minimal writer for ImapValue, choosing quoted or literal strings as Dovecot does. The protocol writer of the
// IMAP server may take this over; tests use it to compare our values with Dovecot's answers.
import type { ImapValue } from './types.js';

/** Beyond this many quote/backslash escapes a literal is shorter (Dovecot's QUOTED_MAX_ESCAPE_CHARS). */
const QUOTED_MAX_ESCAPES = 4;

function needsLiteral(bytes: Buffer): boolean {
  let escapes = 0;
  for (const c of bytes) {
    if (c === 0x22 || c === 0x5c) {
      if (++escapes > QUOTED_MAX_ESCAPES) return true;
    } else if (c === 0x0d || c === 0x0a || c === 0 || c >= 0x80) return true;
  }
  return false;
}

function writeString(value: string | Buffer, out: Buffer[]): void {
  const data = typeof value === 'string' ? Buffer.from(value, 'latin1') : value;
  if (needsLiteral(data)) {
    out.push(Buffer.from(`{${data.length}}\r\n`, 'latin1'), data);
    return;
  }
  out.push(Buffer.from(`"${data.toString('latin1').replace(/["\\]/g, '\\$&')}"`, 'latin1'));
}

function write(value: ImapValue, out: Buffer[]): void {
  if (value === null) out.push(Buffer.from('NIL'));
  else if (typeof value === 'number') out.push(Buffer.from(String(value)));
  else if (typeof value === 'string' || Buffer.isBuffer(value)) writeString(value, out);
  else {
    out.push(Buffer.from('('));
    // A list's leading run of lists (a multipart's parts, an address list's addresses) has no spaces in it, as
    // Dovecot writes them; everything else is space-separated.
    let leading = true;
    value.forEach((item, i) => {
      const isList = Array.isArray(item);
      if (i > 0 && !(leading && isList)) out.push(Buffer.from(' '));
      if (!isList) leading = false;
      write(item, out);
    });
    out.push(Buffer.from(')'));
  }
}

/** The IMAP text of a value. */
export function serializeImapValue(value: ImapValue): Buffer {
  const out: Buffer[] = [];
  write(value, out);
  return Buffer.concat(out);
}
