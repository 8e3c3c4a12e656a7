import { CompiledQuery, type DatabaseConnection, type Dialect, type Driver, type QueryResult } from 'kysely';
import { forwardSavepoints, wrapDriverOf } from './dialect-wrapper.js';
import type { WriteLock } from './write-lock.js';

/** Statements that only read: they run without the lock (WAL readers never wait for the writer). */
const READ_ONLY_TEXT = /^\s*(select|pragma|explain)\b/i;

function readsOnly(query: CompiledQuery): boolean {
  return query.query.kind === 'SelectQueryNode' || (query.query.kind === 'RawNode' && READ_ONLY_TEXT.test(query.sql));
}

/**
 * A SQLite dialect whose writes take the process's write lock (`write-lock.ts`): a transaction takes it
 * before `BEGIN IMMEDIATE` (which claims SQLite's write lock at once, so a transaction that read first
 * can never fail to upgrade with SQLITE_BUSY_SNAPSHOT when another connection committed meanwhile) and
 * gives it back after `COMMIT` or `ROLLBACK`; a write outside a transaction takes it for its statement.
 * Reads take nothing. Connections of one process therefore write one at a time, in the order they asked.
 */
export function withWriteLock(dialect: Dialect, lock: WriteLock): Dialect {
  return wrapDriverOf(dialect, (inner) => wrapDriver(inner, lock));
}

function wrapDriver(inner: Driver, lock: WriteLock): Driver {
  /** Connections in a transaction, which hold the lock until it ends. */
  const holding = new WeakSet<DatabaseConnection>();
  const wrapped = new WeakMap<DatabaseConnection, DatabaseConnection>();

  function giveBack(connection: DatabaseConnection): void {
    if (holding.delete(connection)) lock.release();
  }

  /** The connection Kysely sees: writes outside a transaction take the lock for their statement. */
  function locking(connection: DatabaseConnection): DatabaseConnection {
    let outer = wrapped.get(connection);
    if (outer) return outer;
    const lockedWrite = async <R>(query: CompiledQuery): Promise<QueryResult<R>> => {
      await lock.acquire();
      try {
        return await connection.executeQuery<R>(query);
      } finally {
        lock.release();
      }
    };
    outer = {
      // Not async: a read (every list page) goes straight through, without a promise of its own.
      executeQuery: <R>(query: CompiledQuery) => (holding.has(outer!) || readsOnly(query) ? connection.executeQuery<R>(query) : lockedWrite<R>(query)),
      streamQuery: <R>(query: CompiledQuery, chunkSize?: number) => connection.streamQuery<R>(query, chunkSize),
    };
    wrapped.set(connection, outer);
    return outer;
  }

  const driver: Driver = {
    init: () => inner.init(),
    acquireConnection: async () => locking(await inner.acquireConnection()),
    async beginTransaction(connection) {
      await lock.acquire();
      holding.add(connection);
      try {
        await connection.executeQuery(CompiledQuery.raw('begin immediate'));
      } catch (err) {
        // Kysely rolls back only a transaction that began.
        giveBack(connection);
        throw err;
      }
    },
    async commitTransaction(connection) {
      // A failed COMMIT leaves the transaction open; Kysely then rolls back, which gives the lock back.
      await connection.executeQuery(CompiledQuery.raw('commit'));
      giveBack(connection);
    },
    async rollbackTransaction(connection) {
      try {
        await connection.executeQuery(CompiledQuery.raw('rollback'));
      } finally {
        giveBack(connection);
      }
    },
    releaseConnection: (connection) => inner.releaseConnection(connection),
    destroy: () => inner.destroy(),
  };
  // Savepoints run inside a transaction, which already holds the lock.
  return forwardSavepoints(driver, inner);
}
