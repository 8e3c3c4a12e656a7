// The MIME tree of a raw message as byte ranges: one pass over header lines and "--" lines, never copying the
// body. The rules for broken input are Dovecot 2.3's (lib-mail message-parser), so that clients see the parts
// Dovecot would show them:
// - a boundary line is "--" + an active boundary as a PREFIX of the line (the longest active one wins, the newest
//   first), and the line break before it belongs to the boundary, not to the part above;
// - a boundary of an enclosing multipart ends every part opened inside it (a missing closing boundary);
// - a multipart whose boundary never appears keeps its whole body as preamble and has no children;
// - a Content-Type counts only with MIME-Version or Content-Type present (always inside a multipart); without a
//   usable Content-Type a part is text/plain (message/rfc822 inside multipart/digest);
// - past MAX_NESTING levels a multipart or message/rfc822 is a leaf; once MAX_PARTS parts exist, no further
//   boundary is recognised and the rest of the message belongs to the part being read.
import { readHeaderFields } from './header-fields.js';
import { Rfc822Reader, parseParams } from './rfc822-tokens.js';

/** Parts nested deeper than this are not split further (Dovecot's MESSAGE_PARSER_DEFAULT_MAX_NESTED_MIME_PARTS). */
export const MAX_NESTING = 100;
/** At most this many parts per message (Dovecot's MESSAGE_PARSER_DEFAULT_MAX_TOTAL_MIME_PARTS). */
export const MAX_PARTS = 10_000;
/** Longer boundaries are cut to this length (RFC 2046 allows 70; Dovecot keeps 80). */
const BOUNDARY_MAX_LENGTH = 80;
/** A boundary line is compared over at most this many bytes when it has no line end (the boundary, "--" twice). */
const BOUNDARY_LINE_MAX_LENGTH = BOUNDARY_MAX_LENGTH + 4;

const LF = 0x0a;
const CR = 0x0d;
const DASH = 0x2d;
const DASH_LINE = Buffer.from('\n--', 'latin1');

/** What a part is, for structure: decides how its body is read and how BODYSTRUCTURE describes it. */
export type PartKind = 'multipart' | 'message' | 'text' | 'other';

export interface MimePart {
  kind: PartKind;
  /** multipart/digest: children without Content-Type are message/rfc822. */
  digest: boolean;
  /** Content-* fields count (MIME-Version or Content-Type present, or inside a multipart). */
  isMime: boolean;
  /** A multipart or message/rfc822 left unsplit because a limit was reached. */
  truncated: boolean;
  /** Offsets into the raw message: header [headerStart, bodyStart), body [bodyStart, bodyEnd). */
  headerStart: number;
  bodyStart: number;
  bodyEnd: number;
  /** Line feeds in the body (the line count of TEXT/* and MESSAGE/RFC822). */
  bodyLines: number;
  depth: number;
  parent: MimePart | null;
  /** A multipart's parts, or a message/rfc822's one message. */
  children: MimePart[];
}

interface Boundary {
  part: MimePart;
  text: Buffer;
  /** Its place in the stack of active boundaries (0 = outermost). */
  index: number;
}

interface HeaderResult {
  kind: PartKind;
  digest: boolean;
  isMime: boolean;
  boundary: Buffer | null;
}

/** The MIME tree of `raw`; linear in its size, bounded by MAX_NESTING and MAX_PARTS. */
export function parseMime(raw: Buffer): MimePart {
  return new MimeScanner(raw).run();
}

class MimeScanner {
  private pos = 0;
  /** Line feeds before `pos`. */
  private lines = 0;
  private total = 1;
  private readonly boundaries: Boundary[] = [];
  /**
   * The active boundaries by text and how many there are of each length: a line is looked up once per distinct
   * length instead of compared with every boundary, which keeps deep nesting linear.
   */
  private readonly byText = new Map<string, Boundary[]>();
  private readonly lengths = new Map<number, number>();
  private readonly root: MimePart;
  private current: MimePart;

  constructor(private readonly raw: Buffer) {
    this.root = newPart(0, null, false);
    this.current = this.root;
  }

  run(): MimePart {
    let mode: 'header' | 'body' = 'header';
    for (;;) {
      if (mode === 'header') mode = this.readHeader(this.current);
      else if (this.readBody()) mode = this.pendingMode;
      else break;
    }
    while (this.current.parent) this.finish(this.raw.length, this.lines);
    this.close(this.root, this.raw.length, this.lines);
    return this.root;
  }

  private pendingMode: 'header' | 'body' = 'body';
  /** Line feeds before each part's body. */
  private readonly bodyLineStart = new Map<MimePart, number>();

