import PostalMime, { addressParser, decodeWords, type Address, type Email } from 'postal-mime';
import { htmlToText, searchEntryOf, withoutInvisibleFormat, type SearchEntry } from '../../lib/mail-text.js';

/** An address as the API shows it. */
export interface AddressView {
  name: string;
  address: string;
}

export interface ParsedAttachment {
  filename: string;
  contentType: string;
  inline: boolean;
  contentId: string | null;
  content: Buffer;
}

/** What the store keeps of a message, whatever state its MIME is in. */
export interface ParsedMessage {
  from: AddressView | null;
  to: AddressView[];
  cc: AddressView[];
  replyTo: AddressView[];
  subject: string;
  /** Epoch ms from the Date header, when it parses. */
  date: number | null;
  messageId: string | null;
  inReplyTo: string | null;
  references: string[];
  text: string | null;
  html: string | null;
  headers: Array<{ name: string; value: string }>;
  attachments: ParsedAttachment[];
  /** The list views' preview (`snippetOf`), computed with the parse so that no store transaction waits for it. */
  snippet: string;
  /** The full-text index's entry (lib/mail-text.ts), also computed with the parse. */
  search: SearchEntry;
  /** Set when the MIME structure could not be parsed and only headers were salvaged. */
  parseError: string | null;
}

/** RFC 5322 section 2.1.1: a line is at most 998 characters; longer subjects are cut there. */
export const MAX_SUBJECT_LENGTH = 998;
/** Headers kept in the single-message view (the raw source keeps everything). */
const MAX_HEADERS = 500;
const MAX_HEADER_VALUE = 8192;
/**
 * postal-mime refuses a message whose headers (of all its parts together) pass this; we then salvage what we
 * can, from values cut to MAX_HEADER_VALUE. Its address parser's input is bounded apart (capAddressHeaders).
 */
const MAX_HEADERS_SIZE = 1024 * 1024;
/** At most this many MIME parts of an inbound message are kept as attachments (the raw source keeps all). */
export const MAX_ATTACHMENTS = 1000;
/**
 * Lines starting with `--` (MIME delimiters, RFC 2046 section 5.1.1) the parser is given: it is handed the message
 * up to the line before the next one. Each part needs one delimiter and each multipart one more to close,
 * so this leaves room for every kept part; the parser's cost grows faster than its part count (decision 196;
 * bench/HISTORY.md), so the rest of a message with more parts is not parsed at all.
 */
export const MAX_PARSED_DELIMITERS = 2 * MAX_ATTACHMENTS + 100;
/** Addresses kept per address field (To, Cc, Reply-To) in the parsed view; the raw source keeps all. */
export const MAX_ADDRESSES = 1000;
/** Message-IDs kept from References: the first (the thread's root) and the latest, as RFC 5322 section 3.6.4 trims them. */
export const MAX_REFERENCES = 100;

/**
 * Node ≥ 20.18.3 decodes windows-1252 — which the iso-8859-1 and us-ascii labels also mean (WHATWG) — as
 * Latin-1, so bytes 0x80–0x9F come out as C1 controls instead of € … ™ “ ” (nodejs/node#60888). C1
 * controls have no use in mail text, so on such a runtime they are mapped to what windows-1252 means.
 */
const C1_AS_LATIN1 = new TextDecoder('windows-1252').decode(Uint8Array.of(0x80)) !== '\u20ac';
const WINDOWS_1252_C1 =
  '\u20ac\u0081\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\u008d\u017d\u008f' +
  '\u0090\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\u009d\u017e\u0178';

/** Decoded text fit to store: windows-1252 repaired (above), and NUL made U+FFFD — PostgreSQL text refuses NUL, and with it the whole message. */
function storable(value: string): string {
  const repaired = C1_AS_LATIN1 ? value.replace(/[\u0080-\u009f]/g, (c) => WINDOWS_1252_C1[c.charCodeAt(0) - 0x80] ?? c) : value;
  return repaired.replaceAll('\0', '\ufffd');
}

