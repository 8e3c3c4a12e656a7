/**
 * FETCH (and UID FETCH) arguments into typed items, and the item names the responses carry.
 *
 * The reader splits `BODY[HEADER.FIELDS (From To)]<0.100>` into the atom `BODY[HEADER.FIELDS`, the list
 * `(From To)` and the atom `]<0.100>` (a list inside an atom is no atom), as Dovecot's reader does; this parser
 * joins them again. Header field names are kept as the client spelled them (matching them is case-insensitive);
 * the response names them upper-cased, as Dovecot does.
 */
import { number64Of, type ParseError, type Token } from './token.js';
import { parseSequenceSet, type SequenceSet } from './sequence.js';
import { isAtom } from './writer.js';

export type SectionText = 'HEADER' | 'HEADER.FIELDS' | 'HEADER.FIELDS.NOT' | 'TEXT' | 'MIME';

export interface Section {
  /** Part numbers (`1.2` is [1, 2]); empty for the whole message. */
  part: number[];
  text?: SectionText;
  /** For HEADER.FIELDS and HEADER.FIELDS.NOT. */
  fields?: string[];
}

export interface Partial {
  offset: number;
  length: number;
}

export const SIMPLE_ITEMS = [
  'FLAGS', 'UID', 'INTERNALDATE', 'RFC822.SIZE', 'ENVELOPE', 'BODYSTRUCTURE', 'BODY', 'RFC822', 'RFC822.HEADER', 'RFC822.TEXT', 'MODSEQ',
] as const;
export type SimpleItem = (typeof SIMPLE_ITEMS)[number];

export type FetchItem =
  | { kind: SimpleItem }
  | { kind: 'BODY[]'; peek: boolean; section: Section; partial?: Partial }
  | { kind: 'BINARY[]'; peek: boolean; section: Section; partial?: Partial }
  | { kind: 'BINARY.SIZE'; section: Section };

export interface FetchCommand {
  set: SequenceSet;
  items: FetchItem[];
  /** CONDSTORE's CHANGEDSINCE modifier. */
  changedSince?: bigint;
  /** QRESYNC's VANISHED modifier (UID FETCH with CHANGEDSINCE only). */
  vanished: boolean;
}

const MACROS: Record<string, SimpleItem[]> = {
  ALL: ['FLAGS', 'INTERNALDATE', 'RFC822.SIZE', 'ENVELOPE'],
  FAST: ['FLAGS', 'INTERNALDATE', 'RFC822.SIZE'],
  FULL: ['FLAGS', 'INTERNALDATE', 'RFC822.SIZE', 'ENVELOPE', 'BODY'],
};
const SIMPLE = new Set<string>(SIMPLE_ITEMS);

/** `FETCH set items [(modifiers)]` (the arguments after the command name). */
export function parseFetchCommand(args: readonly Token[], options: { uid: boolean }): FetchCommand | ParseError {
  const set = parseSequenceSet(args[0]);
  if ('bad' in set) return set;
  const first = args[1];
  let items: FetchItem[];
  let at: number;
  if (first?.type === 'list') {
    const r = parseItems(first.items, 0, first.items.length);
    if ('bad' in r) return r;
    items = r.items;
    at = 2;
  } else {
    const macro = first?.type === 'atom' ? MACROS[first.value.toUpperCase()] : undefined;
    if (macro) {
      items = macro.map((kind) => ({ kind }));
      at = 2;
    } else {
      const r = parseItem(args, 1);
      if ('bad' in r) return r;
      items = [r.item];
      at = r.next;
    }
  }
  if (items.length === 0) return { bad: 'Missing FETCH attributes.' };
  const cmd: FetchCommand = { set, items, vanished: false };
  const mods = args[at];
  if (mods !== undefined) {
    if (mods.type !== 'list' || at + 1 !== args.length) return { bad: 'Invalid FETCH arguments.' };
    const r = parseModifiers(mods.items, cmd);
    if (r) return r;
  }
  if (cmd.vanished && (!options.uid || cmd.changedSince === undefined)) {
    return { bad: 'VANISHED can only be used with UID FETCH and CHANGEDSINCE.' };
  }
  return cmd;
}

