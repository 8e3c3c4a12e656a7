/**
 * The byte-level pieces of the command reader: character classes, the scanners of one token in a complete line
 * segment, and the gathering of bytes that arrive in pieces. Kept apart so the reader itself is only the state
 * machine (which mode, which bound, which event).
 */
import type { Token } from './token.js';

export const LF = 0x0a;
export const CR = 0x0d;
export const SP = 0x20;
export const EMPTY = Buffer.alloc(0);

/** Bytes allowed in an atom as this reader reads it: printable ASCII but list and string delimiters and `{`. */
export const ATOM = new Uint8Array(256);
/** Tag characters: ASTRING-CHAR but `+` (RFC 9051 `tag`). */
export const TAG = new Uint8Array(256);
for (let c = 0x21; c < 0x7f; c++) {
  ATOM[c] = '(){"'.includes(String.fromCharCode(c)) ? 0 : 1;
  TAG[c] = '(){"%*\\+'.includes(String.fromCharCode(c)) ? 0 : 1;
}


/** Pieces below this size are copied into a staging buffer rather than kept as views. */
const SMALL_PIECE = 4096;
const STAGE_SIZE = 16 * 1024;

/**
 * Bytes arriving in pieces, joined once at the end. Large pieces are kept as views (copied once, by the join);
 * small ones are copied into a staging buffer first, so a client dribbling one byte per packet costs a byte per
 * byte, not a Buffer object per byte.
 */
export class Gather {
  length = 0;
  private parts: Buffer[] = [];
  private stage: Buffer | null = null;
  private staged = 0;

  add(piece: Buffer): void {
    if (piece.length === 0) return;
    this.length += piece.length;
    if (piece.length >= SMALL_PIECE) {
      this.unstage();
      this.parts.push(piece);
      return;
    }
    if (this.stage && this.staged + piece.length > this.stage.length) this.unstage();
    this.stage ??= Buffer.allocUnsafe(STAGE_SIZE);
    piece.copy(this.stage, this.staged);
    this.staged += piece.length;
  }

  /** Everything gathered followed by `last`, as one Buffer (a view when there is one piece); then empty. */
  take(last: Buffer): Buffer {
    this.unstage();
    if (last.length > 0) this.parts.push(last);
    const total = this.length + last.length;
    const out = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, total);
    this.parts = [];
    this.length = 0;
    return out;
  }

  private unstage(): void {
    if (this.stage && this.staged > 0) this.parts.push(this.stage.subarray(0, this.staged));
    this.stage = null;
    this.staged = 0;
  }
}

/** Where a segment's content ends: before its LF, and before a CR right before it (bare LF is tolerated). */
export function lineEnd(seg: Buffer): number {
  let end = seg.length;
  if (end > 0 && seg[end - 1] === LF) end--;
  if (end > 0 && seg[end - 1] === CR) end--;
  return end;
}

/** The tag a line starts with, if it starts with one followed by a space. */
export function tagOf(piece: Buffer): string | null {
  let i = 0;
  while (i < piece.length && TAG[piece[i]!]) i++;
  return i > 0 && piece[i] === SP ? piece.toString('latin1', 0, i) : null;
}

/**
 * The size of a `{n+}` (or `~{n+}`) ending a skipped line, or null. More digits than a size can have still count
 * (as too large), so a padded size cannot smuggle its bytes past the skip.
 */
export function nonSyncLiteralAtEnd(tail: string): number | null {
  let e = tail.length;
  if (e > 0 && tail.charCodeAt(e - 1) === CR) e--;
  if (e < 4 || tail[e - 1] !== '}' || tail[e - 2] !== '+') return null;
  let s = e - 2;
  while (s > 0 && tail.charCodeAt(s - 1) >= 0x30 && tail.charCodeAt(s - 1) <= 0x39) s--;
  if (s === e - 2) return null;
  if (s === 0) return Number.MAX_SAFE_INTEGER;
  if (tail[s - 1] !== '{') return null;
  return e - 2 - s > 15 ? Number.MAX_SAFE_INTEGER : Number(tail.slice(s, e - 2));
}

export type Scan = { token: Token; at: number } | { error: string };

export function atom(seg: Buffer, i: number, end: number): Scan {
  let j = i;
  while (j < end && ATOM[seg[j]!]) j++;
  if (j === i || (j < end && seg[j] === 0x7b)) return { error: 'Invalid characters in atom.' };
  const value = seg.toString('latin1', i, j);
  if (j - i === 3 && value.toUpperCase() === 'NIL') return { token: { type: 'nil' }, at: j };
  const n = canonicalNumber(seg, i, j);
  return { token: n === null ? { type: 'atom', value } : { type: 'number', value: n }, at: j };
}

/** The value of digits without a leading zero that a JavaScript number holds exactly, or null. */
function canonicalNumber(seg: Buffer, i: number, j: number): number | null {
  if (j - i > 16 || (seg[i] === 0x30 && j - i > 1)) return null;
  let v = 0;
  for (let k = i; k < j; k++) {
    const d = seg[k]! - 0x30;
    if (d < 0 || d > 9) return null;
    v = v * 10 + d;
  }
  return Number.isSafeInteger(v) ? v : null;
}

/** A quoted string: `\"` and `\\` are the only escapes; NUL, CR and LF cannot appear. */
export function quoted(seg: Buffer, i: number, end: number): Scan {
  let j = i + 1;
  let escapes = 0;
  for (; j < end; j++) {
    const c = seg[j]!;
    if (c === 0x22) break;
    if (c === 0 || c === CR) return { error: 'Invalid characters in quoted string.' };
    if (c === 0x5c) {
      const n = seg[j + 1];
      if (n !== 0x22 && n !== 0x5c) return { error: 'Invalid escape in quoted string.' };
      escapes++;
      j++;
    }
  }
  if (j >= end) return { error: 'Missing \'"\'.' };
  if (escapes === 0) return { token: { type: 'string', value: seg.subarray(i + 1, j) }, at: j + 1 };
  const out = Buffer.allocUnsafe(j - i - 1 - escapes);
  let o = 0;
  for (let k = i + 1; k < j; k++) {
    if (seg[k] === 0x5c) k++;
    out[o++] = seg[k]!;
  }
  return { token: { type: 'string', value: out }, at: j + 1 };
}
