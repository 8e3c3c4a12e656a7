/**
 * SEARCH over a selected folder: keys on flags, numbers, UIDs and mod-sequences are answered from the session's
 * index; sizes and dates from the stored rows; header and text keys from the raw message (case-insensitive
 * substring, as RFC 9051 asks), read in batches so memory follows the batch, not the folder.
 */
import { parseMime } from '../../lib/imap-message/index.js';
import type { FetchEntry, IndexEntry } from '../../modules/imap-access/imap-access.service.js';
import { inRanges, resolveSequenceSet, type Ranges, type SearchKey } from './protocol/index.js';

/** What a key needs beyond the index: the stored row (size, date), or the raw bytes too. */
export function searchNeeds(key: SearchKey): 'index' | 'row' | 'raw' {
  switch (key.type) {
    case 'text':
    case 'header':
      return 'raw';
    case 'size':
    case 'age':
      return 'row';
    case 'date':
      return key.of === 'sent' ? 'raw' : 'row';
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
const ORDER = { index: 0, row: 1, raw: 2 } as const;
const max = (a: 'index' | 'row' | 'raw', b: 'index' | 'row' | 'raw') => (ORDER[a] >= ORDER[b] ? a : b);

export interface SearchContext {
  /** The message number of the entry (1-based), and the folder's size and highest UID. */
  seq: number;
  count: number;
  maxUid: number;
  now: number;
  saved?: Ranges;
}

/** Whether a message matches `key`; `entry` carries the row (and raw bytes) when `searchNeeds` asked for them. */
export function matches(key: SearchKey, entry: IndexEntry & Partial<FetchEntry>, ctx: SearchContext): boolean {
  switch (key.type) {
    case 'all': return true;
    case 'flag': return hasFlag(entry, key.flag) === key.set;
    case 'new': case 'recent': return false;
    case 'old': return true;
    case 'seq': return inSet(key.set, ctx.count, ctx.seq, ctx.saved);
    case 'uid': return inSet(key.set, ctx.maxUid, entry.uid, ctx.saved);
    case 'modseq': return entry.modseq >= Number(key.modseq);
    case 'size': return key.op === 'larger' ? (entry.size ?? 0) > key.size : (entry.size ?? 0) < key.size;
    case 'age': {
      const age = (ctx.now - (entry.created_at ?? 0)) / 1000;
      return key.op === 'older' ? age >= key.seconds : age <= key.seconds;
    }
    case 'date': return dateMatches(key, entry);
    case 'text': return textMatches(entry.raw, key.field, key.value);
    case 'header': return headerContains(entry.raw, key.field, key.value);
    case 'not': return !matches(key.key, entry, ctx);
    case 'or': return matches(key.left, entry, ctx) || matches(key.right, entry, ctx);
    case 'and': return key.keys.every((k) => matches(k, entry, ctx));
  }
}

/** Resolved as UIDs are (a number past the end is simply not there): a SEARCH key is never an error for that. */
function inSet(set: Parameters<typeof resolveSequenceSet>[0], max: number, n: number, saved?: Ranges): boolean {
  const ranges = resolveSequenceSet(set, max, { uid: true, ...(saved ? { saved } : {}) });
  return !('bad' in ranges) && inRanges(ranges, n);
}

function hasFlag(e: IndexEntry, flag: string): boolean {
  switch (flag.toLowerCase()) {
    case '\\seen': return e.read;
    case '\\answered': return e.answered;
    case '\\flagged': return e.flagged;
    case '\\deleted': return e.deleted;
    case '\\draft': case '\\recent': return false;
    default: return e.labels.includes(flag.toLowerCase());
  }
}

/** Days as UTC dates (RFC 9051 leaves the zone to the server; UTC is what the stored times are in). */
function dateMatches(key: Extract<SearchKey, { type: 'date' }>, entry: Partial<FetchEntry>): boolean {
  let at: number | null = entry.created_at ?? null;
  if (key.of === 'sent') {
    const value = headerValue(entry.raw, 'date');
    at = value === null ? null : Date.parse(value);
    if (at === null || Number.isNaN(at)) return false;
  }
  if (at === null) return false;
  const day = Date.UTC(key.date.year, key.date.month - 1, key.date.day);
  const d = new Date(at);
  const its = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  return key.op === 'before' ? its < day : key.op === 'on' ? its === day : its >= day;
}

function textMatches(raw: Buffer | undefined, field: string, value: string): boolean {
  if (!raw) return false;
  const needle = value.toLowerCase();
  if (field === 'TEXT') return raw.toString('utf8').toLowerCase().includes(needle);
  if (field === 'BODY') {
    const root = parseMime(raw);
    return raw.subarray(root.bodyStart, root.bodyEnd).toString('utf8').toLowerCase().includes(needle);
  }
  return headerContains(raw, field, value);
}

function headerContains(raw: Buffer | undefined, field: string, value: string): boolean {
  const values = headerValues(raw, field.toLowerCase());
  // An empty string matches every message that has the field (RFC 9051 HEADER).
  return values.some((v) => v.toLowerCase().includes(value.toLowerCase()));
}

function headerValue(raw: Buffer | undefined, field: string): string | null {
  return headerValues(raw, field)[0] ?? null;
}

/** The unfolded values of the top-level header's fields of this (lower-case) name. */
function headerValues(raw: Buffer | undefined, field: string): string[] {
  if (!raw) return [];
  const root = parseMime(raw);
  const header = raw.subarray(root.headerStart, root.bodyStart).toString('utf8').replace(/\r?\n[ \t]+/g, ' ');
  const out: string[] = [];
  for (const line of header.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0 && line.slice(0, colon).trim().toLowerCase() === field) out.push(line.slice(colon + 1).trim());
  }
  return out;
}
