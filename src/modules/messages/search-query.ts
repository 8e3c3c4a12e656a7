/**
 * The search query language: Gmail's operators, parsed into a typed tree that the mail store's search walks.
 * Text (words, phrases, prefixes, per-field text) goes to the full-text index; column filters (folder, label, read,
 * mailbox, dates, attachments) become indexed conditions. Queries are attacker input: the parse is one pass over the
 * characters and one over the tokens, with bounds on length, terms and nesting, and fails only with `invalid_query`.
 */
import { DomainError } from '../../lib/errors.js';
import { foldCase } from '../../lib/mail-text.js';
export { unaccent } from '../../lib/mail-text.js';
import { FOLDERS, LABEL_PATTERN, type Folder } from './message.types.js';

/** Characters (Unicode code points) in a query. */
export const MAX_QUERY_LENGTH = 1000;
/** Words, phrases, prefixes and operators in a query. */
export const MAX_QUERY_TERMS = 50;
/** Parentheses inside parentheses. */
export const MAX_QUERY_DEPTH = 10;
/** An address is at most 254 characters (RFC 5321 §4.5.3.1.3, less the angle brackets). */
const MAX_MAILBOX_LENGTH = 254;

/** The fields a text term can be limited to (`from:alice`); `null` on a term means every text field and the body. */
export type TextField = 'from' | 'to' | 'cc' | 'subject' | 'filename';

/** Text values are NFKC + lower case; accents are kept (apply `unaccent` where the index does). */
export type TextNode =
  | { kind: 'text'; field: TextField | null; value: string }
  | { kind: 'phrase'; field: TextField | null; value: string }
  | { kind: 'prefix'; field: TextField | null; value: string };

/**
 * Column filters. Dates are UTC midnights as ISO instants: `after` is inclusive (on or after the day),
 * `before` exclusive (before the day), as in Gmail.
 */
export type FilterNode =
  | { kind: 'filter'; filter: 'folder'; value: Folder }
  | { kind: 'filter'; filter: 'label'; value: string }
  | { kind: 'filter'; filter: 'read'; value: boolean }
  | { kind: 'filter'; filter: 'mailbox'; value: string }
  | { kind: 'filter'; filter: 'from_address'; value: string }
  | { kind: 'filter'; filter: 'after' | 'before'; value: string }
  | { kind: 'filter'; filter: 'has_attachment' };

/** `and` and `or` have two or more children, never a child of their own kind (they are flattened). */
export type SearchNode =
  | TextNode
  | FilterNode
  | { kind: 'and'; children: SearchNode[] }
  | { kind: 'or'; children: SearchNode[] }
  | { kind: 'not'; child: SearchNode };

export type SearchQuery = SearchNode;

/** A malformed query: `invalid_query` (400), with the 0-based code point where the problem is. */
export class SearchQueryError extends DomainError {
  override readonly position: number;

  constructor(reason: string, position: number) {
    super('invalid', 'invalid_query', `${reason} at position ${position}`);
    this.name = 'SearchQueryError';
    this.position = position;
  }
}

export const isTextNode = (node: SearchNode): node is TextNode =>
  node.kind === 'text' || node.kind === 'phrase' || node.kind === 'prefix';

/** Whether some text term of the query passes `pred`. */
export function someTextTerm(node: SearchNode, pred: (term: TextNode) => boolean): boolean {
  if (isTextNode(node)) return pred(node);
  if (node.kind === 'and' || node.kind === 'or') return node.children.some((c) => someTextTerm(c, pred));
  if (node.kind === 'not') return someTextTerm(node.child, pred);
  return false;
}

/** Whether the query needs the full-text index at all (`in:inbox is:unread` does not). */
export const containsText = (node: SearchNode): boolean => someTextTerm(node, () => true);

const TEXT_FIELDS: ReadonlySet<string> = new Set<TextField>(['from', 'to', 'cc', 'subject', 'filename']);
const OPERATORS: ReadonlySet<string> = new Set([...TEXT_FIELDS, 'has', 'is', 'label', 'in', 'mailbox', 'before', 'after']);

