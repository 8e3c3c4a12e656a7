// How header text becomes an IMAP string: never decoded (encoded words stay as they are), but made one line.
import { NUL_REPLACEMENT } from './rfc822-tokens.js';

/** A header value as Dovecot keeps it: NULs become U+FFFD. */
export function withoutNul(value: string): string {
  return value.includes('\0') ? value.replaceAll('\0', NUL_REPLACEMENT) : value;
}

/** A header value with each NUL as byte 0x80, as Dovecot 2.3 writes every ENVELOPE field (then a literal). */
export function nulAs80(value: string): string {
  return value.includes('\0') ? value.replaceAll('\0', '\x80') : value;
}

/**
 * Line breaks removed (an unfolded header value), a space put in only where the next line does not start with
 * whitespace; for Date, Message-ID, In-Reply-To, Content-ID, Content-Description, Content-MD5, Content-Location.
 */
export function oneLine(value: string): string {
  if (!value.includes('\n') && !value.includes('\r')) return value;
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const c = value[i] as string;
    if (c !== '\r' && c !== '\n') out += c;
    else {
      const next = value[i + 1];
      if (next !== undefined && next !== ' ' && next !== '\t' && next !== '\r' && next !== '\n') out += ' ';
    }
  }
  return out;
}

/**
 * Text meant for people (Subject, display names): runs of blanks and line breaks become one space, leading and
 * trailing blanks go, and a NUL becomes byte 0x80 (Dovecot's rule for these fields).
 */
export function forHumans(value: string): string {
  let out = '';
  let lastBlank = true;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0a) {
      if (!lastBlank) out += ' ';
      lastBlank = true;
    } else {
      out += c === 0 ? '\x80' : value[i];
      lastBlank = false;
    }
  }
  return lastBlank && out.endsWith(' ') ? out.slice(0, -1) : out;
}

/** A latin1 string (one char per byte) as the bytes it stands for; ASCII stays a string. */
export function bytes(value: string): string | Buffer {
  for (let i = 0; i < value.length; i++) if (value.charCodeAt(i) >= 0x80) return Buffer.from(value, 'latin1');
  return value;
}
