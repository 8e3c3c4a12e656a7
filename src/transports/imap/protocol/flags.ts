/**
 * Flags in commands (STORE, APPEND): the five system flags in their canonical spelling, keywords as atoms.
 * `\Recent` is the server's to set (and gone from IMAP4rev2); any other backslash flag is refused, as Dovecot does,
 * so a typo never becomes a keyword nobody can clear.
 */
import type { ParseError, Token } from './token.js';

export const SYSTEM_FLAGS = ['\\Answered', '\\Flagged', '\\Deleted', '\\Seen', '\\Draft'] as const;
const BY_UPPER = new Map<string, string>(SYSTEM_FLAGS.map((f) => [f.toUpperCase(), f]));

/** Keyword characters: ATOM-CHAR (no `(){ %*"\]`, no controls, no 8-bit). */
const KEYWORD = /^[!#$&'+-[^-z|}~]+$/;

export function parseFlag(t: Token | undefined): string | ParseError {
  // NIL is an atom where a flag goes: the keyword NIL, as Dovecot takes it.
  if (t?.type === 'nil') return 'NIL';
  if (t?.type !== 'atom') return { bad: 'Invalid flag.' };
  const v = t.value;
  if (v.startsWith('\\')) {
    const sys = BY_UPPER.get(v.toUpperCase());
    return sys ?? { bad: `Invalid system flag ${v.toUpperCase() === '\\RECENT' ? '\\Recent' : v}.` };
  }
  return KEYWORD.test(v) ? v : { bad: 'Invalid characters in keyword.' };
}

/** A parenthesised flag list (duplicates removed, the first spelling kept). */
export function parseFlagList(t: Token | undefined): string[] | ParseError {
  if (t?.type !== 'list') return { bad: 'Flags must be a parenthesised list.' };
  return parseFlags(t.items);
}

export function parseFlags(items: readonly Token[]): string[] | ParseError {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const item of items) {
    const f = parseFlag(item);
    if (typeof f !== 'string') return f;
    const key = f.toUpperCase();
    if (!seen.has(key)) {
      seen.add(key);
      out.push(f);
    }
  }
  return out;
}
