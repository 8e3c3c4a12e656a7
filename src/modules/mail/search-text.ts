/**
 * The text terms of a search query in each database's own full-text syntax: FTS5's query language on
 * SQLite, `tsquery` on PostgreSQL. A term's words are made by the tokenizer that made the index's words
 * (lib/mail-text.ts), so a term of several words (`invoice-2024`, `alice@example.com`) is a phrase of them.
 */
import { FIELD_PREFIX, searchTokens } from '../../lib/mail-text.js';
import type { TextNode } from '../messages/search-query.js';

/** How one database writes text terms and combines them. Every term's words are letters and digits: no escaping. */
export interface TextSyntax {
  /** The term, or null when it has no words (`"!!!"`): such a term matches every message. */
  term(node: TextNode): string | null;
  and(parts: readonly string[]): string;
  or(parts: readonly string[]): string;
  /** `positive` but not `negative`; PostgreSQL also negates alone (`positive` null), FTS5 cannot. */
  andNot(positive: string | null, negative: string): string | null;
}

/**
 * FTS5: `"alice example com"` is a phrase, `{from} : …` limits it to a column, `"invo" *` is a prefix. Every word
 * carries the workspace's tag, as the index's words do (lib/mail-text.ts `workspaceTag`).
 */
export function fts5Syntax(tag: string): TextSyntax {
  return {
    term(node) {
      const words = searchTokens(node.value);
      if (words.length === 0) return null;
      const phrase = `"${words.map((w) => tag + w).join(' ')}"${node.kind === 'prefix' ? ' *' : ''}`;
      return node.field === null ? phrase : `{${node.field}} : ${phrase}`;
    },
    and: (parts) => parts.map((p) => `(${p})`).join(' AND '),
    or: (parts) => parts.map((p) => `(${p})`).join(' OR '),
    andNot: (positive, negative) => (positive === null ? null : `(${positive}) NOT (${negative})`),
  };
}

/** tsquery: `'alice' <-> 'example'`, field words under their prefix (`'f.alice'`), `'invo':*` a prefix. */
export const TSQUERY_SYNTAX: TextSyntax = {
  term(node) {
    const words = searchTokens(node.value);
    if (words.length === 0) return null;
    const prefix = node.field === null ? '' : FIELD_PREFIX[node.field];
    const last = words.length - 1;
    return words.map((w, i) => `'${prefix}${w}'${i === last && node.kind === 'prefix' ? ':*' : ''}`).join(' <-> ');
  },
  and: (parts) => parts.map((p) => `(${p})`).join(' & '),
  or: (parts) => parts.map((p) => `(${p})`).join(' | '),
  andNot: (positive, negative) => (positive === null ? `!(${negative})` : `(${positive}) & !(${negative})`),
};
