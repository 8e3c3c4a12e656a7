/**
 * FETCH data as bytes: the items asked for, computed from the stored raw message with the pure functions of
 * lib/imap-message (Dovecot's answers are their reference), or, for ENVELOPE, BODYSTRUCTURE and BODY, the same
 * bytes as the mail store keeps them; flags from the folder's index. A batch of responses is written into one
 * `ResponseBytes` and sent in one write.
 */
import { binarySection, bodyStructureBytes, envelopeBytes, fetchSection, fetchWhole, parseMime, type MimePart, type SectionSpec } from '../../lib/imap-message/index.js';
import type { FetchEntry, FetchRead, IndexEntry } from '../../modules/imap-access/imap-access.service.js';
import { fetchItemName, formatDateTime, type FetchItem, type Partial, type Section } from './protocol/index.js';

/** The items answered from the index row alone. */
const INDEX_ITEMS = new Set<FetchItem['kind']>(['FLAGS', 'UID', 'INTERNALDATE', 'RFC822.SIZE', 'MODSEQ']);
/** The items the mail store keeps computed (`message_structures`): the raw message is not read for them. */
const STRUCTURE_ITEMS = new Set<FetchItem['kind']>(['ENVELOPE', 'BODYSTRUCTURE', 'BODY']);

/** What the store reads for these items: the raw message for any section, else the kept structures, else nothing. */
export function fetchRead(items: readonly FetchItem[]): FetchRead {
  if (items.some((i) => !INDEX_ITEMS.has(i.kind) && !STRUCTURE_ITEMS.has(i.kind))) return 'raw';
  return items.some((i) => STRUCTURE_ITEMS.has(i.kind)) ? 'structure' : 'index';
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
  if (e.draft) flags.push('\\Draft');
  return flags.concat(e.labels);
}

/** FLAGS' value as FETCH writes it: `(\\Seen)`, `()`, … (the common ones without building a list). */
function flagsText(e: IndexEntry): string {
  if (e.labels.length > 0 || e.answered || e.flagged || e.deleted || e.draft) return `(${flagsOf(e).join(' ')})`;
  return e.read ? '(\\Seen)' : '()';
}

/** The items Dovecot writes ahead of the others in a FETCH response. */
const SHORT_ITEMS = new Set<FetchItem['kind']>(['UID', 'FLAGS', 'INTERNALDATE', 'RFC822.SIZE', 'MODSEQ']);

/** One item of a FETCH's answer and the text written before its value (`NAME `). */
export interface PlannedItem {
  item: FetchItem;
  label: string;
}

/**
 * The items of every message's answer, worked out once per command: UID added for UID FETCH and MODSEQ with
 * CONDSTORE, the short items first, then the others, each group as asked (clients read UID before a body), and an
 * item named twice written once.
 */
export function fetchPlan(items: readonly FetchItem[], extra: { uid: boolean; modseq: boolean }): PlannedItem[] {
  let all = items;
  if (extra.uid && !all.some((i) => i.kind === 'UID')) all = [{ kind: 'UID' }, ...all];
  if (extra.modseq && !all.some((i) => i.kind === 'MODSEQ')) all = [...all, { kind: 'MODSEQ' }];
  const ordered = [...all.filter((i) => SHORT_ITEMS.has(i.kind)), ...all.filter((i) => !SHORT_ITEMS.has(i.kind))];
  const names = new Set<string>();
  const plan: PlannedItem[] = [];
  for (const item of ordered) {
    const name = fetchItemName(item);
    if (names.has(name)) continue;
    names.add(name);
    plan.push({ item, label: `${name} ` });
  }
  return plan;
}

/** A BINARY item whose part does not decode: the FETCH fails with NO and this code, as Dovecot's does. */
export class UnknownCteError extends Error {
  constructor(readonly code: 'UNKNOWN-CTE' | 'PARSE') {
    super(code);
  }
}

/**
 * Space for text and small values, allocated a block at a time: the first small (a FETCH of one message, a client's
 * pull, would otherwise take a large block each command, all garbage) and under half of Node's 8 KiB pool, so
 * allocUnsafe cuts it from the pool; each next one twice the last up to BLOCK (a batch of kept structures fits a few).
 */
const FIRST_BLOCK = 2 * 1024;
const BLOCK = 64 * 1024;
/** Values at least this long are sent as they are, not copied into a block. */
const LARGE = 16 * 1024;
/** Text at most this long is copied a character at a time (see `text`). */
const SHORT_TEXT = 64;

/** A place in a `ResponseBytes`, to go back to. */
export interface BytesMark {
  parts: number;
  buf: Buffer;
  start: number;
  len: number;
}

/**
 * Response bytes collected for one write: text (latin1: IMAP's text here is ASCII) and small values are copied into
 * a block, large values kept as they are; `take` hands out the pieces, no further copy made.
 */
export class ResponseBytes {
  private parts: Buffer[] = [];
  private buf: Buffer = Buffer.allocUnsafe(FIRST_BLOCK);
  /** The block's bytes from `start` to `len` are written and not yet in `parts`. */
  private start = 0;
  private len = 0;

  text(s: string): void {
    if (this.len + s.length > this.buf.length) this.grow(s.length);
    if (s.length > SHORT_TEXT) {
      this.len += this.buf.write(s, this.len, 'latin1');
      return;
    }
    // A FETCH answer is mostly short pieces (`* 12 FETCH (`, ` FLAGS `, a UID); a call into Buffer.write costs more
    // than copying them here. Storing a code unit keeps its low byte, as latin1 does.
    const buf = this.buf;
    let at = this.len;
    for (let i = 0; i < s.length; i++) buf[at++] = s.charCodeAt(i);
    this.len = at;
  }

