/**
 * `JSON.stringify` of a string, faster for the strings an API answer is mostly made of.
 *
 * V8's `JSON.stringify` of a short string is mostly call overhead and its result builder (the more so for a
 * two-byte string, as soon as one character is beyond Latin-1; bench/HISTORY.md). A string with no character that
 * JSON must escape (`"`, `\`, a control character) and no surrogate (a lone one is escaped) is written
 * as it is between quotes, which is exactly what `JSON.stringify` writes for it, at a fraction of the cost
 * even with the regular-expression check. Anything else goes to `JSON.stringify`. U+2028/U+2029 need no escape in
 * JSON; they go to `JSON.stringify` too, which leaves them as they are.
 */
// Control characters are exactly what this must find (JSON escapes U+0000–U+001F).
// eslint-disable-next-line no-control-regex
const NEEDS_STRINGIFY = /["\\\u0000-\u001f\u2028\u2029\ud800-\udfff]/;

export function jsonString(value: string): string {
  return NEEDS_STRINGIFY.test(value) ? JSON.stringify(value) : `"${value}"`;
}
