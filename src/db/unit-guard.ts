import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Development and test builds check the rules of group commit as they run (`NODE_ENV=test`, which vitest sets, or
 * `MAILROOM_DEV_ASSERTIONS=1`). Production skips them: tracking the context costs on every asynchronous step.
 */
export const DEV_ASSERTIONS = process.env.NODE_ENV === 'test' || process.env.MAILROOM_DEV_ASSERTIONS === '1';

const insideUnit = new AsyncLocalStorage<true>();

/** Run one unit of group commit, marked so that `assertOutsideUnit` can see it (development and test builds). */
export function runAsUnit<T>(work: () => Promise<T>): Promise<T> {
  return DEV_ASSERTIONS ? insideUnit.run(true, work) : work();
}

/**
 * Called whenever a connection is taken from the pool. A unit of group commit may run twice (its shared transaction
 * fails and it runs again alone), so everything it does must go through the transaction it is given: a statement on
 * another connection would not be rolled back with it, and on SQLite (one connection) it would wait forever for the
 * transaction that waits for it.
 */
export function assertOutsideUnit(): void {
  if (DEV_ASSERTIONS && insideUnit.getStore())
    throw new Error('a unit of group commit took a connection of its own: it must read and write only through the transaction it is given');
}
