/**
 * SEARCH over a selected folder: keys on flags, numbers, UIDs and mod-sequences are answered from the session's
 * index; sizes and internal dates from the stored rows; text keys (TEXT, BODY, SUBJECT, FROM, TO, CC) from the
 * full-text index before the walk (`textKeys`, one UID set each); HEADER, BCC and sent dates from the stored header
 * fields, read in batches so memory follows the batch, not the folder. The raw bytes are never read.
 */
import type { FetchEntry, FolderTextField, HeaderField, IndexEntry } from '../../modules/imap-access/imap-access.service.js';
import { inRanges, resolveSequenceSet, type Ranges, type SearchKey, type SequenceSet, type TextField } from './protocol/index.js';

/** Where the full-text index looks for each text key (BCC is not indexed: it is read from the header fields). */
const INDEXED: Partial<Record<TextField, FolderTextField>> = { TEXT: 'text', BODY: 'body', SUBJECT: 'subject', FROM: 'from', TO: 'to', CC: 'cc' };

export type SearchNeed = 'index' | 'row' | 'headers';

/** What a key needs beyond the index and the text keys' UID sets: the stored row (size, date), or its header fields too. */
export function searchNeeds(key: SearchKey): SearchNeed {
  switch (key.type) {
    case 'text':
      return INDEXED[key.field] ? 'index' : 'headers';
    case 'header':
      return 'headers';
    case 'size':
    case 'age':
      return 'row';
    case 'date':
      return key.of === 'sent' ? 'headers' : 'row';
    case 'not':
      return searchNeeds(key.key);
    case 'or':
      return max(searchNeeds(key.left), searchNeeds(key.right));
    case 'and':
      return key.keys.map(searchNeeds).reduce(max, 'index');
    default:
      return 'index';
  }
}
const ORDER = { index: 0, row: 1, headers: 2 } as const;

/** Whether a MODSEQ key is anywhere in the search: its answer then carries a MODSEQ (RFC 7162 3.1.5). */
export function hasModseqKey(key: SearchKey): boolean {
  switch (key.type) {
    case 'modseq':
      return true;
    case 'not':
      return hasModseqKey(key.key);
    case 'or':
      return hasModseqKey(key.left) || hasModseqKey(key.right);
    case 'and':
      return key.keys.some(hasModseqKey);
    default:
      return false;
  }
}
const max = (a: SearchNeed, b: SearchNeed) => (ORDER[a] >= ORDER[b] ? a : b);

/** A text key the index answers. */
export interface IndexedText {
  field: FolderTextField;
  value: string;
}

/** The key of a text key's answer in TextAnswers. */
export const textKey = (field: FolderTextField, value: string): string => `${field}\0${value}`;

/** The distinct text keys of the tree that the full-text index answers (each is one index statement). */
export function textKeys(key: SearchKey, out = new Map<string, IndexedText>()): Map<string, IndexedText> {
  if (key.type === 'text') {
    const field = INDEXED[key.field];
    if (field) out.set(textKey(field, key.value), { field, value: key.value });
  } else if (key.type === 'not') textKeys(key.key, out);
  else if (key.type === 'or') {
    textKeys(key.left, out);
    textKeys(key.right, out);
  } else if (key.type === 'and') for (const k of key.keys) textKeys(k, out);
  return out;
}

/** The index's answers: per text key (`textKey`), the matching UIDs, or null for every message. */
export type TextAnswers = Map<string, ReadonlySet<number> | null>;

export interface SearchContext {
  /** The message number of the entry (1-based), and the folder's size and highest UID. */
  seq: number;
  count: number;
  maxUid: number;
  now: number;
  /** SEARCHRES: the UIDs of the saved result (`$`). */
  saved: Ranges;
  text: TextAnswers;
}

export type SearchEntry = IndexEntry & Partial<FetchEntry> & { headers?: HeaderField[] };