  /** Reads the header of `part` from `pos`, then decides how its body is read. */
  private readHeader(part: MimePart): 'header' | 'body' {
    const start = this.pos;
    const ended = this.scanHeaderLines(part);
    const info = headerInfo(this.raw, start, part.bodyStart, part);
    part.kind = info.kind;
    part.digest = info.digest;
    part.isMime = info.isMime;
    // The boundary is known only once the whole header is read: it becomes active at the empty line.
    if (ended === 'empty-line' && info.boundary && part.kind === 'multipart') {
      if (part.depth + 1 >= MAX_NESTING) {
        part.truncated = true;
        part.kind = 'other';
      } else {
        this.pushBoundary(part, info.boundary);
      }
    }
    if (typeof ended === 'object') {
      // The part's body is empty: the boundary closes it right away.
      this.atBoundary(ended, part.bodyStart);
      return this.pendingMode;
    }
    if (part.kind === 'message') {
      if (part.depth + 1 < MAX_NESTING && this.total < MAX_PARTS) {
        this.total++;
        const child = newPart(this.pos, part, false);
        part.children.push(child);
        this.current = child;
        return 'header';
      }
      part.truncated = true;
      part.kind = 'other';
    }
    this.firstLine = true;
    return 'body';
  }

  /** Moves past the header lines of `part`, setting where its body starts; says what ended the header. */
  private scanHeaderLines(part: MimePart): 'empty-line' | 'end' | Boundary {
    const raw = this.raw;
    let prevNewline = 0;
    for (;;) {
      if (this.pos >= raw.length) {
        part.bodyStart = raw.length;
        this.bodyLineStart.set(part, this.lines);
        return 'end';
      }
      const c = raw[this.pos];
      if (c === LF || (c === CR && raw[this.pos + 1] === LF)) {
        this.pos += c === LF ? 1 : 2;
        this.lines++;
        part.bodyStart = this.pos;
        this.bodyLineStart.set(part, this.lines);
        return 'empty-line';
      }
      const found = this.boundaryAt(this.pos);
      if (found) {
        // The line break before a boundary belongs to the boundary: the header ends before it.
        part.bodyStart = this.pos - prevNewline;
        this.bodyLineStart.set(part, prevNewline > 0 ? this.lines - 1 : this.lines);
        return found;
      }
      const lf = raw.indexOf(LF, this.pos);
      if (lf < 0) {
        this.pos = raw.length;
        prevNewline = 0;
      } else {
        prevNewline = lf > this.pos && raw[lf - 1] === CR ? 2 : 1;
        this.pos = lf + 1;
        this.lines++;
      }
    }
  }

  private firstLine = true;

  /** Reads body lines of the current part up to a boundary (then returns true) or the end (false). */
  private readBody(): boolean {
    const raw = this.raw;
    for (;;) {
      if (this.boundaries.length === 0 || this.pos >= raw.length) {
        this.lines += countLf(raw, this.pos, raw.length);
        this.pos = raw.length;
        return false;
      }
      let lineStart: number;
      if (this.firstLine) {
        lineStart = this.pos;
      } else {
        const hit = raw.indexOf(DASH_LINE, this.pos - 1);
        if (hit < 0) {
          this.lines += countLf(raw, this.pos, raw.length);
          this.pos = raw.length;
          return false;
        }
        lineStart = hit + 1;
      }
      this.lines += countLf(raw, this.pos, lineStart);
      this.pos = lineStart;
      const found = this.boundaryAt(lineStart);
      if (found) {
        let end = lineStart;
        if (!this.firstLine) end -= raw[lineStart - 2] === CR && lineStart >= 2 ? 2 : 1;
        this.atBoundary(found, end);
        return true;
      }
      this.firstLine = false;
      // Step past this "--" line's first bytes so the next search starts after it.
      this.pos = lineStart + 1;
      if (raw[lineStart] === LF) this.lines++;
    }
  }

  /** The active boundary a line starting at `at` opens, if any (none once MAX_PARTS parts exist). */
  private boundaryAt(at: number): Boundary | null {
    const raw = this.raw;
    if (this.boundaries.length === 0 || raw[at] !== DASH || raw[at + 1] !== DASH) return null;
    if (this.total >= MAX_PARTS) {
      this.current.truncated = true;
      return null;
    }
    const from = at + 2;
    const lf = raw.indexOf(LF, from);
    let size: number;
    let trailingDashes = false;
    if (lf >= 0) {
      size = lf - from;
      if (size > 0 && raw[from + size - 1] === CR) size--;
      if (size > 2 && raw[from + size - 1] === DASH && raw[from + size - 2] === DASH) trailingDashes = true;
    } else {
      size = Math.min(raw.length - from, BOUNDARY_LINE_MAX_LENGTH);
    }
    const matches: Boundary[] = [];
    for (const len of this.lengths.keys()) {
      if (len <= size) matches.push(...(this.byText.get(raw.toString('latin1', from, from + len)) ?? []));
    }
    // Newest first, the longest prefix wins, an exact match ends the search (Dovecot's order of comparison).
    matches.sort((a, b) => b.index - a.index);
    let best: Boundary | null = null;
    for (const b of matches) {
      const len = b.text.length;
      if (best && best.text.length >= len) continue;
      best = b;
      if (len === size || (len === size - 2 && trailingDashes)) break;
    }
    return best;
  }

