import type { Kysely } from 'kysely';

/**
 * A schema with no table. `Kysely<NoTables>` can open a transaction and hand it on, but naming any table on it
 * fails `tsc`: feature services hold this (`Work`) and the stores they call see the same connection or
 * transaction typed over their own tables only.
 */
export type NoTables = Record<never, never>;

/** The pool or an open transaction, as modules hand it to each other. Only a store queries it (through `tablesOf`). */
export type Work = Kysely<NoTables>;

/**
 * The same pool or transaction, typed over one module's own tables. A store calls it with its own module's
 * table interface (lint forbids importing another module's `*.table.ts`), so a query on a table the module does
 * not own fails `tsc`. Kysely's types are invariant in the schema, so this is a cast, made here only.
 */
export function tablesOf<T>(db: Pick<Kysely<unknown>, 'isTransaction' | 'getExecutor'>): Kysely<T> {
  return db as unknown as Kysely<T>;
}

/** `db` as a `Work` handle (any schema): what a store returns to a caller who only passes it on. */
export function asWork(db: Pick<Kysely<unknown>, 'isTransaction' | 'getExecutor'>): Work {
  return db as unknown as Work;
}
