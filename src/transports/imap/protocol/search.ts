/**
 * SEARCH (and UID SEARCH) into a typed tree: every RFC 9051 key, RFC 7162's MODSEQ, RFC 5032's OLDER/YOUNGER,
 * CHARSET, and RETURN (MIN MAX COUNT ALL SAVE) for ESEARCH. Strings are decoded here, by the CHARSET, so the search
 * engine sees text only. Nesting (NOT, OR, parentheses) is bounded, so no key tree can exhaust the stack.
 */
import { formatDate, parseDate, type ImapDate } from './datetime.js';
import { parseFlag } from './flags.js';
import { formatSequenceSet, parseSequenceSet, type SequenceSet } from './sequence.js';
import { astringBytes, atomText, number64Of, numberOf, type ParseError, type Token } from './token.js';
import type { Value } from './writer.js';

export type TextField = 'BCC' | 'BODY' | 'CC' | 'FROM' | 'SUBJECT' | 'TEXT' | 'TO';

export type SearchKey =
  | { type: 'all' }
  /** ANSWERED/UNANSWERED …, KEYWORD/UNKEYWORD: `set` false for the UN- forms. */
  | { type: 'flag'; flag: string; set: boolean }
  | { type: 'new' }
  | { type: 'old' }
  | { type: 'recent' }
  | { type: 'text'; field: TextField; value: string }
  | { type: 'header'; field: string; value: string }
  /** BEFORE/ON/SINCE compare the internal date, SENTBEFORE/SENTON/SENTSINCE the Date: header. */
  | { type: 'date'; of: 'internal' | 'sent'; op: 'before' | 'on' | 'since'; date: ImapDate }
  | { type: 'size'; op: 'larger' | 'smaller'; size: number }
  /** OLDER/YOUNGER n: internal date more (or less) than n seconds ago. */
  | { type: 'age'; op: 'older' | 'younger'; seconds: number }
  | { type: 'seq'; set: SequenceSet }
  | { type: 'uid'; set: SequenceSet }
  | { type: 'modseq'; modseq: bigint; entry?: { name: string; kind: 'priv' | 'shared' | 'all' } }
  | { type: 'not'; key: SearchKey }
  | { type: 'or'; left: SearchKey; right: SearchKey }
  | { type: 'and'; keys: SearchKey[] };

export type ReturnOption = 'MIN' | 'MAX' | 'COUNT' | 'ALL' | 'SAVE';

export interface SearchCommand {
  /** Absent for a plain SEARCH (untagged SEARCH reply); present, maybe empty (= ALL), for ESEARCH. */
  return?: ReturnOption[];
  charset?: string;
  key: SearchKey;
}

/** Nesting allowed for NOT, OR and parentheses together. */
export const MAX_SEARCH_DEPTH = 64;
/** UTF-8 and its subset US-ASCII only: what RFC 9051 requires, and the full-text index's words are Unicode. */
const CHARSETS = new Map([['US-ASCII', 'ascii'], ['UTF-8', 'utf8']] as const);
const BADCHARSET: ParseError = { bad: 'Unsupported charset.', no: true, code: 'BADCHARSET (UTF-8 US-ASCII)' };

const FLAG_KEYS: Record<string, [string, boolean]> = {
  ANSWERED: ['\\Answered', true], DELETED: ['\\Deleted', true], DRAFT: ['\\Draft', true], FLAGGED: ['\\Flagged', true], SEEN: ['\\Seen', true],
  UNANSWERED: ['\\Answered', false], UNDELETED: ['\\Deleted', false], UNDRAFT: ['\\Draft', false], UNFLAGGED: ['\\Flagged', false], UNSEEN: ['\\Seen', false],
};
const TEXT_KEYS = new Set<string>(['BCC', 'BODY', 'CC', 'FROM', 'SUBJECT', 'TEXT', 'TO']);
const DATE_KEYS: Record<string, ['internal' | 'sent', 'before' | 'on' | 'since']> = {
  BEFORE: ['internal', 'before'], ON: ['internal', 'on'], SINCE: ['internal', 'since'],
  SENTBEFORE: ['sent', 'before'], SENTON: ['sent', 'on'], SENTSINCE: ['sent', 'since'],
};