  private pushBoundary(part: MimePart, text: Buffer): void {
    const boundary = { part, text, index: this.boundaries.length };
    this.boundaries.push(boundary);
    const key = text.toString('latin1');
    this.byText.set(key, [...(this.byText.get(key) ?? []), boundary]);
    this.lengths.set(text.length, (this.lengths.get(text.length) ?? 0) + 1);
  }

  /** Drops the boundaries from stack position `keep` on. */
  private dropBoundaries(keep: number): void {
    while (this.boundaries.length > keep) {
      const b = this.boundaries.pop() as Boundary;
      const key = b.text.toString('latin1');
      const same = (this.byText.get(key) ?? []).filter((x) => x !== b);
      if (same.length > 0) this.byText.set(key, same);
      else this.byText.delete(key);
      const count = (this.lengths.get(b.text.length) ?? 1) - 1;
      if (count > 0) this.lengths.set(b.text.length, count);
      else this.lengths.delete(b.text.length);
    }
  }

  /**
   * A boundary line starts at `pos`: parts inside the boundary's multipart end at `end`, the line is skipped, and
   * either a new part begins or (a closing boundary) the multipart's epilogue is read.
   */
  private atBoundary(boundary: Boundary, end: number): void {
    const raw = this.raw;
    const linesAtEnd = end < this.pos ? this.lines - 1 : this.lines;
    while (this.current !== boundary.part) this.finish(end, linesAtEnd);
    const len = boundary.text.length;
    const from = this.pos + 2 + len;
    const closing = raw[from] === DASH && raw[from + 1] === DASH && from + 2 <= raw.length;
    this.dropBoundaries(closing ? boundary.index : boundary.index + 1);
    const lf = raw.indexOf(LF, this.pos);
    if (lf < 0) this.pos = raw.length;
    else {
      this.pos = lf + 1;
      this.lines++;
    }
    if (!closing) {
      this.total++;
      const child = newPart(this.pos, boundary.part, true);
      boundary.part.children.push(child);
      this.current = child;
      this.pendingMode = 'header';
    } else {
      this.firstLine = true;
      this.pendingMode = 'body';
    }
  }

  /** Ends the current part at `end` and makes its parent current. */
  private finish(end: number, linesAtEnd: number): void {
    this.close(this.current, end, linesAtEnd);
    this.current = this.current.parent as MimePart;
  }

  private close(part: MimePart, end: number, linesAtEnd: number): void {
    part.bodyEnd = end;
    part.bodyLines = linesAtEnd - (this.bodyLineStart.get(part) ?? linesAtEnd);
  }
}

function newPart(at: number, parent: MimePart | null, inMultipart: boolean): MimePart {
  return {
    kind: 'text',
    digest: false,
    isMime: inMultipart,
    truncated: false,
    headerStart: at,
    bodyStart: at,
    bodyEnd: at,
    bodyLines: 0,
    depth: parent ? parent.depth + 1 : 0,
    parent,
    children: [],
  };
}

function countLf(raw: Buffer, from: number, to: number): number {
  let n = 0;
  for (let i = raw.indexOf(LF, from); i >= 0 && i < to; i = raw.indexOf(LF, i + 1)) n++;
  return n;
}

/** What the structure needs from a header: kind, digest, MIME-ness and the multipart boundary. */
function headerInfo(raw: Buffer, start: number, end: number, part: MimePart): HeaderResult {
  let isMime = part.isMime;
  let contentType: string | null = null;
  for (const field of readHeaderFields(raw, start, end)) {
    const name = field.name.toLowerCase();
    if (name === 'mime-version') isMime = true;
    else if (name === 'content-type') {
      isMime = true;
      contentType ??= field.value;
    }
  }
  let kind: PartKind = 'other';
  let digest = false;
  let boundary: Buffer | null = null;
  if (contentType !== null && isMime) {
    const reader = new Rfc822Reader(contentType);
    const out: string[] = [];
    const ret = reader.contentType(out);
    const type = out.join('').toLowerCase();
    if (type === 'message/rfc822') kind = 'message';
    else if (type.startsWith('text') && (type.length === 4 || type[4] === '/')) kind = 'text';
    else if (type.startsWith('multipart/')) {
      kind = 'multipart';
      digest = type === 'multipart/digest';
      if (ret >= 0) boundary = findBoundaryParam(reader);
    }
  } else {
    kind = part.parent?.digest ? 'message' : 'text';
  }
  return { kind, digest, isMime, boundary };
}

function findBoundaryParam(reader: Rfc822Reader): Buffer | null {
  for (const [key, value] of parseParams(reader)) {
    if (key.toLowerCase() === 'boundary') return Buffer.from(value.slice(0, BOUNDARY_MAX_LENGTH), 'latin1');
  }
  return null;
}
