// A minimal writer for ImapValue, choosing quoted or literal strings as Dovecot does. The protocol writer of the
// IMAP server may take this over; tests use it to compare our values with Dovecot's answers.
import type { ImapValue } from './types.js';

/** Beyond this many quote/backslash escapes a literal is shorter (Dovecot's QUOTED_MAX_ESCAPE_CHARS). */
const QUOTED_MAX_ESCAPES = 4;

function needsLiteral(text: string): boolean {
  let escapes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 || c === 0x5c) {
      if (++escapes > QUOTED_MAX_ESCAPES) return true;
    } else if (c === 0x0d || c === 0x0a || c === 0 || c >= 0x80) return true;
  }
  return false;
}

// Built as one latin1 string (one char per byte) and turned into bytes once: far fewer allocations than a Buffer
// per token.
function writeString(value: string | Buffer): string {
  const text = typeof value === 'string' ? value : value.toString('latin1');
  if (needsLiteral(text)) return `{${text.length}}\r\n${text}`;
  return `"${text.replace(/["\\]/g, '\\$&')}"`;
}

function write(value: ImapValue): string {
  if (value === null) return 'NIL';
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string' || Buffer.isBuffer(value)) return writeString(value);
  // A list's leading run of lists (a multipart's parts, an address list's addresses) has no spaces in it, as
  // Dovecot writes them; everything else is space-separated.
  let out = '(';
  let leading = true;
  value.forEach((item, i) => {
    const isList = Array.isArray(item);
    if (i > 0 && !(leading && isList)) out += ' ';
    if (!isList) leading = false;
    out += write(item);
  });
  return `${out})`;
}

/** The IMAP text of a value. */
export function serializeImapValue(value: ImapValue): Buffer {
  return Buffer.from(write(value), 'latin1');
}
