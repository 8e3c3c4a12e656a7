// BINARY[section] and BINARY.SIZE[section] (RFC 3516): a part's body with its Content-Transfer-Encoding undone.
// As Dovecot: the section is the whole message (its header kept, said `binary` if its body was decoded), a part's
// body, or TEXT (the message's body, or a message/rfc822 part's); an encoding we do not know is UNKNOWN-CTE; base64
// or quoted-printable that does not decode is a PARSE failure (Dovecot answers NO [PARSE] rather than sending bytes
// it could not decode); a part that does not exist is empty; a multipart or message/rfc822 part is sent with each
// part inside decoded, whose header then says `Content-Transfer-Encoding: binary` (in place of the encoding it had).
import { readHeaderFields } from './header-fields.js';
import type { MimePart } from './mime-parser.js';
import { Rfc822Reader } from './rfc822-tokens.js';
import { findPart, literalSafe } from './section.js';

/**
 * Decoded bytes; `converted` when some part was base64 or quoted-printable. Dovecot then sends them as a literal8
 * with any NUL as it is; otherwise as a plain literal, a NUL made 0x80 as in BODY[].
 */
export type BinaryResult = { bytes: Buffer; converted: boolean } | { error: 'UNKNOWN-CTE' | 'PARSE' };

/** What BINARY decodes: the part's body, or TEXT (of the message, or of the message a message/rfc822 part holds). */
export interface BinarySpec {
  part: readonly number[];
  text?: 'TEXT';
}

interface Decoding {
  out: Buffer[];
  converted: boolean;
}

const EMPTY = Buffer.alloc(0);
const IDENTITY = new Set(['7bit', '8bit', 'binary']);

/** The decoded bytes `spec` names; the whole message (an empty part, no TEXT) keeps its header. */
export function binarySection(raw: Buffer, root: MimePart, spec: BinarySpec): BinaryResult {
  let part = findPart(root, spec.part);
  if (part && spec.part.length > 0 && spec.text === 'TEXT') part = part.kind === 'message' ? (part.children[0] ?? null) : null;
  if (!part) return { bytes: EMPTY, converted: false };
  const state: Decoding = { out: [], converted: false };
  if (spec.part.length === 0 && spec.text === undefined) state.out.push(partHeader(raw, part, state));
  const error = binaryBody(raw, part, state);
  if (error) return { error };
  const bytes = state.out.length === 1 ? (state.out[0] as Buffer) : Buffer.concat(state.out);
  return { bytes: state.converted ? bytes : literalSafe(bytes), converted: state.converted };
}

/** The Content-Transfer-Encoding a part's header names (read even without MIME-Version, as Dovecot does). */
function encodingOf(raw: Buffer, part: MimePart): string {
  for (const field of readHeaderFields(raw, part.headerStart, part.bodyStart)) {
    if (field.name.toLowerCase() !== 'content-transfer-encoding') continue;
    const out: string[] = [];
    const reader = new Rfc822Reader(field.value);
    reader.skipLwsp();
    reader.mimeToken(out);
    return out.join('').toLowerCase() || '7bit';
  }
  return '7bit';
}

/** A part's header as BINARY sends it: as it is, or said `binary` when its body gets decoded. */
function partHeader(raw: Buffer, part: MimePart, state: Decoding): Buffer {
  const encoding = part.kind === 'multipart' || part.kind === 'message' ? '7bit' : encodingOf(raw, part);
  if (IDENTITY.has(encoding)) return raw.subarray(part.headerStart, part.bodyStart);
  if (encoding === 'base64' || encoding === 'quoted-printable') state.converted = true;
  return binaryHeader(raw, part);
}