/** Whether a message matches `key`; `entry` carries the row (and header fields) when `searchNeeds` asked for them. */
export function matches(key: SearchKey, entry: SearchEntry, ctx: SearchContext): boolean {
  switch (key.type) {
    case 'all': return true;
    case 'flag': return hasFlag(entry, key.flag) === key.set;
    case 'new': case 'recent': return false;
    case 'old': return true;
    case 'seq': return key.set.saved ? inRanges(ctx.saved, entry.uid) : inSet(key.set, ctx.count, ctx.seq);
    case 'uid': return key.set.saved ? inRanges(ctx.saved, entry.uid) : inSet(key.set, ctx.maxUid, entry.uid);
    case 'modseq': return entry.modseq >= Number(key.modseq);
    case 'size': return key.op === 'larger' ? (entry.size ?? 0) > key.size : (entry.size ?? 0) < key.size;
    case 'age': {
      const age = (ctx.now - (entry.created_at ?? 0)) / 1000;
      return key.op === 'older' ? age >= key.seconds : age <= key.seconds;
    }
    case 'date': return dateMatches(key, entry);
    case 'text': return textMatches(key, entry, ctx.text);
    case 'header': return headerContains(entry.headers, key.field, key.value);
    case 'not': return !matches(key.key, entry, ctx);
    case 'or': return matches(key.left, entry, ctx) || matches(key.right, entry, ctx);
    case 'and': return key.keys.every((k) => matches(k, entry, ctx));
  }
}

/** Resolved as UIDs are (a number past the end is simply not there): a SEARCH key is never an error for that. */
function inSet(set: SequenceSet, max: number, n: number): boolean {
  const ranges = resolveSequenceSet(set, max, { uid: true });
  return !('bad' in ranges) && inRanges(ranges, n);
}

function hasFlag(e: IndexEntry, flag: string): boolean {
  switch (flag.toLowerCase()) {
    case '\\seen': return e.read;
    case '\\answered': return e.answered;
    case '\\flagged': return e.flagged;
    case '\\deleted': return e.deleted;
    case '\\draft': return e.draft === true;
    case '\\recent': return false;
    default: return e.labels.includes(flag.toLowerCase());
  }
}

/**
 * Internal dates as UTC days (RFC 9051 leaves the zone to the server; UTC is what the stored times are in); sent
 * dates as the day written in the Date field, "disregarding time and timezone" (RFC 9051), as Dovecot reads it.
 */
function dateMatches(key: Extract<SearchKey, { type: 'date' }>, entry: SearchEntry): boolean {
  let its: number | null;
  if (key.of === 'sent') its = sentDay(headerValues(entry.headers, 'date')[0]);
  else if (entry.created_at === undefined) its = null;
  else {
    const d = new Date(entry.created_at);
    its = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  }
  if (its === null) return false;
  const day = Date.UTC(key.date.year, key.date.month - 1, key.date.day);
  return key.op === 'before' ? its < day : key.op === 'on' ? its === day : its >= day;
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

/** The day of a Date field (`Mon, 1 Dec 2025 23:30 -0800` is 1 Dec 2025) as a UTC midnight; null when it has none. */
export function sentDay(value: string | undefined): number | null {
  const m = value === undefined ? null : /(\d{1,2})\s+([a-z]{3})[a-z]*\.?\s+(\d{2,4})\b/i.exec(value.slice(0, 200));
  if (!m) return null;
  const month = MONTHS.indexOf(m[2]!.toLowerCase());
  let year = Number(m[3]);
  // RFC 5322's obsolete years: two digits below 50 are 20xx, others (and three digits) count from 1900.
  if (m[3]!.length === 2) year += year < 50 ? 2000 : 1900;
  else if (m[3]!.length === 3) year += 1900;
  const day = Number(m[1]);
  if (month < 0 || day < 1 || day > 31) return null;
  return Date.UTC(year, month, day);
}

function textMatches(key: Extract<SearchKey, { type: 'text' }>, entry: SearchEntry, answers: TextAnswers): boolean {
  const field = INDEXED[key.field];
  if (!field) return headerContains(entry.headers, key.field, key.value);
  const uids = answers.get(textKey(field, key.value));
  return uids === null || (uids !== undefined && uids.has(entry.uid));
}

/** Case-insensitive substring of a decoded field's value; an empty string matches every message with the field (RFC 9051). */
function headerContains(headers: readonly HeaderField[] | undefined, field: string, value: string): boolean {
  const needle = value.toLowerCase();
  return headerValues(headers, field).some((v) => v.toLowerCase().includes(needle));
}

function headerValues(headers: readonly HeaderField[] | undefined, field: string): string[] {
  const name = field.toLowerCase();
  return (headers ?? []).filter((h) => h.name.toLowerCase() === name).map((h) => h.value);
}