function parseModifiers(mods: readonly Token[], cmd: FetchCommand): ParseError | null {
  for (let i = 0; i < mods.length; i++) {
    const name = mods[i]?.type === 'atom' ? (mods[i] as { value: string }).value.toUpperCase() : '';
    if (name === 'CHANGEDSINCE' && cmd.changedSince === undefined) {
      const v = number64Of(mods[++i]);
      if (v === null) return { bad: 'Invalid CHANGEDSINCE modseq.' };
      cmd.changedSince = v;
    } else if (name === 'VANISHED' && !cmd.vanished) {
      cmd.vanished = true;
    } else {
      return { bad: 'Unknown FETCH modifier.' };
    }
  }
  return null;
}

function parseItems(tokens: readonly Token[], from: number, to: number): { items: FetchItem[] } | ParseError {
  const items: FetchItem[] = [];
  let i = from;
  while (i < to) {
    const r = parseItem(tokens, i);
    if ('bad' in r) return r;
    items.push(r.item);
    i = r.next;
  }
  return { items };
}

/** One item starting at tokens[i] (up to three tokens for a HEADER.FIELDS section). */
function parseItem(tokens: readonly Token[], i: number): { item: FetchItem; next: number } | ParseError {
  const t = tokens[i];
  if (t?.type !== 'atom') return { bad: 'Invalid FETCH attribute.' };
  const text = t.value.toUpperCase();
  const open = text.indexOf('[');
  if (open < 0) {
    return SIMPLE.has(text) ? { item: { kind: text as SimpleItem }, next: i + 1 } : { bad: `Unknown FETCH attribute ${t.value}.` };
  }
  const prefix = text.slice(0, open);
  const close = text.indexOf(']', open);
  let sectionText: string;
  let fields: string[] | undefined;
  let tail: string;
  let next = i + 1;
  if (close >= 0) {
    sectionText = t.value.slice(open + 1, close);
    tail = text.slice(close + 1);
  } else {
    // BODY[HEADER.FIELDS (list)]…: the list and the closing atom follow.
    const list = tokens[i + 1];
    const end = tokens[i + 2];
    if (list?.type !== 'list' || end?.type !== 'atom' || !end.value.startsWith(']')) return { bad: 'Invalid FETCH section.' };
    const f = parseFields(list.items);
    if ('bad' in f) return f;
    sectionText = t.value.slice(open + 1);
    fields = f.fields;
    tail = end.value.slice(1);
    next = i + 3;
  }
  // Dovecot reads nothing after BINARY.SIZE[…]'s bracket (a partial there has no meaning).
  const partial = prefix === 'BINARY.SIZE' ? undefined : parsePartial(tail);
  if (partial === null) return { bad: 'Invalid FETCH partial.' };
  const item = buildSectionItem(prefix, sectionText, fields, partial);
  return 'bad' in item ? item : { item, next };
}

/**
 * BODY[…] and BINARY[…] take the same sections, as in Dovecot: BINARY decodes a whole message, a part or a TEXT, and
 * answers HEADER, HEADER.FIELDS and MIME as BODY does.
 */
function buildSectionItem(prefix: string, sectionText: string, fields: string[] | undefined, partial: Partial | undefined): FetchItem | ParseError {
  const body = prefix === 'BODY' || prefix === 'BODY.PEEK';
  if (!body && prefix !== 'BINARY' && prefix !== 'BINARY.PEEK' && prefix !== 'BINARY.SIZE') return { bad: 'Unknown FETCH attribute.' };
  const section = parseSection(sectionText, fields);
  if ('bad' in section) return body ? section : { bad: 'Invalid BINARY section.' };
  if (prefix === 'BINARY.SIZE') return { kind: 'BINARY.SIZE', section };
  const item: FetchItem = body ? { kind: 'BODY[]', peek: prefix === 'BODY.PEEK', section } : { kind: 'BINARY[]', peek: prefix === 'BINARY.PEEK', section };
  if (partial) item.partial = partial;
  return item;
}

function parsePart(pieces: string[]): number[] | null {
  const out: number[] = [];
  for (const p of pieces) {
    if (!/^[1-9]\d{0,8}$/.test(p)) return null;
    out.push(Number(p));
  }
  return out;
}