  bytes(b: Buffer): void {
    if (b.length >= LARGE) {
      this.cut();
      this.parts.push(b);
      return;
    }
    if (this.len + b.length > this.buf.length) this.grow(b.length);
    // Uint8Array's set, not Buffer's copy: the same bytes without copy's argument checks.
    this.buf.set(b, this.len);
    this.len += b.length;
  }

  mark(): BytesMark {
    return { parts: this.parts.length, buf: this.buf, start: this.start, len: this.len };
  }

  /** Forget everything written after `m`. */
  reset(m: BytesMark): void {
    this.parts.length = m.parts;
    this.buf = m.buf;
    this.start = m.start;
    this.len = m.len;
  }

  /** The bytes written since the last take, in order; the block's rest is used for what follows. */
  take(): Buffer[] {
    this.cut();
    const out = this.parts;
    this.parts = [];
    return out;
  }

  private cut(): void {
    if (this.len > this.start) this.parts.push(this.buf.subarray(this.start, this.len));
    this.start = this.len;
  }

  private grow(need: number): void {
    this.cut();
    this.buf = Buffer.allocUnsafe(Math.max(Math.min(BLOCK, this.buf.length * 2), need));
    this.start = 0;
    this.len = 0;
  }
}

/**
 * `* seq FETCH (item value …)\r\n` for one message, into `out`; throws UnknownCteError for a BINARY it cannot decode,
 * having written nothing of this message.
 */
export function writeFetch(out: ResponseBytes, seq: number, entry: FetchEntry, plan: readonly PlannedItem[]): void {
  const mark = out.mark();
  out.text(`* ${seq} FETCH (`);
  try {
    writeItems(out, entry, plan);
  } catch (err) {
    out.reset(mark);
    throw err;
  }
  out.text(')\r\n');
}

function writeItems(out: ResponseBytes, entry: FetchEntry, plan: readonly PlannedItem[]): void {
  let root: MimePart | undefined;
  const raw = () => entry.raw ?? Buffer.alloc(0);
  const mime = () => (root ??= parseMime(raw()));
  const literal = (b: Buffer) => {
    out.text(`{${b.length}}\r\n`);
    out.bytes(b);
  };
  const s = entry.structure;
  for (let n = 0; n < plan.length; n++) {
    const { item, label } = plan[n]!;
    out.text(n > 0 ? ` ${label}` : label);
    switch (item.kind) {
      case 'UID': out.text(String(entry.uid)); break;
      case 'FLAGS': out.text(flagsText(entry)); break;
      case 'INTERNALDATE': out.text(`"${formatDateTime(new Date(entry.created_at))}"`); break;
      case 'RFC822.SIZE': out.text(String(entry.raw?.length || entry.size)); break;
      case 'MODSEQ': out.text(`(${entry.modseq})`); break;
      case 'ENVELOPE': out.bytes(s ? s.envelope : envelopeBytes(raw(), mime())); break;
      case 'BODYSTRUCTURE': out.bytes(s ? s.bodyStructure : bodyStructureBytes(raw(), mime(), true)); break;
      case 'BODY': out.bytes(s ? s.body : bodyStructureBytes(raw(), mime(), false)); break;
      case 'RFC822': literal(fetchWhole(raw())); break;
      case 'RFC822.HEADER': literal(fetchSection(raw(), mime(), { part: [], text: 'HEADER' })); break;
      case 'RFC822.TEXT': literal(fetchSection(raw(), mime(), { part: [], text: 'TEXT' })); break;
      case 'BODY[]': literal(bodySection(raw, mime, sectionSpec(item.section, item.partial))); break;
      case 'BINARY[]':
      case 'BINARY.SIZE': writeBinary(out, item, raw(), mime()); break;
    }
  }
}

/**
 * A BINARY or BINARY.SIZE value. The whole message, a part or a TEXT is decoded (a literal8 when something was);
 * HEADER, HEADER.FIELDS and MIME are answered as BODY[…] answers them, as Dovecot does.
 */
function writeBinary(out: ResponseBytes, item: Extract<FetchItem, { kind: 'BINARY[]' | 'BINARY.SIZE' }>, raw: Buffer, root: MimePart): void {
  const { part, text } = item.section;
  let bytes: Buffer;
  let converted = false;
  if (text === undefined || text === 'TEXT') {
    const r = binarySection(raw, root, text ? { part, text } : { part });
    if ('error' in r) throw new UnknownCteError(r.error);
    ({ bytes, converted } = r);
  } else {
    bytes = fetchSection(raw, root, sectionSpec(item.section));
  }
  if (item.kind === 'BINARY.SIZE') {
    out.text(String(bytes.length));
    return;
  }
  const p = item.partial;
  if (p) bytes = p.offset >= bytes.length ? Buffer.alloc(0) : bytes.subarray(p.offset, p.offset + p.length);
  out.text(`${converted ? '~' : ''}{${bytes.length}}\r\n`);
  out.bytes(bytes);
}

/** BODY[…]'s bytes; the message is parsed only for a section within it. */
function bodySection(raw: () => Buffer, mime: () => MimePart, spec: SectionSpec): Buffer {
  return spec.part.length === 0 && spec.text === undefined ? fetchWhole(raw(), spec.partial) : fetchSection(raw(), mime(), spec);
}

function sectionSpec(section: Section, partial?: Partial): SectionSpec {
  const spec: SectionSpec = { part: section.part };
  if (section.text) spec.text = section.text;
  if (section.fields) spec.fields = section.fields;
  if (partial) spec.partial = { origin: partial.offset, count: partial.length };
  return spec;
}
