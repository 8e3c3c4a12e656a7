/**
 * Mailbox names on the wire. IMAP4rev1 clients send modified UTF-7 (RFC 3501 5.1.3: `&` opens base64 of UTF-16
 * with `,` for `/`, `-` closes it, `&-` is `&`); clients that enabled UTF8=ACCEPT (and IMAP4rev2 ones) send UTF-8 and
 * get it back. Decoding is strict, as Dovecot's: a name has one spelling, so no two wire names reach one folder
 * and a name read back is the name written. `INBOX` is matched case-insensitively and always spelled so.
 */
import { astringBytes, type ParseError, type Token } from './token.js';

export const MAX_MAILBOX_NAME_BYTES = 1024;

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+,';
const B64_VALUE = new Int16Array(128).fill(-1);
for (let i = 0; i < B64.length; i++) B64_VALUE[B64.charCodeAt(i)] = i;

/** Decodes modified UTF-7, or null when the text is not its one valid spelling of some name. */
export function decodeModifiedUtf7(s: string): string | null {
  let out = '';
  let i = 0;
  while (i < s.length) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) return null;
    if (c !== 0x26 /* & */) {
      out += s[i++];
      continue;
    }
    const end = s.indexOf('-', i + 1);
    if (end < 0) return null;
    if (end === i + 1) {
      out += '&';
      i = end + 1;
      continue;
    }
    const decoded = decodeBase64Run(s.slice(i + 1, end));
    if (decoded === null) return null;
    out += decoded;
    i = end + 1;
    // Two runs back to back would be one run in the valid spelling.
    if (s[i] === '&' && s[i + 1] !== '-') return null;
  }
  return out;
}

function decodeBase64Run(run: string): string | null {
  const units: number[] = [];
  let bits = 0;
  let acc = 0;
  for (let k = 0; k < run.length; k++) {
    const v = B64_VALUE[run.charCodeAt(k)] ?? -1;
    if (v < 0) return null;
    acc = ((acc << 6) | v) & 0xffffff;
    bits += 6;
    if (bits >= 16) {
      bits -= 16;
      units.push((acc >> bits) & 0xffff);
    }
  }
  // Leftover bits must be fewer than six and zero.
  if (bits >= 6 || (acc & ((1 << bits) - 1)) !== 0 || units.length === 0) return null;
  let out = '';
  for (let k = 0; k < units.length; k++) {
    const u = units[k]!;
    if (u >= 0x20 && u <= 0x7e) return null; // printable ASCII is never encoded
    if (u >= 0xd800 && u <= 0xdbff) {
      const lo = units[k + 1];
      if (lo === undefined || lo < 0xdc00 || lo > 0xdfff) return null;
      out += String.fromCharCode(u, lo);
      k++;
    } else if (u >= 0xdc00 && u <= 0xdfff) return null;
    else out += String.fromCharCode(u);
  }
  return out;
}

/** Encodes a name as modified UTF-7. */
export function encodeModifiedUtf7(name: string): string {
  let out = '';
  let i = 0;
  while (i < name.length) {
    const c = name.charCodeAt(i);
    if (c >= 0x20 && c <= 0x7e) {
      out += c === 0x26 ? '&-' : name[i];
      i++;
      continue;
    }
    let j = i;
    while (j < name.length && (name.charCodeAt(j) < 0x20 || name.charCodeAt(j) > 0x7e)) j++;
    out += `&${encodeBase64Run(name.slice(i, j))}-`;
    i = j;
  }
  return out;
}

function encodeBase64Run(s: string): string {
  let out = '';
  let acc = 0;
  let bits = 0;
  for (let k = 0; k < s.length; k++) {
    acc = ((acc << 16) | s.charCodeAt(k)) & 0xffffff;
    bits += 16;
    while (bits >= 6) {
      bits -= 6;
      out += B64[(acc >> bits) & 0x3f];
    }
  }
  if (bits > 0) out += B64[(acc << (6 - bits)) & 0x3f];
  return out;
}

/** `INBOX` in any case is INBOX; every other name is kept as it is. */
export function normalizeMailboxName(name: string): string {
  return name.length === 5 && name.toUpperCase() === 'INBOX' ? 'INBOX' : name;
}

/**
 * A mailbox argument (an astring) as the name it means: UTF-8 when the client enabled UTF8=ACCEPT, modified UTF-7
 * otherwise (then 8-bit bytes are refused). Control characters and over-long names are refused either way.
 */
export function parseMailboxName(t: Token | undefined, options: { utf8: boolean }): string | ParseError {
  const bytes = astringBytes(t);
  if (bytes === null) return { bad: 'Invalid mailbox name.' };
  if (bytes.length > MAX_MAILBOX_NAME_BYTES) return { bad: 'Mailbox name too long.' };
  let has8bit = false;
  for (const b of bytes) {
    if (b < 0x20 || b === 0x7f) return { bad: 'Invalid characters in mailbox name.' };
    if (b > 0x7f) has8bit = true;
  }
  if (options.utf8) {
    const name = bytes.toString('utf8');
    if (has8bit && !Buffer.from(name, 'utf8').equals(bytes)) return { bad: 'Mailbox name is not valid UTF-8.' };
    return normalizeMailboxName(name);
  }
  // A name that does not decode is NO, not BAD, as Dovecot answers: the command was well formed, the name is not one.
  if (has8bit) return { bad: 'Mailbox name is not valid mUTF-7.', no: true };
  const name = decodeModifiedUtf7(bytes.toString('latin1'));
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused here
  if (name === null || /[\u0000-\u001f\u007f]/.test(name)) return { bad: 'Mailbox name is not valid mUTF-7.', no: true };
  return normalizeMailboxName(name);
}

/** A name as the client reads it back (pair with the writer's string). */
export function encodeMailboxName(name: string, options: { utf8: boolean }): string {
  return options.utf8 ? name : encodeModifiedUtf7(name);
}
