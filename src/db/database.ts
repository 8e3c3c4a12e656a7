import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql, type SqliteDatabase } from 'kysely';
import pg from 'pg';
import { withCommitHooks } from './commit-hooks.js';
import { POSTGRES, SQLITE, type DialectInfo } from './dialect.js';
import { withNamedStatements } from './pg-named-statements.js';
import { withImmediateTransactions } from './sqlite-immediate.js';
import { withWriteCoalescing } from './write-coalescing.js';
import type { Database } from './schema.js';

export type Db = Kysely<Database>;

export interface DbHandle {
  db: Db;
  dialect: DialectInfo;
  /** SQLite: the database file, which reader threads open on their own (null in memory and on PostgreSQL). */
  sqliteFile: string | null;
  /** Close every connection. */
  destroy(): Promise<void>;
  /** PostgreSQL: the pool's connections and the callers waiting for one (metrics); absent on SQLite. */
  poolStats?: () => { total: number; idle: number; waiting: number };
}

export const SQLITE_BUSY_TIMEOUT_MS = 5000;
const PG_POOL_SIZE = 10;
const PG_INT8_OID = 20;

const defaultParser = pg.types.getTypeParser.bind(pg.types) as (oid: number, format: 'text' | 'binary') => (value: string) => unknown;
const int8AsNumber = ((oid: number, format: 'text' | 'binary' = 'text') =>
  oid === PG_INT8_OID ? (value: string) => Number(value) : defaultParser(oid, format)) as typeof pg.types.getTypeParser;

/** Distinct SQL texts whose prepared statements are kept per SQLite connection. */
const STATEMENT_CACHE_SIZE = 512;

/**
 * Kysely prepares every query anew; better-sqlite3 statements are reusable, and preparing was a
 * noticeable share of a simple request's CPU (bench/HISTORY.md, decision 165), so keep the recent
 * ones. Kysely runs each statement to completion synchronously on the one connection, so reuse never overlaps.
 */
function withStatementCache(database: SQLite.Database): SqliteDatabase {
  const cache = new Map<string, SQLite.Statement>();
  return {
    close: () => database.close(),
    prepare(text: string) {
      let statement = cache.get(text);
      if (statement) {
        // Refresh recency: Map iteration order is insertion order, so the first key is the oldest.
        cache.delete(text);
      } else {
        statement = database.prepare(text);
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
      }
      cache.set(text, statement);
      return statement;
    },
  };
}

/** The database holds every tenant's mail and sealed secrets: owner read/write only, whatever the umask. */
const OWNER_ONLY = 0o600;

/**
 * Make the SQLite file (and its directory) before SQLite does, mode 0600, and narrow an older file to it. SQLite
 * gives the -wal and -shm files it creates the database file's mode, so they follow; older ones are narrowed after
 * opening.
 */
function ownerOnlyFile(path: string): void {
  mkdirSync(dirname(path), { recursive: true });
  closeSync(openSync(path, 'a', OWNER_ONLY));
  chmodSync(path, OWNER_ONLY);
}

/**
 * Open the database named by a URL: `sqlite:PATH` (better-sqlite3; WAL, busy timeout, foreign keys on)
 * or `postgres://…` (a pg pool; parameterised statements are named prepared statements unless
 * `pgPrepare` is false). Both store times as epoch milliseconds in BIGINT columns; pg is told
 * to parse BIGINT as a JavaScript number (safe up to 2^53, far beyond any timestamp or counter here).
 */
export function createDb(url: string, options: { poolSize?: number; pgPrepare?: boolean } = {}): DbHandle {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    if (path !== ':memory:') ownerOnlyFile(path);
    const database = new SQLite(path);
    database.pragma('journal_mode = WAL');
    if (path !== ':memory:') for (const file of [`${path}-wal`, `${path}-shm`]) if (existsSync(file)) chmodSync(file, OWNER_ONLY);
    // FULL: a commit survives power loss, not only a process crash (accepted mail must never be lost).
    database.pragma('synchronous = FULL');
    database.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
    database.pragma('foreign_keys = ON');
    const db = new Kysely<Database>({ dialect: withCommitHooks(withImmediateTransactions(new SqliteDialect({ database: withStatementCache(database) }))) });
    return { db, dialect: SQLITE, sqliteFile: path === ':memory:' ? null : path, destroy: () => db.destroy() };
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    const pool = new pg.Pool({
      connectionString: url,
      max: options.poolSize ?? PG_POOL_SIZE,
      types: { getTypeParser: int8AsNumber },
    });
    // An idle client that loses its connection must not crash the process; the pool replaces it.
    pool.on('error', () => undefined);
    const dialect = new PostgresDialect({ pool: withNamedStatements(pool, { prepare: options.pgPrepare !== false }) });
    const db = new Kysely<Database>({ dialect: withCommitHooks(withWriteCoalescing(dialect)) });
    const poolStats = () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount });
    return { db, dialect: POSTGRES, sqliteFile: null, destroy: () => db.destroy(), poolStats };
  }
  throw new Error(`unsupported database URL '${url}': use sqlite:PATH or postgres://…`);
}

/** A cheap round trip, for health checks. */
export async function ping(db: Db): Promise<void> {
  await sql`select 1`.execute(db);
}
