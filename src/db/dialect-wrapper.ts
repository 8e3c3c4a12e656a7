import type { Dialect, Driver } from 'kysely';

/** `dialect` with its driver wrapped by `wrap` (the commit hooks, SQLite's immediate transactions, write coalescing). */
export function wrapDriverOf(dialect: Dialect, wrap: (inner: Driver) => Driver): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createDriver: () => wrap(dialect.createDriver()),
    createIntrospector: (db) => dialect.createIntrospector(db),
    createQueryCompiler: () => dialect.createQueryCompiler(),
  };
}

/**
 * Give `driver` the savepoint methods `inner` has, unchanged. Kysely asks whether a driver has
 * savepoints at all, so only those the inner one has are forwarded.
 */
export function forwardSavepoints(driver: Driver, inner: Driver): Driver {
  if (inner.savepoint) driver.savepoint = inner.savepoint.bind(inner);
  if (inner.rollbackToSavepoint) driver.rollbackToSavepoint = inner.rollbackToSavepoint.bind(inner);
  if (inner.releaseSavepoint) driver.releaseSavepoint = inner.releaseSavepoint.bind(inner);
  return driver;
}
