import { PostgresAdapter, sql, type Kysely, type RawBuilder } from 'kysely';

/**
 * What differs between the two databases, as capability flags in one place; the rest of the code
 * asks these flags instead of testing which database it runs on.
 */
export interface DialectInfo {
  name: 'sqlite' | 'postgres';
  /** `SELECT … FOR UPDATE SKIP LOCKED` lets many workers claim from one queue without blocking. */
  supportsSkipLocked: boolean;
  /** `SELECT … FOR UPDATE` row locks (PostgreSQL); SQLite serialises whole write transactions instead. */
  supportsRowLocks: boolean;
  /** INSERT/UPDATE/DELETE inside `WITH` (PostgreSQL): two writes in one statement. SQLite allows only SELECT there. */
  supportsWritableCte: boolean;
  /** Any number of processes share the database (PostgreSQL); SQLite is the single-process embedded mode. */
  sharedByProcesses: boolean;
  /** The full-text index: an FTS5 table (SQLite) or a `tsvector` with a GIN index (PostgreSQL). */
  fullText: 'fts5' | 'tsvector';
}

export const SQLITE: DialectInfo = { name: 'sqlite', supportsSkipLocked: false, supportsRowLocks: false, supportsWritableCte: false, sharedByProcesses: false, fullText: 'fts5' };
export const POSTGRES: DialectInfo = { name: 'postgres', supportsSkipLocked: true, supportsRowLocks: true, supportsWritableCte: true, sharedByProcesses: true, fullText: 'tsvector' };

/** The column type for raw bytes: BYTEA on PostgreSQL, BLOB on SQLite (both read back as a Buffer). */
export function binaryColumnType(db: Kysely<unknown>): 'bytea' | 'blob' {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'bytea' : 'blob';
}

/** Whether an error from either driver is a unique-constraint violation. */
export function isUniqueViolation(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const code = (err as { code?: unknown }).code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/**
 * A bytes column as a select expression that reads fast on both drivers. node-postgres receives BYTEA as hex text,
 * and Node decodes hex about six times slower than base64, so on PostgreSQL the column is sent as base64 text
 * (`encode`); `bytesOf` turns either form into a Buffer (src/db/README.md, "Bytes as base64").
 */
export function bytesColumn<S>(db: Kysely<S>, column: string): RawBuilder<Buffer | string> {
  return db.getExecutor().adapter instanceof PostgresAdapter ? sql<string>`encode(${sql.ref(column)}, 'base64')` : sql<Buffer>`${sql.ref(column)}`;
}

/**
 * A bytes column that is mostly 7-bit text (a raw message) as a select expression: on PostgreSQL as BYTEA's escape
 * text, where every byte below 0x80 but NUL and the backslash stands for itself, so a message arrives at its own size
 * (base64 is a third larger) and most need no decoding at all; `textBytesOf` turns either form into a Buffer.
 */
export function textBytesColumn<S>(db: Kysely<S>, column: string): RawBuilder<Buffer | string> {
  return db.getExecutor().adapter instanceof PostgresAdapter ? sql<string>`encode(${sql.ref(column)}, 'escape')` : sql<Buffer>`${sql.ref(column)}`;
}

/** A value read through `textBytesColumn` as a Buffer. */
export const textBytesOf = (value: Buffer | string): Buffer => (typeof value === 'string' ? unescapeBytea(value) : value);

/** BYTEA's escape text as its bytes: `\\` is a backslash, `\ooo` the byte of three octal digits, the rest as it is. */
export function unescapeBytea(text: string): Buffer {
  let at = text.indexOf('\\');
  if (at < 0) return Buffer.from(text, 'latin1');
  const out = Buffer.allocUnsafe(text.length);
  let n = 0;
  let from = 0;
  while (at >= 0) {
    n += out.write(text.slice(from, at), n, 'latin1');
    if (text.charCodeAt(at + 1) === 0x5c) {
      out[n++] = 0x5c;
      from = at + 2;
    } else {
      out[n++] = ((text.charCodeAt(at + 1) - 48) << 6) | ((text.charCodeAt(at + 2) - 48) << 3) | (text.charCodeAt(at + 3) - 48);
      from = at + 4;
    }
    at = text.indexOf('\\', from);
  }
  n += out.write(text.slice(from), n, 'latin1');
  return out.subarray(0, n);
}

/** A value read through `bytesColumn` as a Buffer (base64 text from PostgreSQL; SQLite's Buffer as it is). */
export const bytesOf = (value: Buffer | string): Buffer => (typeof value === 'string' ? Buffer.from(value, 'base64') : value);