export function parseSearchCommand(args: readonly Token[]): SearchCommand | ParseError {
  const cmd: SearchCommand = { key: { type: 'all' } };
  let i = 0;
  if (atomText(args[i])?.toUpperCase() === 'RETURN') {
    const r = parseReturn(args[i + 1]);
    if ('bad' in r) return r;
    cmd.return = r;
    i += 2;
  }
  let encoding: BufferEncoding = 'utf8';
  if (atomText(args[i])?.toUpperCase() === 'CHARSET') {
    const name = astringBytes(args[i + 1])?.toString('latin1').toUpperCase();
    const enc = name === undefined ? undefined : CHARSETS.get(name as 'UTF-8');
    if (name === undefined) return { bad: 'Missing CHARSET.' };
    if (enc === undefined) return BADCHARSET;
    cmd.charset = name;
    encoding = enc === 'ascii' ? 'utf8' : enc;
    i += 2;
  }
  if (i >= args.length) return { bad: 'Missing search parameters.' };
  const p = new KeyParser(args, encoding);
  const keys: SearchKey[] = [];
  p.at = i;
  while (p.at < args.length) {
    const k = p.key(0);
    if ('bad' in k) return k;
    keys.push(k);
  }
  cmd.key = keys.length === 1 ? keys[0]! : { type: 'and', keys };
  return cmd;
}

function parseReturn(t: Token | undefined): ReturnOption[] | ParseError {
  if (t?.type !== 'list') return { bad: 'Invalid RETURN options.' };
  const out: ReturnOption[] = [];
  for (const item of t.items) {
    const o = atomText(item)?.toUpperCase();
    if (o !== 'MIN' && o !== 'MAX' && o !== 'COUNT' && o !== 'ALL' && o !== 'SAVE') return { bad: 'Unknown RETURN option.' };
    if (!out.includes(o)) out.push(o);
  }
  return out;
}

class KeyParser {
  at = 0;
  constructor(
    private readonly args: readonly Token[],
    private readonly encoding: BufferEncoding,
  ) {}

  /** One key from this.args at this.at (a list token is a parenthesised group). */
  key(depth: number): SearchKey | ParseError {
    if (depth > MAX_SEARCH_DEPTH) return { bad: 'Search query too complex.' };
    const t = this.args[this.at++];
    if (t?.type === 'list') return groupOf(t.items, this.encoding, depth + 1);
    const name = atomText(t)?.toUpperCase();
    if (name === undefined) return { bad: 'Invalid search key.' };
    if (name === 'ALL') return { type: 'all' };
    if (name === 'NEW' || name === 'OLD' || name === 'RECENT') return { type: name.toLowerCase() as 'new' };
    const flag = FLAG_KEYS[name];
    if (flag) return { type: 'flag', flag: flag[0], set: flag[1] };
    if (TEXT_KEYS.has(name)) return this.withString((value) => ({ type: 'text', field: name as TextField, value }));
    const date = DATE_KEYS[name];
    if (date) return this.withDate(date);
    switch (name) {
      case 'NOT': {
        const k = this.key(depth + 1);
        return 'bad' in k ? k : { type: 'not', key: k };
      }
      case 'OR':
        return this.or(depth);
      case 'KEYWORD':
      case 'UNKEYWORD':
        return this.keyword(name === 'KEYWORD');
      case 'HEADER':
        return this.header();
      case 'LARGER':
      case 'SMALLER':
      case 'OLDER':
      case 'YOUNGER':
        return this.withNumber(name);
      case 'UID': {
        const set = parseSequenceSet(this.args[this.at++]);
        return 'bad' in set ? set : { type: 'uid', set };
      }
      case 'MODSEQ':
        return this.modseq();
    }
    const set = parseSequenceSet(t);
    return 'bad' in set ? { bad: `Unknown search key.` } : { type: 'seq', set };
  }

  private or(depth: number): SearchKey | ParseError {
    const left = this.key(depth + 1);
    if ('bad' in left) return left;
    if (this.at >= this.args.length) return { bad: 'Missing search key.' };
    const right = this.key(depth + 1);
    return 'bad' in right ? right : { type: 'or', left, right };
  }

  private string(): string | null {
    const b = astringBytes(this.args[this.at++]);
    if (b === null) return null;
    if (this.encoding === 'latin1') return b.toString('latin1');
    return b.toString('utf8');
  }

  private withString(make: (value: string) => SearchKey): SearchKey | ParseError {
    const v = this.string();
    return v === null ? { bad: 'Missing search string.' } : make(v);
  }