/** `1.2.HEADER.FIELDS.NOT`, `TEXT`, `3.MIME`, `` …; `fields` when the section had a list. */
function parseSection(text: string, fields: string[] | undefined): Section | ParseError {
  const pieces = text.split('.');
  let k = 0;
  while (k < pieces.length && /^\d/.test(pieces[k]!)) k++;
  const part = parsePart(pieces.slice(0, k));
  if (part === null) return { bad: 'Invalid FETCH section.' };
  const spec = pieces.slice(k).join('.').toUpperCase();
  const section: Section = { part };
  if (spec === '') {
    if (fields) return { bad: 'Invalid FETCH section.' };
    return section;
  }
  const wantsFields = spec === 'HEADER.FIELDS' || spec === 'HEADER.FIELDS.NOT';
  const known = wantsFields || spec === 'HEADER' || spec === 'TEXT' || spec === 'MIME';
  if (!known || wantsFields !== (fields !== undefined) || (spec === 'MIME' && part.length === 0)) {
    return { bad: 'Invalid FETCH section.' };
  }
  section.text = spec;
  if (fields) section.fields = fields;
  return section;
}

function parseFields(items: readonly Token[]): { fields: string[] } | ParseError {
  const fields: string[] = [];
  for (const it of items) {
    const v = it.type === 'atom' || it.type === 'number' ? String(it.value) : it.type === 'string' || it.type === 'literal' ? it.value.toString('latin1') : null;
    if (v === null || !isAtom(v) || /[:[\]]/.test(v)) return { bad: 'Invalid header field name.' };
    fields.push(v);
  }
  return fields.length > 0 ? { fields } : { bad: 'Missing header field names.' };
}

/** `<offset.length>` after a section, undefined when there is none, null when it is malformed. */
function parsePartial(tail: string): Partial | undefined | null {
  if (tail === '') return undefined;
  const m = /^<(\d{1,10})\.(\d{1,10})>$/.exec(tail);
  if (!m) return null;
  const offset = Number(m[1]);
  const length = Number(m[2]);
  if (offset > 0xffff_ffff || length === 0 || length > 0xffff_ffff) return null;
  return { offset, length };
}

function sectionSpec(s: Section): string {
  let out = s.part.join('.');
  if (s.text) out += `${out ? '.' : ''}${s.text}`;
  if (s.fields) out += ` (${s.fields.join(' ')})`;
  return out;
}

/**
 * The item's name in a FETCH response (`BODY[1.HEADER.FIELDS (FROM)]<0>`: no PEEK, the origin only). Header field
 * names are upper-cased, as Dovecot answers: a client matches the name it gets back whatever case it asked in.
 */
export function fetchItemName(item: FetchItem): string {
  switch (item.kind) {
    case 'BODY[]':
    case 'BINARY[]':
      return `${item.kind === 'BODY[]' ? 'BODY' : 'BINARY'}[${responseSpec(item.section)}]${item.partial ? `<${item.partial.offset}>` : ''}`;
    case 'BINARY.SIZE':
      return `BINARY.SIZE[${responseSpec(item.section)}]`;
    default:
      return item.kind;
  }
}

/** A section as a response names it: header field names upper-cased. */
function responseSpec(section: Section): string {
  const fields = section.fields?.map((f) => f.toUpperCase());
  return sectionSpec(fields ? { ...section, fields } : section);
}

/** The item as a client writes it in a request (for tests and tools). */
export function formatFetchItem(item: FetchItem): string {
  const p = (x?: Partial) => (x ? `<${x.offset}.${x.length}>` : '');
  switch (item.kind) {
    case 'BODY[]':
      return `BODY${item.peek ? '.PEEK' : ''}[${sectionSpec(item.section)}]${p(item.partial)}`;
    case 'BINARY[]':
      return `BINARY${item.peek ? '.PEEK' : ''}[${sectionSpec(item.section)}]${p(item.partial)}`;
    case 'BINARY.SIZE':
      return `BINARY.SIZE[${sectionSpec(item.section)}]`;
    default:
      return fetchItemName(item);
  }
}
