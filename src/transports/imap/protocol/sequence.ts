/**
 * Sequence sets (`1:*`, `3,5:7`, `*:4`, `$`): parsed into the ranges the client wrote, resolved against the
 * mailbox into sorted, merged ranges. Never expanded into numbers: `1:4294967295` is one range, so the work and
 * memory of a set follow the length of its text (bounded by the line length), not the numbers in it.
 */
import { atomText, type ParseError, type Token } from './token.js';

/** `*` is the largest number in use (the last message, or the highest UID). */
export type SeqNumber = number | '*';

export interface SequenceSet {
  /** `$`: the result saved by a previous SEARCH RETURN (SAVE). */
  saved: boolean;
  ranges: Array<{ from: SeqNumber; to: SeqNumber }>;
}

/** Sorted, disjoint, non-adjacent inclusive ranges. */
export type Ranges = Array<[number, number]>;

const MAX_NZ = 0xffff_ffff;

export function parseSequenceSet(t: Token | undefined): SequenceSet | ParseError {
  const text = atomText(t);
  if (text === null) return { bad: 'Invalid sequence set.' };
  if (text === '$') return { saved: true, ranges: [] };
  const ranges: SequenceSet['ranges'] = [];
  for (const part of text.split(',')) {
    const colon = part.indexOf(':');
    const from = seqNumber(colon < 0 ? part : part.slice(0, colon));
    const to = colon < 0 ? from : seqNumber(part.slice(colon + 1));
    if (from === null || to === null) return { bad: 'Invalid sequence set.' };
    ranges.push({ from, to });
  }
  return { saved: false, ranges };
}

function seqNumber(s: string): SeqNumber | null {
  if (s === '*') return '*';
  if (s.length === 0 || s.length > 10 || s[0] === '0') return null;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return null;
  }
  const n = Number(s);
  return n <= MAX_NZ ? n : null;
}

/**
 * The set as ranges of the mailbox whose largest number is `max` (0 when empty). For message numbers (`uid`
 * false) a number past the last message is an error, as RFC 9051 says, and in an empty mailbox every set is one,
 * `1:*` too (Dovecot 2.3's answer: there is no message for `*` to name); for UIDs a number not there is simply not
 * there. `$` must be replaced by the caller first (`saved` ranges).
 */
export function resolveSequenceSet(set: SequenceSet, max: number, options: { uid: boolean; saved?: Ranges }): Ranges | ParseError {
  if (set.saved) return options.saved ?? [];
  if (!options.uid && max === 0) return { bad: 'Invalid messageset.' };
  const out: Ranges = [];
  for (const r of set.ranges) {
    const a = r.from === '*' ? max : r.from;
    const b = r.to === '*' ? max : r.to;
    let lo = Math.min(a, b);
    const hi = Math.min(Math.max(a, b), max);
    if (!options.uid && Math.max(a, b) > max) return { bad: 'Invalid messageset.' };
    if (lo === 0) lo = 1;
    if (lo <= hi) out.push([lo, hi]);
  }
  return normalizeRanges(out);
}

/** Sorts and merges ranges (overlapping or adjacent). */
export function normalizeRanges(ranges: Ranges): Ranges {
  ranges.sort((x, y) => x[0] - y[0]);
  const out: Ranges = [];
  for (const [lo, hi] of ranges) {
    const last = out[out.length - 1];
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else out.push([lo, hi]);
  }
  return out;
}

/** Whether `n` is in the resolved ranges (binary search). */
export function inRanges(ranges: Ranges, n: number): boolean {
  let lo = 0;
  let hi = ranges.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const r = ranges[mid]!;
    if (n < r[0]) hi = mid - 1;
    else if (n > r[1]) lo = mid + 1;
    else return true;
  }
  return false;
}

/** How many numbers the resolved ranges hold. */
export function countRanges(ranges: Ranges): number {
  let n = 0;
  for (const [lo, hi] of ranges) n += hi - lo + 1;
  return n;
}

/** `1:3,7` for responses (ESEARCH ALL, COPYUID, VANISHED) and for tests. */
export function formatRanges(ranges: Ranges): string {
  return ranges.map(([lo, hi]) => (lo === hi ? String(lo) : `${lo}:${hi}`)).join(',');
}

/** A parsed set written back as the client could have written it. */
export function formatSequenceSet(set: SequenceSet): string {
  if (set.saved) return '$';
  return set.ranges.map((r) => (r.from === r.to ? String(r.from) : `${r.from}:${r.to}`)).join(',');
}
