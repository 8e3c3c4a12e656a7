import { PostgresAdapter, sql, type Compilable, type Kysely, type RawBuilder } from 'kysely';
import type { BinaryRow } from './pg-copy-binary.js';

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
 * A select run on PostgreSQL as binary COPY (pg-copy-binary.ts): each row arrives as a `BinaryRow`, its fields in the
 * select's order and BYTEA as its own bytes, with no encoding on either side. PostgreSQL only.
 */
export function copyBinary<S>(db: Kysely<S>, query: Compilable<unknown>): Compilable<BinaryRow> & { execute(): Promise<BinaryRow[]> } {
  // Kysely puts a select inside a raw fragment in parentheses itself.
  const copy = sql<BinaryRow>`COPY ${query} TO STDOUT (FORMAT binary)`;
  return { compile: () => copy.compile(db), execute: async () => (await copy.execute(db)).rows };
}

/** A value read through `bytesColumn` as a Buffer (base64 text from PostgreSQL; SQLite's Buffer as it is). */
export const bytesOf = (value: Buffer | string): Buffer => (typeof value === 'string' ? Buffer.from(value, 'base64') : value);