/** Appends the decoded body of `part` to `state.out`; returns an error instead when it does not decode. */
function binaryBody(raw: Buffer, part: MimePart, state: Decoding): 'UNKNOWN-CTE' | 'PARSE' | null {
  const out = state.out;
  if (part.kind !== 'multipart' && part.kind !== 'message') {
    const body = raw.subarray(part.bodyStart, part.bodyEnd);
    const encoding = encodingOf(raw, part);
    if (IDENTITY.has(encoding)) out.push(body);
    else if (encoding === 'base64' || encoding === 'quoted-printable') {
      const decoded = encoding === 'base64' ? decodeBase64(body) : decodeQuotedPrintable(body);
      if ('error' in decoded) return decoded.error;
      out.push(decoded.bytes);
      state.converted = true;
    } else return 'UNKNOWN-CTE';
    return null;
  }
  let at = part.bodyStart;
  for (const child of part.children) {
    out.push(raw.subarray(at, child.headerStart));
    out.push(partHeader(raw, child, state));
    const error = binaryBody(raw, child, state);
    if (error) return error;
    at = child.bodyEnd;
  }
  out.push(raw.subarray(at, part.bodyEnd));
  return null;
}

/** A decoded part's header: its Content-Transfer-Encoding fields gone, `binary` said at the end. */
function binaryHeader(raw: Buffer, part: MimePart): Buffer {
  const pieces: Buffer[] = [];
  let end = part.headerStart;
  for (const field of readHeaderFields(raw, part.headerStart, part.bodyStart)) {
    if (field.name.toLowerCase() !== 'content-transfer-encoding') pieces.push(raw.subarray(field.start, field.end));
    end = field.end;
  }
  pieces.push(Buffer.from('Content-Transfer-Encoding: binary\r\n'), raw.subarray(end, part.bodyStart));
  return Buffer.concat(pieces);
}

const B64 = new Int16Array(256).fill(-1);
'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.split('').forEach((c, i) => (B64[c.charCodeAt(0)] = i));

/** Base64 with line breaks and blanks skipped; anything else outside the alphabet fails; data after padding ends it. */
function decodeBase64(body: Buffer): { bytes: Buffer } | { error: 'PARSE' } {
  for (const c of body) {
    if (c === 0x3d) break;
    if (B64[c] === -1 && c !== 0x0d && c !== 0x0a && c !== 0x20 && c !== 0x09) return { error: 'PARSE' };
  }
  return { bytes: Buffer.from(body.toString('latin1'), 'base64') };
}

const hex = (c: number | undefined): number => {
  if (c === undefined) return -1;
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1;
};

/** Quoted-printable (RFC 2045 section 6.7): soft breaks joined, blanks before a line end dropped, =XX decoded. */
function decodeQuotedPrintable(body: Buffer): { bytes: Buffer } | { error: 'PARSE' } {
  const out = Buffer.allocUnsafe(body.length);
  let n = 0;
  // Blanks at a line end are dropped, but not below this (a line's start, or a byte written as =XX).
  let floor = 0;
  for (let i = 0; i < body.length; i++) {
    const c = body[i] as number;
    if (c === 0x3d) {
      const hi = hex(body[i + 1]);
      const lo = hex(body[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out[n++] = hi * 16 + lo;
        floor = n;
        i += 2;
        continue;
      }
      // A soft line break: "=" then blanks up to the line end (or the end of the body).
      let j = i + 1;
      while (body[j] === 0x20 || body[j] === 0x09) j++;
      if (j >= body.length) break;
      if (body[j] === 0x0a || (body[j] === 0x0d && body[j + 1] === 0x0a)) {
        i = body[j] === 0x0d ? j + 1 : j;
        floor = n;
        continue;
      }
      return { error: 'PARSE' };
    }
    if (c === 0x0d && body[i + 1] === 0x0a) continue;
    if (c === 0x0a) {
      while (n > floor && (out[n - 1] === 0x20 || out[n - 1] === 0x09)) n--;
      if (body[i - 1] === 0x0d) out[n++] = 0x0d;
      out[n++] = 0x0a;
      floor = n;
      continue;
    }
    out[n++] = c;
  }
  while (n > floor && (out[n - 1] === 0x20 || out[n - 1] === 0x09)) n--;
  return { bytes: out.subarray(0, n) };
}