type Token =
  | { type: 'lparen' | 'rparen' | 'or' | 'and' | 'neg' | 'end'; pos: number }
  | { type: 'word' | 'phrase'; pos: number; raw: string }
  | { type: 'op'; pos: number; name: string; raw: string; quoted: boolean; valuePos: number };

const isSpace = (c: string): boolean => /^\s$/u.test(c);
const isBoundary = (c: string): boolean => c === '(' || c === ')' || c === '"' || isSpace(c);
const normalize = foldCase;

/** The query as code points, refused when too long or when it holds a control character or a lone surrogate. */
function codePoints(text: string): string[] {
  // Two UTF-16 units at most per code point: a longer string is too long without splitting all of it.
  const chars = Array.from(text.length > 2 * MAX_QUERY_LENGTH ? text.slice(0, 2 * MAX_QUERY_LENGTH + 2) : text);
  if (chars.length > MAX_QUERY_LENGTH) throw new SearchQueryError(`the query is longer than ${MAX_QUERY_LENGTH} characters`, MAX_QUERY_LENGTH);
  const bad = chars.findIndex((c) => /^[\p{Cc}\p{Cs}]$/u.test(c) && !isSpace(c));
  if (bad >= 0) throw new SearchQueryError('a control character', bad);
  return chars;
}

/** The index of the quote that closes the one at `open`. */
function closingQuote(chars: readonly string[], open: number): number {
  for (let i = open + 1; i < chars.length; i++) if (chars[i] === '"') return i;
  throw new SearchQueryError('unterminated quote', open);
}

/** A run of characters up to a space, a parenthesis or a quote: a word, `OR`/`AND`, or `operator:value`. */
function lexRun(chars: readonly string[], start: number): [Token, number] {
  let end = start;
  let colon = -1;
  for (; end < chars.length && !isBoundary(chars[end]!); end++) if (colon < 0 && chars[end] === ':') colon = end;
  const raw = chars.slice(start, end).join('');
  if (raw === 'OR' || raw === 'AND') return [{ type: raw === 'OR' ? 'or' : 'and', pos: start }, end];
  const name = colon > start ? chars.slice(start, colon).join('').toLowerCase() : '';
  if (!OPERATORS.has(name)) return [{ type: 'word', pos: start, raw }, end];
  if (colon + 1 < end) {
    return [{ type: 'op', pos: start, name, raw: chars.slice(colon + 1, end).join(''), quoted: false, valuePos: colon + 1 }, end];
  }
  if (chars[end] === '"') {
    const close = closingQuote(chars, end);
    return [{ type: 'op', pos: start, name, raw: chars.slice(end + 1, close).join(''), quoted: true, valuePos: end }, close + 1];
  }
  throw new SearchQueryError(`'${name}:' needs a value`, start);
}

/** Tokens on demand, so that the first problem from the left is the one reported, lexical or not. */
class Lexer {
  private i = 0;
  private ahead: Token | undefined;

  constructor(private readonly chars: readonly string[]) {}

  peek(): Token {
    return (this.ahead ??= this.read());
  }

  next(): Token {
    const token = this.peek();
    this.ahead = undefined;
    return token;
  }

  private read(): Token {
    const chars = this.chars;
    while (this.i < chars.length && isSpace(chars[this.i]!)) this.i++;
    const pos = this.i;
    const c = chars[pos];
    if (c === undefined) return { type: 'end', pos };
    if (c === '(' || c === ')') {
      this.i++;
      return { type: c === '(' ? 'lparen' : 'rparen', pos };
    }
    if (c === '"') {
      const close = closingQuote(chars, pos);
      this.i = close + 1;
      return { type: 'phrase', pos, raw: chars.slice(pos + 1, close).join('') };
    }
    if (c === '-') {
      if (pos + 1 >= chars.length || isSpace(chars[pos + 1]!)) throw new SearchQueryError("'-' must be followed by a term", pos);
      this.i++;
      return { type: 'neg', pos };
    }
    const [token, end] = lexRun(chars, pos);
    this.i = end;
    return token;
  }
}