function flatten(addresses: Address[] | Address | undefined): AddressView[] {
  if (!addresses) return [];
  const list = Array.isArray(addresses) ? addresses : [addresses];
  const out: AddressView[] = [];
  for (const a of list) {
    if (a.group) for (const m of a.group) out.push({ name: storable(m.name), address: m.address.toLowerCase() });
    else if (a.address) out.push({ name: storable(a.name), address: a.address.toLowerCase() });
    if (out.length >= MAX_ADDRESSES) return out.slice(0, MAX_ADDRESSES);
  }
  return out;
}

/** References trimmed to MAX_REFERENCES: the first and the latest ones. */
function trimReferences(ids: string[]): string[] {
  return ids.length <= MAX_REFERENCES ? ids : [ids[0]!, ...ids.slice(ids.length - (MAX_REFERENCES - 1))];
}

/** Message-IDs from a header value, without angle brackets, lower-cased (they compare case-insensitively here). */
export function messageIds(value: string | undefined | null): string[] {
  if (!value) return [];
  const bracketed = value.match(/<[^<>\s]+>/g);
  const ids = bracketed ? bracketed.map((id) => id.slice(1, -1)) : value.split(/\s+/);
  return ids.map((id) => storable(id.trim().toLowerCase())).filter((id) => id.length > 0 && Buffer.byteLength(id) <= MAX_MESSAGE_ID_BYTES);
}

/**
 * Longest Message-ID kept, in UTF-8 bytes (RFC 5322 section 2.1.1's line length). Counted in bytes, not characters:
 * a thread key is part of a PostgreSQL index entry, which may not pass 2,704 bytes, and 998 characters of
 * non-ASCII text can (the store would then fail on every retry).
 */
export const MAX_MESSAGE_ID_BYTES = 998;

function parseDate(value: string | undefined): number | null {
  if (!value) return null;
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? ms : null;
}

/** Filled in by parseMessage and parseHeadersOnly, once the rest of the parse is known. */
const EMPTY_SEARCH: SearchEntry = { document: { subject: '', from: '', to: '', cc: '', filename: '', body: '' }, tsvector: '' };

const clip = (value: string, max: number) => (value.length > max ? value.slice(0, max) : value);

function fromEmail(email: Email): ParsedMessage {
  const from = flatten(email.from)[0] ?? null;
  return {
    from,
    to: flatten(email.to),
    cc: flatten(email.cc),
    replyTo: flatten(email.replyTo),
    subject: clip(storable((email.subject ?? '').replace(/[\r\n]+/g, ' ').trim()), MAX_SUBJECT_LENGTH),
    date: parseDate(email.date),
    messageId: messageIds(email.messageId)[0] ?? null,
    inReplyTo: messageIds(email.inReplyTo)[0] ?? null,
    references: trimReferences(messageIds(email.references)),
    text: email.text === undefined ? null : storable(email.text),
    html: email.html === undefined ? null : storable(email.html),
    headers: email.headers.slice(0, MAX_HEADERS).map((h) => ({ name: h.originalKey, value: clip(h.value, MAX_HEADER_VALUE) })),
    attachments: email.attachments.slice(0, MAX_ATTACHMENTS).map((a) => {
      const content = typeof a.content === 'string' ? Buffer.from(a.content, 'base64') : Buffer.from(a.content instanceof ArrayBuffer ? new Uint8Array(a.content) : a.content);
      const contentId = a.contentId ? storable(a.contentId.replace(/^<|>$/g, '')) : null;
      return {
        filename: shownName(a.filename) || defaultFilename(a.mimeType),
        contentType: storable(a.mimeType || 'application/octet-stream'),
        inline: a.disposition === 'inline' || a.related === true,
        contentId,
        content,
      };
    }),
    snippet: '',
    search: EMPTY_SEARCH,
    parseError: null,
  };
}

