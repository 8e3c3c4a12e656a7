/**
 * One message's FETCH data as bytes: the items asked for, computed from the stored raw message with the pure
 * functions of lib/imap-message (Dovecot's answers are their reference), flags from the folder's index.
 */
import { bodyStructure, envelope, fetchSection, parseMime, serializeImapValue, binarySection, type MimePart, type SectionSpec } from '../../lib/imap-message/index.js';
import type { FetchEntry, IndexEntry } from '../../modules/imap-access/imap-access.service.js';
import { fetchItemName, formatDateTime, type FetchItem } from './protocol/index.js';

/** The FETCH items that need the raw message. */
export function needsRaw(items: readonly FetchItem[]): boolean {
  return items.some((i) => !['FLAGS', 'UID', 'INTERNALDATE', 'RFC822.SIZE', 'MODSEQ'].includes(i.kind));
}

/** Items that set \Seen when fetched (BODY[…] without PEEK, BINARY[…] without PEEK, RFC822, RFC822.TEXT). */
export function setsSeen(items: readonly FetchItem[]): boolean {
  return items.some((i) => ((i.kind === 'BODY[]' || i.kind === 'BINARY[]') && !i.peek) || i.kind === 'RFC822' || i.kind === 'RFC822.TEXT');
}

/** The flag list of an index entry: system flags, then its labels as keywords. */
export function flagsOf(e: IndexEntry): string[] {
  const flags: string[] = [];
  if (e.answered) flags.push('\\Answered');
  if (e.flagged) flags.push('\\Flagged');
  if (e.deleted) flags.push('\\Deleted');
  if (e.read) flags.push('\\Seen');
  return flags.concat(e.labels);
}

/** The items Dovecot writes ahead of the others in a FETCH response. */
const SHORT_ITEMS = new Set<FetchItem['kind']>(['UID', 'FLAGS', 'INTERNALDATE', 'RFC822.SIZE', 'MODSEQ']);

const text = (s: string) => Buffer.from(s, 'latin1');
const literal = (b: Buffer) => Buffer.concat([text(`{${b.length}}\r\n`), b]);

/** A BINARY item whose part does not decode: the FETCH fails with NO and this code, as Dovecot's does. */
export class UnknownCteError extends Error {
  constructor(readonly code: 'UNKNOWN-CTE' | 'PARSE') {
    super(code);
  }
}

/** The bytes of `(item value item value …)` for one message; throws UnknownCteError for a BINARY it cannot decode. */
export function fetchData(entry: FetchEntry, items: readonly FetchItem[], extra: { uid: boolean; modseq: boolean }): Buffer {
  const out: Buffer[] = [];
  let root: MimePart | undefined;
  const raw = () => entry.raw ?? Buffer.alloc(0);
  const mime = () => (root ??= parseMime(raw()));
  const add = (name: string, value: Buffer) => out.push(text(`${out.length > 0 ? ' ' : ''}${name} `), value);
  const names = new Set<string>();
  const once = (name: string) => !names.has(name) && (names.add(name), true);
  if (extra.uid && !items.some((i) => i.kind === 'UID')) items = [{ kind: 'UID' }, ...items];
  if (extra.modseq && !items.some((i) => i.kind === 'MODSEQ')) items = [...items, { kind: 'MODSEQ' }];
  // Dovecot's order: the short items first, then the others, each group as asked (clients read UID before a body).
  items = [...items.filter((i) => SHORT_ITEMS.has(i.kind)), ...items.filter((i) => !SHORT_ITEMS.has(i.kind))];
  for (const item of items) {
    const name = fetchItemName(item);
    if (!once(name)) continue;
    switch (item.kind) {
      case 'UID': add(name, text(String(entry.uid))); break;
      case 'FLAGS': add(name, text(`(${flagsOf(entry).join(' ')})`)); break;
      case 'INTERNALDATE': add(name, text(`"${formatDateTime(new Date(entry.created_at))}"`)); break;
      case 'RFC822.SIZE': add(name, text(String(raw().length || entry.size))); break;
      case 'MODSEQ': add(name, text(`(${entry.modseq})`)); break;
      case 'ENVELOPE': add(name, serializeImapValue(envelope(raw(), mime().headerStart, mime().bodyStart))); break;
      case 'BODYSTRUCTURE': add(name, serializeImapValue(bodyStructure(raw(), mime(), true))); break;
      case 'BODY': add(name, serializeImapValue(bodyStructure(raw(), mime(), false))); break;
      case 'RFC822': add(name, literal(fetchSection(raw(), mime(), { part: [] }))); break;
      case 'RFC822.HEADER': add(name, literal(fetchSection(raw(), mime(), { part: [], text: 'HEADER' }))); break;
      case 'RFC822.TEXT': add(name, literal(fetchSection(raw(), mime(), { part: [], text: 'TEXT' }))); break;
      case 'BODY[]': add(name, literal(fetchSection(raw(), mime(), sectionSpec(item)))); break;
      case 'BINARY[]':
      case 'BINARY.SIZE': {
        const r = binarySection(raw(), mime(), item.part);
        if ('error' in r) throw new UnknownCteError(r.error);
        if (item.kind === 'BINARY.SIZE') add(name, text(String(r.bytes.length)));
        else {
          const p = item.partial;
          const bytes = p ? (p.offset >= r.bytes.length ? Buffer.alloc(0) : r.bytes.subarray(p.offset, p.offset + p.length)) : r.bytes;
          add(name, Buffer.concat([text(`${bytes.includes(0) ? '~' : ''}{${bytes.length}}\r\n`), bytes]));
        }
        break;
      }
    }
  }
  return Buffer.concat([text('('), ...out, text(')')]);
}

function sectionSpec(item: Extract<FetchItem, { kind: 'BODY[]' }>): SectionSpec {
  const spec: SectionSpec = { part: item.section.part };
  if (item.section.text) spec.text = item.section.text;
  if (item.section.fields) spec.fields = item.section.fields;
  if (item.partial) spec.partial = { origin: item.partial.offset, count: item.partial.length };
  return spec;
}
