/**
 * The text of mail as the full-text index and the previews read it: pure functions, used by the parse
 * (in the analysis thread for SMTP mail), the sending path, and the migration that indexes mail stored before.
 */
import { createHash } from 'node:crypto';

/** Elements whose content is no text: dropped with it. */
const HIDDEN_ELEMENTS = ['style', 'script'] as const;
const CLOSING_TAG: Record<(typeof HIDDEN_ELEMENTS)[number], RegExp> = { style: /<\/style/gi, script: /<\/script/gi };
const ENTITIES: Record<string, string> = { nbsp: ' ', amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", '#39': "'" };

/** `style` or `script` when a start tag of one begins at `at` (`<style`, then white space, `/` or `>`). */
function hiddenElementAt(html: string, at: number): (typeof HIDDEN_ELEMENTS)[number] | null {
  for (const name of HIDDEN_ELEMENTS) {
    const after = html.charAt(at + 1 + name.length);
    if (html.slice(at + 1, at + 1 + name.length).toLowerCase() === name && (after === '' || after === '>' || after === '/' || /\s/.test(after))) return name;
  }
  return null;
}

/**
 * The text of an HTML fragment (for previews and the search index): tags, comments and style/script elements each become a
 * space, a few entities are decoded. Written by hand because no HTML parser is among our dependencies
 * and the regular expressions this replaces (`<[^>]+>`, `<style[\s\S]*?</style>`) rescan the rest of the
 * input from every `<` that does not close: quadratic on a body of `<`. Here every search starts past
 * the previous one's end (the next `>` is looked up once per tag, an unclosed comment or element ends the
 * text), so the work is linear in the input.
 */
export function htmlToText(html: string): string {
  const out: string[] = [];
  let copied = 0;
  let gt = -1;
  for (let at = html.indexOf('<'); at !== -1; ) {
    let end: number;
    const hidden = hiddenElementAt(html, at);
    if (html.startsWith('<!--', at)) {
      const close = html.indexOf('-->', at + 4);
      end = close === -1 ? html.length : close + 3;
    } else if (hidden) {
      const closer = CLOSING_TAG[hidden];
      closer.lastIndex = at + 1;
      const close = closer.exec(html);
      const closeEnd = close ? html.indexOf('>', close.index) : -1;
      end = closeEnd === -1 ? html.length : closeEnd + 1;
    } else {
      if (gt < at) gt = html.indexOf('>', at);
      // No `>` follows: no later `<` opens a tag either, and the rest is text.
      if (gt === -1) break;
      end = gt + 1;
    }
    out.push(html.slice(copied, at), ' ');
    copied = end;
    at = html.indexOf('<', end);
  }
  out.push(html.slice(copied));
  return out.join('').replace(/&(nbsp|amp|lt|gt|quot|apos|#39);/gi, (entity, name: string) => ENTITIES[name.toLowerCase()] ?? entity);
}

/** Strip accents the way the index does: decompose, drop combining marks, recompose (so Hangul stays whole). */
export function unaccent(text: string): string {
  return text.normalize('NFD').replace(/\p{M}+/gu, '').normalize('NFC');
}

/**
 * What the full-text index holds of a message, as words: the same tokenizer makes the words of a message and of a
 * query, on both databases, so that "as typed" means the same thing everywhere. Computed before any store
 * transaction, which other writers wait for.
 */

/** The text fields a query can name, and the body. Each is its words joined by single spaces. */
export interface SearchDocument {
  subject: string;
  from: string;
  to: string;
  cc: string;
  filename: string;
  body: string;
}

/** Characters of the body (text, or the text of the HTML) that are indexed: bounds the work and the index entry. */
export const INDEXED_BODY_CHARS = 128 * 1024;
/** Characters of an HTML body read to find INDEXED_BODY_CHARS of text (markup is most of many HTML bodies). */
const HTML_SOURCE_CHARS = 4 * INDEXED_BODY_CHARS;
/** A longer run of letters and digits (a base64 blob, a hash) is cut to this many: index entries stay small. */
export const MAX_TOKEN_LENGTH = 64;

const WORD = /[\p{L}\p{N}]+/gu;
/** Text with no character past U+007F needs no Unicode folding. */
const NON_ASCII = /[^\p{ASCII}]/u;

/**
 * The words of a text: NFKC, lower case, accents removed (as `unaccent`), runs of letters and digits, each cut to
 * MAX_TOKEN_LENGTH. `Invoice-2024 für Zoë` gives `invoice 2024 fur zoe`. Linear in the text.
 */
export function searchTokens(text: string): string[] {
  const folded = !NON_ASCII.test(text) ? text.toLowerCase() : unaccent(text.normalize('NFKC').toLowerCase());
  const words = folded.match(WORD) ?? [];
  for (let i = 0; i < words.length; i++) if (words[i]!.length > MAX_TOKEN_LENGTH) words[i] = words[i]!.slice(0, MAX_TOKEN_LENGTH);
  return words;
}

/**
 * Text as a search query holds it: NFKC, lower case, accents kept. A sender's address is stored in this form beside
 * the message (`messages.from_address`), so that `from:alice@example.com` is an equality on an index.
 */
export const foldCase = (text: string): string => text.normalize('NFKC').toLowerCase();

/**
 * Whether `haystack` (a text's words) holds `words` in a row, the last as a prefix of its word: the index's phrase
 * with a prefix, checked on words. Knuth–Morris–Pratt over the exact words, so linear in both however they repeat.
 */
export function holdsPhrase(haystack: readonly string[], words: readonly string[]): boolean {
  if (words.length === 0) return true;
  const exact = words.slice(0, -1);
  const last = words[words.length - 1]!;
  const fail = new Array<number>(exact.length).fill(0);
  for (let i = 1, k = 0; i < exact.length; i++) {
    while (k > 0 && exact[i] !== exact[k]) k = fail[k - 1]!;
    if (exact[i] === exact[k]) k++;
    fail[i] = k;
  }
  for (let i = 0, k = 0; i < haystack.length; i++) {
    // `k` exact words matched before `i`: the last word may follow them here.
    if (k === exact.length) {
      if (haystack[i]!.startsWith(last)) return true;
      if (k === 0) continue;
      k = fail[k - 1]!;
    }
    while (k > 0 && haystack[i] !== exact[k]) k = fail[k - 1]!;
    if (haystack[i] === exact[k]) k++;
  }
  return false;
}

interface Addressed {
  name: string;
  address: string;
}

const addressTokens = (list: readonly Addressed[]): string[] => searchTokens(list.map((a) => `${a.name} ${a.address}`).join(' '));

/** The body text the index reads: the text part, or the text of the HTML part, at most INDEXED_BODY_CHARS. */
export function bodySource(text: string | null, html: string | null): string {
  if (text !== null) return text.slice(0, INDEXED_BODY_CHARS);
  return html === null ? '' : htmlToText(html.slice(0, HTML_SOURCE_CHARS)).slice(0, INDEXED_BODY_CHARS);
}

export interface SearchSource {
  subject: string;
  from: Addressed | null;
  to: readonly Addressed[];
  cc: readonly Addressed[];
  text: string | null;
  html: string | null;
  attachments: ReadonlyArray<{ filename: string }>;
}

/** A document's fields as word lists, before they are joined: the tsvector is built from these, not re-split. */
type DocumentTokens = Record<keyof SearchDocument, string[]>;

function documentTokens(message: SearchSource): DocumentTokens {
  return {
    subject: searchTokens(message.subject),
    from: message.from ? addressTokens([message.from]) : [],
    to: addressTokens(message.to),
    cc: addressTokens(message.cc),
    filename: searchTokens(message.attachments.map((a) => a.filename).join(' ')),
    body: searchTokens(bodySource(message.text, message.html)),
  };
}

/** Each field of a document (as words or as word lists) turned by `each`. */
function eachField<A, B>(fields: Record<keyof SearchDocument, A>, each: (field: A) => B): Record<keyof SearchDocument, B> {
  const { subject, from, to, cc, filename, body } = fields;
  return { subject: each(subject), from: each(from), to: each(to), cc: each(cc), filename: each(filename), body: each(body) };
}

const joined = (tokens: DocumentTokens): SearchDocument => eachField(tokens, (words) => words.join(' '));

/** The index's words of a parsed (or composed) message. */
export function searchDocumentOf(message: SearchSource): SearchDocument {
  return joined(documentTokens(message));
}

/** Letters and digits of a workspace's tag: 36^8 tags, so two workspaces rarely share one (which costs time, never rows). */
export const WORKSPACE_TAG_LENGTH = 8;

/**
 * The tag SQLite's index puts before every word of a workspace's mail (and a query before every word it looks for):
 * FTS5 keeps its words in one sorted list, so a prefix (`in*`) walks every word that starts with it. Tagged, it walks
 * only the words of the workspace's own mail. A fixed length keeps `tag + word` unambiguous; a hash needs no table.
 */
export function workspaceTag(workspaceId: string): string {
  const head = createHash('sha256').update(workspaceId).digest().readUIntBE(0, 5);
  return head.toString(36).padStart(WORKSPACE_TAG_LENGTH, '0');
}

/** A document's words, each behind the workspace's tag (SQLite's FTS5 row). */
export function taggedDocument(doc: SearchDocument, tag: string): SearchDocument {
  const tagged = (words: string): string => (words === '' ? '' : tag + words.replaceAll(' ', ` ${tag}`));
  return { subject: tagged(doc.subject), from: tagged(doc.from), to: tagged(doc.to), cc: tagged(doc.cc), filename: tagged(doc.filename), body: tagged(doc.body) };
}

/** The fields a query can name (`from:`), each with its PostgreSQL lexeme prefix (a word never holds a `.`). */
export const FIELD_PREFIX = { subject: 's.', from: 'f.', to: 't.', cc: 'c.', filename: 'n.' } as const;
export type SearchField = keyof typeof FIELD_PREFIX;

/** PostgreSQL keeps positions up to 16383 and 256 of them per lexeme (its text search limits). */
const MAX_POSITION = 16_383;
const MAX_POSITIONS_PER_LEXEME = 255;
/** A tsvector may not pass 1 MiB: lexemes stop being added well before (at most 3 bytes a character counted). */
const MAX_VECTOR_BYTES = 768 * 1024;

/** A lexeme's positions, kept as the text the tsvector will hold (`'word':2,9`): one string a lexeme, no arrays. */
interface Lexeme {
  text: string;
  count: number;
  last: number;
}

/** One position per word; fields a step apart, so that a phrase never spans two of them. */
class VectorBuilder {
  private readonly lexemes = new Map<string, Lexeme>();
  private position = 0;
  private bytes = 0;

  add(words: readonly string[], prefix: string | null): void {
    if (words.length === 0) return;
    this.position += 1;
    for (const word of words) {
      this.position = Math.min(this.position + 1, MAX_POSITION);
      this.put(word, this.position);
      if (prefix !== null) this.put(prefix + word, this.position);
    }
  }

  private put(lexeme: string, position: number): void {
    const seen = this.lexemes.get(lexeme);
    if (seen === undefined) {
      if (this.bytes > MAX_VECTOR_BYTES) return;
      this.bytes += 3 * lexeme.length + 8;
      // Words are letters and digits (and a field's prefix), so they need no escapes.
      this.lexemes.set(lexeme, { text: `'${lexeme}':${position}`, count: 1, last: position });
    } else if (seen.count < MAX_POSITIONS_PER_LEXEME && seen.last !== position) {
      seen.text += `,${position}`;
      seen.count += 1;
      seen.last = position;
    }
  }

  /** The tsvector's text form (`'word':1,4 'f.alice':2`). */
  toString(): string {
    const parts: string[] = [];
    for (const lexeme of this.lexemes.values()) parts.push(lexeme.text);
    return parts.join(' ');
  }
}

function vectorOf(tokens: DocumentTokens): string {
  const vector = new VectorBuilder();
  for (const field of Object.keys(FIELD_PREFIX) as SearchField[]) vector.add(tokens[field], FIELD_PREFIX[field]);
  vector.add(tokens.body, null);
  return vector.toString();
}

/**
 * A document as PostgreSQL's `tsvector` text: every word bare (for plain terms), and the words of the named fields
 * again under their field's prefix (for `from:` and the like). Built here rather than by `to_tsvector`, whose
 * parser depends on the database's locale and would split words differently from the query.
 */
export function tsvectorOf(doc: SearchDocument): string {
  return vectorOf(eachField(doc, (words) => (words === '' ? [] : words.split(' '))));
}

/** What the store writes to the index: the words (SQLite's FTS5 row) and their `tsvector` (PostgreSQL). */
export interface SearchEntry {
  document: SearchDocument;
  tsvector: string;
}

/**
 * The entry, made before any store transaction (the store writes the form its database uses): both forms, or with
 * `index` = 'fts5' the FTS5 words alone (`tsvector` left empty), as SQLite stores no `tsvector` and it is a fifth of
 * the work.
 */
export function searchEntryOf(message: SearchSource, index?: 'fts5' | 'tsvector'): SearchEntry {
  const tokens = documentTokens(message);
  return { document: joined(tokens), tsvector: index === 'fts5' ? '' : vectorOf(tokens) };
}

/**
 * Invisible format characters that change how a name reads without showing: the bidi embeddings, overrides and
 * isolates (U+202A–U+202E, U+2066–U+2069) and marks (U+200E, U+200F, U+061C), which turn `invoice‮fdp.exe` into
 * `invoiceexe.pdf` on screen; and the invisible spacers (zero-width space, word joiner and invisible operators,
 * byte order mark, soft hyphen, Mongolian vowel separator, interlinear annotation). Zero-width (non-)joiners stay:
 * Persian, Indic scripts and emoji need them.
 */
export const INVISIBLE_FORMAT = /[\u00ad\u061c\u180e\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\ufff9-\ufffb]/gu;

/** `name` without invisible format characters, as stored and shown for mail that arrived with them. */
export function withoutInvisibleFormat(name: string): string {
  return name.replace(INVISIBLE_FORMAT, '');
}

/** Whether `name` holds an invisible format character (see INVISIBLE_FORMAT). */
export function hasInvisibleFormat(name: string): boolean {
  INVISIBLE_FORMAT.lastIndex = 0;
  const found = INVISIBLE_FORMAT.test(name);
  INVISIBLE_FORMAT.lastIndex = 0;
  return found;
}
