import { CompiledQuery, type Dialect, type Driver } from 'kysely';
import { forwardSavepoints, wrapDriverOf } from './dialect-wrapper.js';

/**
 * A SQLite dialect whose transactions begin `IMMEDIATE`, taking the database's write lock at `BEGIN`, where
 * `busy_timeout` waits for another writer. Kysely's `BEGIN` is deferred: a transaction that read and then writes
 * would need to upgrade its snapshot, and if another connection (a CLI command, another role's process) committed
 * in between, SQLite fails that write at once with SQLITE_BUSY_SNAPSHOT instead of waiting.
 */
export function withImmediateTransactions(dialect: Dialect): Dialect {
  return wrapDriverOf(dialect, immediate);
}

function immediate(inner: Driver): Driver {
  const driver: Driver = {
    init: () => inner.init(),
    acquireConnection: () => inner.acquireConnection(),
    async beginTransaction(connection) {
      await connection.executeQuery(CompiledQuery.raw('begin immediate'));
    },
    commitTransaction: (connection) => inner.commitTransaction(connection),
    rollbackTransaction: (connection) => inner.rollbackTransaction(connection),
    releaseConnection: (connection) => inner.releaseConnection(connection),
    destroy: () => inner.destroy(),
  };
  return forwardSavepoints(driver, inner);
}