/** `a AND b` and `a b` alike: a list of `or` expressions becomes one node. */
function combine(kind: 'and' | 'or', nodes: SearchNode[]): SearchNode {
  const children = nodes.flatMap((n) => (n.kind === kind ? n.children : [n]));
  return children.length === 1 ? children[0]! : { kind, children };
}

/** A whole address: one `@`, no space, a domain of two labels or more (`alice@example` is still being typed). */
const WHOLE_ADDRESS = /^[^\s@]+@[^\s@.]+(?:\.[^\s@.]+)+$/u;

/**
 * `from:` with a whole address (`from:alice@example.com`, quoted or not) is the sender's address, compared whole and
 * without case: not `bob.alice@example.com`, nor a display name that spells the address. Other `from:` values stay
 * words (`from:example.com` is every sender there).
 */
function fieldTerm(node: TextNode): TextNode | FilterNode {
  if (node.field !== 'from' || node.kind === 'prefix' || !WHOLE_ADDRESS.test(node.value)) return node;
  return { kind: 'filter', filter: 'from_address', value: node.value };
}

function textNode(field: TextField | null, raw: string, quoted: boolean, pos: number): TextNode {
  if (quoted) {
    const value = normalize(raw).trim().split(/\s+/u).join(' ');
    if (value === '') throw new SearchQueryError('empty phrase', pos);
    return { kind: 'phrase', field, value };
  }
  const value = normalize(raw);
  if (!value.endsWith('*')) return { kind: 'text', field, value };
  let end = value.length;
  while (end > 0 && value[end - 1] === '*') end--;
  const stem = value.slice(0, end);
  if (stem === '') throw new SearchQueryError("'*' must follow a word", pos);
  return { kind: 'prefix', field, value: stem };
}

/** Gmail's dates, read as UTC days: `2026-11-21` or `2026/11/21` (month and day may have one digit). */
function dateValue(text: string, pos: number): string {
  const match = /^(\d{4})([-/])(\d{1,2})\2(\d{1,2})$/u.exec(text);
  const [year, month, day] = match ? [Number(match[1]), Number(match[3]), Number(match[4])] : [0, 0, 0];
  const at = new Date(Date.UTC(year, month - 1, day));
  if (!match || at.getUTCFullYear() !== year || at.getUTCMonth() !== month - 1 || at.getUTCDate() !== day) {
    throw new SearchQueryError(`invalid date '${text}' (write YYYY-MM-DD or YYYY/MM/DD)`, pos);
  }
  return at.toISOString();
}

function filterNode(name: string, raw: string, pos: number): FilterNode {
  const value = normalize(raw).trim();
  switch (name) {
    case 'in':
      if ((FOLDERS as readonly string[]).includes(value)) return { kind: 'filter', filter: 'folder', value: value as Folder };
      throw new SearchQueryError(`unknown folder '${value}' (one of ${FOLDERS.join(', ')})`, pos);
    case 'label':
      if (LABEL_PATTERN.test(value)) return { kind: 'filter', filter: 'label', value };
      throw new SearchQueryError(`invalid label '${value}' (1 to 64 of a-z, 0-9, _ . : -)`, pos);
    case 'is':
      if (value === 'read' || value === 'unread') return { kind: 'filter', filter: 'read', value: value === 'read' };
      throw new SearchQueryError(`unknown 'is:${value}' (is:read or is:unread)`, pos);
    case 'has':
      if (value === 'attachment') return { kind: 'filter', filter: 'has_attachment' };
      throw new SearchQueryError(`unknown 'has:${value}' (has:attachment)`, pos);
    case 'mailbox':
      if (value !== '' && value.length <= MAX_MAILBOX_LENGTH) return { kind: 'filter', filter: 'mailbox', value };
      throw new SearchQueryError(`a mailbox is 1 to ${MAX_MAILBOX_LENGTH} characters`, pos);
    default:
      return { kind: 'filter', filter: name === 'before' ? 'before' : 'after', value: dateValue(value, pos) };
  }
}

/**
 * Recursive descent, lowest precedence first: adjacency (and `AND`) < `OR` < `-` < a term or `( … )`; Gmail binds
 * `OR` tighter than adjacency, so `a b OR c` is `a AND (b OR c)`. Recursion is bounded by MAX_QUERY_DEPTH.
 */
