import { PostgresAdapter, sql, type Compilable, type Kysely } from 'kysely';
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
  /**
   * Bytes are read by binary COPY (`copyBinary`, PostgreSQL): a query's rows would bring BYTEA encoded as text.
   * SQLite's driver gives a BLOB as a Buffer.
   */
  binaryCopy: boolean;
}

export const SQLITE: DialectInfo = { name: 'sqlite', supportsSkipLocked: false, supportsRowLocks: false, supportsWritableCte: false, sharedByProcesses: false, fullText: 'fts5', binaryCopy: false };
export const POSTGRES: DialectInfo = { name: 'postgres', supportsSkipLocked: true, supportsRowLocks: true, supportsWritableCte: true, sharedByProcesses: true, fullText: 'tsvector', binaryCopy: true };

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
 * A select run on PostgreSQL as binary COPY (pg-copy-binary.ts): each row arrives as a `BinaryRow`, its fields in the
 * select's order and BYTEA as its own bytes, with no encoding on either side. PostgreSQL only.
 */
export function copyBinary<S>(db: Kysely<S>, query: Compilable<unknown>): Compilable<BinaryRow> & { execute(): Promise<BinaryRow[]> } {
  // Kysely puts a select inside a raw fragment in parentheses itself.
  const copy = sql<BinaryRow>`COPY ${query} TO STDOUT (FORMAT binary)`;
  return { compile: () => copy.compile(db), execute: async () => (await copy.execute(db)).rows };
}