/** A received file's name as stored and shown: invisible format characters (bidi overrides, …) dropped, as the sender is not asked. */
const shownName = (filename: string | null | undefined) => (filename ? withoutInvisibleFormat(storable(filename)) : '');

function defaultFilename(mimeType: string): string {
  if (mimeType === 'message/rfc822') return 'message.eml';
  if (mimeType === 'text/calendar') return 'invite.ics';
  const sub = mimeType.split('/')[1]?.replace(/[^a-z0-9.+-]/gi, '') ?? 'bin';
  return `attachment.${sub || 'bin'}`;
}

/** Everything after the header block as UTF-8 text with LF line ends, or null when it is blank. */
function bodyText(raw: Buffer): string | null {
  const text = new TextDecoder().decode(raw);
  const split = text.search(/\r?\n\r?\n/);
  const body = split === -1 ? '' : text.slice(split).replace(/^\r?\n\r?\n/, '').replace(/\r\n/g, '\n');
  return body.trim() === '' ? null : storable(body);
}

/** Last resort for mail postal-mime rejects: unfold the header block by hand, keep the rest as text. */
function salvage(raw: Buffer, error: string): ParsedMessage {
  const text = raw.toString('latin1');
  const split = text.search(/\r?\n\r?\n/);
  const head = split === -1 ? text : text.slice(0, split);
  const body = split === -1 ? '' : text.slice(split).replace(/^\r?\n\r?\n/, '');
  const headers: Array<{ name: string; value: string }> = [];
  for (const line of head.split(/\r?\n(?![ \t])/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    headers.push({ name: line.slice(0, colon).trim(), value: clip(line.slice(colon + 1).replace(/\r?\n[ \t]+/g, ' ').trim(), MAX_HEADER_VALUE) });
    if (headers.length >= MAX_HEADERS) break;
  }
  const get = (name: string) => headers.find((h) => h.name.toLowerCase() === name)?.value;
  const address = (value: string | undefined): AddressView[] => flatten(value ? addressParser(value) : undefined);
  return {
    from: address(get('from'))[0] ?? null,
    to: address(get('to')),
    cc: address(get('cc')),
    replyTo: address(get('reply-to')),
    subject: clip(storable(decodeWords(get('subject') ?? '')), MAX_SUBJECT_LENGTH),
    date: parseDate(get('date')),
    messageId: messageIds(get('message-id'))[0] ?? null,
    inReplyTo: messageIds(get('in-reply-to'))[0] ?? null,
    references: trimReferences(messageIds(get('references'))),
    text: storable(body),
    html: null,
    headers,
    attachments: [],
    snippet: '',
    search: EMPTY_SEARCH,
    parseError: error,
  };
}

/**
 * The part of `raw` the MIME parser is given: all of it, or, when it has more than MAX_PARSED_DELIMITERS lines
 * starting with `--`, everything before the first line past that many (a multipart cut at a delimiter parses
 * as if it ended there). One pass of indexOf: linear in the message.
 */
export function parseInput(raw: Buffer): Buffer {
  let seen = 0;
  for (let at = raw.indexOf('\n--'); at !== -1; at = raw.indexOf('\n--', at + 3)) {
    seen += 1;
    if (seen > MAX_PARSED_DELIMITERS) return raw.subarray(0, at + 1);
  }
  return raw;
}

/** The address fields the MIME parser reads from the message's own header block (From, To, Cc…). */
const ADDRESS_FIELDS: ReadonlySet<string> = new Set(['from', 'sender', 'delivered-to', 'return-path', 'to', 'cc', 'bcc', 'reply-to']);
/**
 * Bytes of one address field (all its occurrences together) the parser is given. The address parser costs far
 * more per byte than the rest of a parse (a megabyte of `a,` took 0.7 s), so its input is bounded in bytes
 * before it runs; 32 KiB holds the MAX_ADDRESSES kept of ordinary addresses. The raw source keeps every byte.
 */
export const MAX_ADDRESS_FIELD_BYTES = 32 * 1024;
/** Bytes of all address fields together the parser is given (a message may repeat or spread them). */
export const MAX_ADDRESS_HEADERS_BYTES = 64 * 1024;

/** Where the top header block ends (the blank line's first byte), or the end of `raw` when it has no body. */
function headerBlockEnd(raw: Buffer): number {
  const lf = raw.indexOf('\n\n');
  const crlf = raw.indexOf('\r\n\r\n');
  if (lf === -1) return crlf === -1 ? raw.length : crlf;
  return crlf === -1 ? lf : Math.min(lf, crlf);
}

/** One header field of the block: [start, valueStart) is `Name:`, [valueStart, end) its value with folds, then its line break up to `next`. */
interface FieldSpan {
  name: string | null;
  valueStart: number;
  end: number;
  next: number;
}

function fieldAt(raw: Buffer, start: number, blockEnd: number): FieldSpan {
  let lineEnd = raw.indexOf('\n', start);
  // A folded field goes on while the next line starts with white space (RFC 5322 section 2.2.3).
  while (lineEnd !== -1 && lineEnd + 1 < blockEnd && (raw[lineEnd + 1] === 0x20 || raw[lineEnd + 1] === 0x09)) lineEnd = raw.indexOf('\n', lineEnd + 1);
  const next = lineEnd === -1 || lineEnd >= blockEnd ? blockEnd : lineEnd + 1;
  const end = next > start && raw[next - 1] === 0x0a ? (raw[next - 2] === 0x0d ? next - 2 : next - 1) : next;
  const colon = raw.indexOf(':', start);
  // Field names are short; a colon far off (or past the field) is no field name's.
  if (colon === -1 || colon >= end || colon - start > 64) return { name: null, valueStart: end, end, next };
  return { name: raw.toString('latin1', start, colon).trim().toLowerCase(), valueStart: colon + 1, end, next };
}

/**
 * `raw` with its address fields cut to MAX_ADDRESS_FIELD_BYTES each and MAX_ADDRESS_HEADERS_BYTES in all, at the
 * last comma that fits (an address is kept whole or not at all); the same buffer when nothing is over. One
 * pass over the header block: linear in it.
 */
export function capAddressHeaders(raw: Buffer): Buffer {
  const blockEnd = headerBlockEnd(raw);
  const pieces: Buffer[] = [];
  const used = new Map<string, number>();
  let total = 0;
  let copied = 0;
  for (let start = 0; start < blockEnd; ) {
    const field = fieldAt(raw, start, blockEnd);
    start = field.next;
    if (field.name === null || !ADDRESS_FIELDS.has(field.name)) continue;
    const room = Math.min(MAX_ADDRESS_FIELD_BYTES - (used.get(field.name) ?? 0), MAX_ADDRESS_HEADERS_BYTES - total);
    const size = field.end - field.valueStart;
    let keep = size;
    if (size > room) {
      const comma = room > 0 ? raw.lastIndexOf(',', field.valueStart + room - 1) : -1;
      const cutAt = comma >= field.valueStart ? comma : field.valueStart;
      pieces.push(raw.subarray(copied, cutAt), raw.subarray(field.end, field.next));
      copied = field.next;
      keep = cutAt - field.valueStart;
    }
    used.set(field.name, (used.get(field.name) ?? 0) + keep);
    total += keep;
  }
  if (pieces.length === 0) return raw;
  pieces.push(raw.subarray(copied));
  return Buffer.concat(pieces);
}

/**
 * Parse an RFC 5322 message. Never throws: mail that defeats the MIME parser is stored with what
 * could be salvaged, and the raw bytes are always kept beside it.
 */
export async function parseMessage(raw: Buffer): Promise<ParsedMessage> {
  let parsed: ParsedMessage;
  const input = capAddressHeaders(raw);
  try {
    const email = await PostalMime.parse(parseInput(input), { attachmentEncoding: 'arraybuffer', maxHeadersSize: MAX_HEADERS_SIZE, rfc822Attachments: true });
    parsed = fromEmail(email);
    // A multipart whose boundary never appears is all preamble (RFC 2046 section 5.1.1), which the parser
    // drops: rather than show an empty message, keep such a body as text.
    if (parsed.text === null && parsed.html === null && parsed.attachments.length === 0) parsed.text = bodyText(raw);
  } catch (err) {
    parsed = salvage(input, err instanceof Error ? err.message : String(err));
  }
  parsed.snippet = snippetOf(parsed);
  parsed.search = searchEntryOf(parsed);
  return parsed;
}

/** What the store keeps when the MIME parser was not run to its end (see analysis.ts): the headers salvaged, the rest as text. */
export function parseHeadersOnly(raw: Buffer, reason: string): ParsedMessage {
  const parsed = salvage(raw, reason);
  parsed.snippet = snippetOf(parsed);
  parsed.search = searchEntryOf(parsed);
  return parsed;
}

/** Lines joined by a space, runs of white space made one space, trimmed: the text a snippet is cut from. */
const collapseSpace = (text: string): string => text.replace(/\s+/g, ' ').trim();

/**
 * Characters of the text (or HTML) body a snippet is made from. A preview needs a few hundred; the rest
 * allows for quoted lines and a newsletter's style block before the first words, and bounds the work an
 * arbitrary body can cause.
 */
export const SNIPPET_SOURCE_CHARS = 128 * 1024;

/**
 * A short plain-text preview: the start of the text body (or of the HTML without tags), without quoted
 * lines (`>`), its white space collapsed, at most `length` characters (an ellipsis ends a cut one). Only
 * the first SNIPPET_SOURCE_CHARS of the body are read.
 *
 * Only as much of the body is read as the preview needs: flattening the start of a text gives the start
 * of the whole text's flattening, so once the lines read so far flatten to more than `length` characters
 * the rest cannot change the preview. Flattening whole bodies was a large share of what storing a
 * message costs (bench/HISTORY.md, the store thread measurements).
 */
export function snippetOf(parsed: Pick<ParsedMessage, 'text' | 'html'>, length = 200): string {
  const source = parsed.text !== null ? parsed.text.slice(0, SNIPPET_SOURCE_CHARS) : parsed.html ? htmlToText(parsed.html.slice(0, SNIPPET_SOURCE_CHARS)) : '';
  let kept = '';
  let joined = 0;
  let checkAt = length + 1;
  for (let start = 0; start <= source.length; ) {
    const newline = source.indexOf('\n', start);
    const end = newline === -1 ? source.length : newline;
    // Lines as split at /\r?\n/: one \r before the \n belongs to the line break.
    const line = source.slice(start, end > start && newline !== -1 && source.charCodeAt(end - 1) === 13 ? end - 1 : end);
    start = end + 1;
    if (line.startsWith('>')) continue;
    // A long line (an HTML body, tags taken out, often is one) is tried by its start first, by the same argument.
    if (line.length > checkAt) {
      const head = line.slice(0, checkAt);
      const flat = collapseSpace(joined === 0 ? head : `${kept} ${head}`);
      if (flat.length > length) return `${flat.slice(0, length - 1)}…`;
    }
    kept = joined++ === 0 ? line : `${kept} ${line}`;
    if (kept.length >= checkAt) {
      const flat = collapseSpace(kept);
      if (flat.length > length) return `${flat.slice(0, length - 1)}…`;
      checkAt = kept.length * 2;
    }
  }
  const flat = collapseSpace(kept);
  return flat.length > length ? `${flat.slice(0, length - 1)}…` : flat;
}
