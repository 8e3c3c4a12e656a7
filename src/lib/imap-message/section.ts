// The bytes of a FETCH section (RFC 3501 section 6.4.5): slices of the stored message, never converted. Part
// numbers follow Dovecot's walk: a multipart's n-th child; a non-multipart part is its own part 1; a number after a
// message/rfc822 part steps into the message it holds. A part that does not exist is the empty string.
import { readHeaderFields } from './header-fields.js';
import type { MimePart } from './mime-parser.js';
import type { SectionSpec } from './types.js';

const EMPTY = Buffer.alloc(0);

/** The part a path names, or null. */
export function findPart(root: MimePart, path: readonly number[]): MimePart | null {
  let part: MimePart | null = root;
  for (let i = 0; i < path.length && part; i++) {
    const n = path[i] as number;
    const more = i + 1 < path.length;
    if (part.kind === 'multipart') part = part.children[n - 1] ?? null;
    else if (n !== 1 || (more && part.kind !== 'message')) part = null;
    if (part && part.kind === 'message' && more) part = part.children[0] ?? null;
  }
  return part;
}

/** The bytes of `spec` in the message `raw` whose tree is `root` (before any partial range). */
export function sectionBody(raw: Buffer, root: MimePart, spec: SectionSpec): Buffer {
  let part = findPart(root, spec.part);
  if (!part) return EMPTY;
  const text = spec.text;
  if (spec.part.length > 0 && text !== undefined && text !== 'MIME') {
    // HEADER and TEXT of a numbered part exist only for a message/rfc822 part: they are its message's.
    if (part.kind !== 'message') return EMPTY;
    part = part.children[0] as MimePart;
  }
  switch (text) {
    case undefined:
      return spec.part.length === 0 ? raw : raw.subarray(part.bodyStart, part.bodyEnd);
    case 'TEXT':
      return raw.subarray(part.bodyStart, part.bodyEnd);
    case 'HEADER':
    case 'MIME':
      // Dovecot answers a message/rfc822 part's MIME with that part's own header, as for any part.
      return raw.subarray(part.headerStart, part.bodyStart);
    case 'HEADER.FIELDS':
    case 'HEADER.FIELDS.NOT':
      return headerFields(raw, part, spec.fields ?? [], text === 'HEADER.FIELDS.NOT', spec.part.length === 0);
  }
}

const CRLF = Buffer.from('\r\n');

/**
 * The named (or all but the named) fields of a part's header, each with its folded lines, then the header's empty
 * line. As Dovecot: the message's own HEADER.FIELDS always ends with an empty line; otherwise it is there only if
 * the header had one (a message that is all header ends with its last field).
 */
function headerFields(raw: Buffer, part: MimePart, names: readonly string[], not: boolean, root: boolean): Buffer {
  const wanted = new Set(names.map((n) => n.toLowerCase()));
  const pieces: Buffer[] = [];
  let end = part.headerStart;
  for (const field of readHeaderFields(raw, part.headerStart, part.bodyStart)) {
    if (wanted.has(field.name.toLowerCase()) !== not) pieces.push(raw.subarray(field.start, field.end));
    end = field.end;
  }
  pieces.push(root && !not ? CRLF : raw.subarray(end, part.bodyStart));
  return Buffer.concat(pieces);
}

/**
 * Section bytes as a literal may carry them: a NUL (which IMAP literals must not hold) becomes 0x80, as Dovecot
 * sends it. Copies only when there is a NUL; sizes stay the same.
 */
export function literalSafe(body: Buffer): Buffer {
  if (body.indexOf(0) < 0) return body;
  const copy = Buffer.from(body);
  for (let i = copy.indexOf(0); i >= 0; i = copy.indexOf(0, i + 1)) copy[i] = 0x80;
  return copy;
}

/** A `<origin.count>` range of section bytes (RFC 3501: an origin past the end gives the empty string). */
export function partialRange(body: Buffer, partial: SectionSpec['partial']): Buffer {
  if (!partial) return body;
  if (partial.origin >= body.length) return EMPTY;
  return body.subarray(partial.origin, Math.min(body.length, partial.origin + partial.count));
}

/** BODY[] of the whole message, cut to its partial range, NULs made 0x80: a mail client's pull, with no MIME parse. */
export function fetchWhole(raw: Buffer, partial?: SectionSpec['partial']): Buffer {
  return literalSafe(partialRange(raw, partial));
}

/** The bytes FETCH BODY[...] answers for `spec`: the section, cut to its partial range, NULs made 0x80. */
export function fetchSection(raw: Buffer, root: MimePart, spec: SectionSpec): Buffer {
  return literalSafe(partialRange(sectionBody(raw, root, spec), spec.partial));
}
