/**
 * The values the command reader yields and the small accessors the argument parsers share.
 *
 * Quoted strings and literals keep their bytes (a search string in ISO-8859-1, a message being appended): what they
 * mean depends on the command (a CHARSET, UTF8=ACCEPT), so decoding belongs to the argument parsers, not the reader.
 * A `number` is an atom of digits in canonical form that fits a JavaScript number exactly; anything else made of
 * digits ("007", a 20-digit mod-sequence) stays an atom, so no text is ever changed by being read.
 */

export type Token =
  | { type: 'atom'; value: string }
  | { type: 'number'; value: number }
  | { type: 'string'; value: Buffer }
  | { type: 'literal'; value: Buffer; binary: boolean }
  | { type: 'list'; items: Token[] }
  | { type: 'nil' };

/** One complete command: `name` is upper-case, and `UID FETCH` (and the other UID forms) is one name. */
export interface Command {
  tag: string;
  name: string;
  args: Token[];
}

/** What a typed parser answers for input it refuses; `no` marks the few refusals RFC 9051 says are NO, not BAD. */
export interface ParseError {
  bad: string;
  no?: true;
  /** A response code for the tagged reply, such as `BADCHARSET (US-ASCII UTF-8)` or `TOOBIG`. */
  code?: string;
}

export function isParseError(v: unknown): v is ParseError {
  return typeof v === 'object' && v !== null && typeof (v as { bad?: unknown }).bad === 'string';
}

export function bad(text: string): ParseError {
  return { bad: text };
}

/** An atom's text, a number as digits, or null (strings are not atoms: `FLAGS` quoted is not the FLAGS item). */
export function atomText(t: Token | undefined): string | null {
  if (t?.type === 'atom') return t.value;
  if (t?.type === 'number') return String(t.value);
  return null;
}

/**
 * The bytes of an astring (atom, number, quoted string or literal). NIL counts as the atom "NIL": a mailbox or a
 * search string may be named so, and the grammar reads it as an atom there.
 */
export function astringBytes(t: Token | undefined): Buffer | null {
  if (!t) return null;
  switch (t.type) {
    case 'atom':
      return Buffer.from(t.value, 'latin1');
    case 'number':
      return Buffer.from(String(t.value), 'latin1');
    case 'string':
    case 'literal':
      return t.value;
    case 'nil':
      return Buffer.from('NIL', 'latin1');
    default:
      return null;
  }
}

/** An astring as text (UTF-8 for strings and literals; atoms are ASCII). */
export function astringText(t: Token | undefined): string | null {
  const b = astringBytes(t);
  return b === null ? null : b.toString('utf8');
}

/** A non-negative integer up to `max` (default 2^32 - 1, the `number` of RFC 9051), from a number token. */
export function numberOf(t: Token | undefined, max = 0xffff_ffff): number | null {
  if (t?.type !== 'number' || t.value > max) return null;
  return t.value;
}

const DIGITS = /^\d{1,20}$/;
/** A 63-bit number (mod-sequences: `number64`), from a number token or a long digit atom. */
export function number64Of(t: Token | undefined): bigint | null {
  const s = atomText(t);
  if (s === null || !DIGITS.test(s)) return null;
  const v = BigInt(s);
  return v <= 0x7fff_ffff_ffff_ffffn ? v : null;
}
