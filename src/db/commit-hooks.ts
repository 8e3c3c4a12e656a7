import type { DatabaseConnection, Dialect, Driver } from 'kysely';
import type { Kysely } from 'kysely';
import { forwardSavepoints, wrapDriverOf } from './dialect-wrapper.js';
import { assertOutsideUnit } from './unit-guard.js';

/** Callbacks waiting for the open transaction of a connection to commit. */
const waiting = new WeakMap<DatabaseConnection, Array<() => void>>();

function take(connection: DatabaseConnection): Array<() => void> {
  const hooks = waiting.get(connection) ?? [];
  waiting.delete(connection);
  return hooks;
}

function wrapDriver(inner: Driver): Driver {
  const driver: Driver = {
    init: () => inner.init(),
    acquireConnection: () => {
      assertOutsideUnit();
      return inner.acquireConnection();
    },
    async beginTransaction(connection, settings) {
      waiting.delete(connection);
      await inner.beginTransaction(connection, settings);
    },
    async commitTransaction(connection) {
      try {
        await inner.commitTransaction(connection);
      } catch (err) {
        waiting.delete(connection);
        throw err;
      }
      for (const hook of take(connection)) {
        try {
          hook();
        } catch {
          // A hook is a notification (a worker wake-up); the commit it follows has happened regardless.
        }
      }
    },
    async rollbackTransaction(connection) {
      waiting.delete(connection);
      await inner.rollbackTransaction(connection);
    },
    releaseConnection: (connection) => inner.releaseConnection(connection),
    destroy: () => inner.destroy(),
  };
  return forwardSavepoints(driver, inner);
}

/**
 * A dialect whose driver runs `afterCommit` callbacks once a transaction has committed (and drops
 * them when it rolls back), as Django's `on_commit` does: work done for another process or another
 * connection (a worker's claim) must not start before the rows it needs are visible.
 */
export function withCommitHooks(dialect: Dialect): Dialect {
  return wrapDriverOf(dialect, wrapDriver);
}

/**
 * Call `hook` after the transaction `db` belongs to commits; never if it rolls back. Outside a
 * transaction (each statement commits on its own) it is called on the next turn of the event loop.
 */
export async function afterCommit(db: Pick<Kysely<unknown>, 'isTransaction' | 'getExecutor'>, hook: () => void): Promise<void> {
  if (!db.isTransaction) {
    setImmediate(hook);
    return;
  }
  await db.getExecutor().provideConnection(async (connection) => {
    const hooks = waiting.get(connection);
    if (hooks) hooks.push(hook);
    else waiting.set(connection, [hook]);
  });
}