class Parser {
  private depth = 0;
  private terms = 0;

  constructor(private readonly tokens: Lexer) {}

  parse(): SearchQuery {
    const node = this.sequence();
    const next = this.peek();
    if (next.type === 'rparen') throw new SearchQueryError("unmatched ')'", next.pos);
    if (node === undefined) throw new SearchQueryError('empty query', 0);
    return node;
  }

  private peek(): Token {
    return this.tokens.peek();
  }

  private next(): Token {
    return this.tokens.next();
  }

  /** Terms side by side, up to the end or a `)`; undefined when there is none. */
  private sequence(): SearchNode | undefined {
    const nodes: SearchNode[] = [];
    for (let token = this.peek(); token.type !== 'end' && token.type !== 'rparen'; token = this.peek()) {
      if (token.type === 'and') {
        this.next();
        if (nodes.length === 0) throw new SearchQueryError("'AND' needs a term before it", token.pos);
        if (!this.startsTerm(this.peek())) throw new SearchQueryError("'AND' needs a term after it", token.pos);
      }
      nodes.push(this.disjunction());
    }
    return nodes.length === 0 ? undefined : combine('and', nodes);
  }

  private disjunction(): SearchNode {
    const nodes = [this.unary()];
    while (this.peek().type === 'or') {
      const or = this.next();
      if (!this.startsTerm(this.peek())) throw new SearchQueryError("'OR' needs a term after it", or.pos);
      nodes.push(this.unary());
    }
    return combine('or', nodes);
  }

  private unary(): SearchNode {
    const token = this.peek();
    if (token.type !== 'neg') return this.primary();
    this.next();
    const next = this.peek();
    if (next.type === 'neg' || !this.startsTerm(next)) throw new SearchQueryError("'-' must be followed by a term", token.pos);
    return { kind: 'not', child: this.primary() };
  }

  private startsTerm(token: Token): boolean {
    return token.type === 'word' || token.type === 'phrase' || token.type === 'op' || token.type === 'lparen' || token.type === 'neg';
  }

  private primary(): SearchNode {
    const token = this.next();
    switch (token.type) {
      case 'lparen':
        return this.group(token.pos);
      case 'word':
      case 'phrase':
        this.count(token.pos);
        return textNode(null, token.raw, token.type === 'phrase', token.pos);
      case 'op':
        this.count(token.pos);
        if (TEXT_FIELDS.has(token.name)) return fieldTerm(textNode(token.name as TextField, token.raw, token.quoted, token.valuePos));
        return filterNode(token.name, token.raw, token.valuePos);
      case 'or':
      case 'and':
        throw new SearchQueryError(`'${token.type.toUpperCase()}' needs a term before it`, token.pos);
      case 'rparen':
        throw new SearchQueryError("unmatched ')'", token.pos);
      default:
        // `neg` is taken by unary() and `end` is never asked for a term; kept total for the type.
        throw new SearchQueryError('a term is missing', token.pos);
    }
  }

  private group(open: number): SearchNode {
    if (++this.depth > MAX_QUERY_DEPTH) throw new SearchQueryError(`parentheses nested deeper than ${MAX_QUERY_DEPTH}`, open);
    const node = this.sequence();
    const close = this.next();
    if (close.type !== 'rparen') throw new SearchQueryError("unclosed '('", open);
    if (node === undefined) throw new SearchQueryError('empty parentheses', open);
    this.depth--;
    return node;
  }

  private count(pos: number): void {
    if (++this.terms > MAX_QUERY_TERMS) throw new SearchQueryError(`more than ${MAX_QUERY_TERMS} terms`, pos);
  }
}

/**
 * Parse a search query (Gmail's language; docs/api.md "Search queries"). Throws only SearchQueryError
 * (`invalid_query`, with the position of the problem).
 */
export function parseSearchQuery(text: string): SearchQuery {
  if (typeof text !== 'string') throw new SearchQueryError('the query is not text', 0);
  return new Parser(new Lexer(codePoints(text))).parse();
}