  private withDate([of, op]: ['internal' | 'sent', 'before' | 'on' | 'since']): SearchKey | ParseError {
    const date = parseDate(this.args[this.at++]);
    return 'bad' in date ? date : { type: 'date', of, op, date };
  }

  private withNumber(name: 'LARGER' | 'SMALLER' | 'OLDER' | 'YOUNGER'): SearchKey | ParseError {
    const n = numberOf(this.args[this.at++]);
    if (n === null) return { bad: `Invalid ${name} number.` };
    if (name === 'LARGER' || name === 'SMALLER') return { type: 'size', op: name === 'LARGER' ? 'larger' : 'smaller', size: n };
    if (n === 0) return { bad: `Invalid ${name} number.` };
    return { type: 'age', op: name === 'OLDER' ? 'older' : 'younger', seconds: n };
  }

  private keyword(set: boolean): SearchKey | ParseError {
    const f = parseFlag(this.args[this.at++]);
    if (typeof f !== 'string') return f;
    return { type: 'flag', flag: f, set };
  }

  private header(): SearchKey | ParseError {
    const field = this.string();
    const value = this.string();
    if (field === null || value === null) return { bad: 'Missing HEADER arguments.' };
    if (field === '' || /[\s:]/.test(field)) return { bad: 'Invalid header field name.' };
    return { type: 'header', field, value };
  }

  /** `MODSEQ [entry-name entry-type-req] mod-sequence-valzer` (the entry is a quoted `/flags/…` name). */
  private modseq(): SearchKey | ParseError {
    const t = this.args[this.at];
    if (t?.type === 'string' || t?.type === 'literal') {
      const name = t.value.toString('utf8');
      const kind = atomText(this.args[this.at + 1])?.toLowerCase();
      if (kind !== 'priv' && kind !== 'shared' && kind !== 'all') return { bad: 'Invalid MODSEQ entry type.' };
      this.at += 2;
      const modseq = number64Of(this.args[this.at++]);
      return modseq === null ? { bad: 'Invalid MODSEQ value.' } : { type: 'modseq', modseq, entry: { name, kind } };
    }
    const modseq = number64Of(this.args[this.at++]);
    return modseq === null ? { bad: 'Invalid MODSEQ value.' } : { type: 'modseq', modseq };
  }
}

function groupOf(items: readonly Token[], encoding: BufferEncoding, depth: number): SearchKey | ParseError {
  if (items.length === 0) return { bad: 'Empty search group.' };
  const p = new KeyParser(items, encoding);
  const keys: SearchKey[] = [];
  while (p.at < items.length) {
    const k = p.key(depth);
    if ('bad' in k) return k;
    keys.push(k);
  }
  return keys.length === 1 ? keys[0]! : { type: 'and', keys };
}

/** A key tree written back as search arguments, as values for the writer (for tests and tools). */
export function formatSearchKey(k: SearchKey): Value[] {
  const a = (atom: string) => ({ atom });
  switch (k.type) {
    case 'all': case 'new': case 'old': case 'recent':
      return [a(k.type.toUpperCase())];
    case 'flag': {
      const sys = Object.entries(FLAG_KEYS).find(([, [f, s]]) => f === k.flag && s === k.set);
      return sys ? [a(sys[0])] : [a(k.set ? 'KEYWORD' : 'UNKEYWORD'), a(k.flag)];
    }
    case 'text': return [a(k.field), k.value];
    case 'header': return [a('HEADER'), k.field, k.value];
    case 'date': {
      const name = Object.entries(DATE_KEYS).find(([, [of, op]]) => of === k.of && op === k.op)![0];
      return [a(name), a(formatDate(k.date))];
    }
    case 'size': return [a(k.op.toUpperCase()), k.size];
    case 'age': return [a(k.op.toUpperCase()), k.seconds];
    case 'seq': return [a(formatSequenceSet(k.set))];
    case 'uid': return [a('UID'), a(formatSequenceSet(k.set))];
    case 'modseq': return [a('MODSEQ'), ...(k.entry ? [k.entry.name, a(k.entry.kind)] : []), k.modseq];
    case 'not': return [a('NOT'), ...formatSearchKey(k.key)];
    case 'or': return [a('OR'), ...formatSearchKey(k.left), ...formatSearchKey(k.right)];
    case 'and': return [k.keys.flatMap(formatSearchKey)];
  }
}
