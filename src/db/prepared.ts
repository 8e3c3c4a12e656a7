import { createQueryId, type CompiledQuery, type Compilable, type Insertable, type Kysely, type Transaction } from 'kysely';
import type { Database } from './schema.js';
import { deferrableWrite } from './write-coalescing.js';

/**
 * Statements of a fixed shape, built and compiled by Kysely once and afterwards run with new values.
 *
 * Kysely builds an operation tree, freezes it and compiles it to SQL on every call, which costs more
 * than SQLite needs to run a small statement (decision 165; bench/HISTORY.md). The hot paths (SMTP ingest stores a message
 * with about ten statements, a send with about as many) run statements whose SQL text never changes,
 * so the first compilation of each shape is kept and only the values are bound anew. Kysely still writes
 * every statement (the same dialect, quoting and placeholders); nothing here writes SQL by hand. The kept
 * compilation keeps its operation tree too, so write coalescing (db/write-coalescing.ts) can read and
 * combine it; the tree's own values are those of its first compilation (or placeholder markers), which
 * nothing executes: only the kept text runs, with the new values. Kysely has no prepared-query API,
 * hence this small cache.
 */

/** `kept` (its tree and text) with new values bound. */
function rebound(kept: CompiledQuery, parameters: readonly unknown[]): CompiledQuery {
  return { query: kept.query, queryId: createQueryId(), sql: kept.sql, parameters };
}

/** The first compilation per shape, per dialect: the adapter object is shared by a Kysely instance and its transactions. */
const compilations = new WeakMap<object, Map<string, CompiledQuery | null>>();

function compilationsFor<S>(db: Kysely<S>): Map<string, CompiledQuery | null> {
  const adapter = db.getExecutor().adapter;
  let map = compilations.get(adapter);
  if (!map) {
    map = new Map();
    compilations.set(adapter, map);
  }
  return map;
}

type Row<S, T extends keyof S> = Insertable<S[T]>;

/** The defined columns of the first row, when every row has exactly those (else null: not a fixed shape). */
function columnsOf(rows: readonly Record<string, unknown>[]): string[] | null {
  const first = rows[0]!;
  const columns = Object.keys(first).filter((c) => first[c] !== undefined);
  for (const row of rows) {
    let defined = 0;
    for (const key of Object.keys(row)) {
      if (row[key] === undefined) continue;
      if (!columns.includes(key)) return null;
      defined++;
    }
    if (defined !== columns.length) return null;
  }
  return columns;
}

function valuesOf(rows: readonly Record<string, unknown>[], columns: readonly string[]): unknown[] {
  const values: unknown[] = [];
  for (const row of rows) for (const column of columns) values.push(row[column]);
  return values;
}

const sameValues = (a: readonly unknown[], b: readonly unknown[]) => a.length === b.length && a.every((v, i) => v === b[i]);

/**
 * INSERT plain rows (values only, no expressions), optionally ignoring conflicts. The first insert of a
 * shape (table, columns, row count, conflict rule) goes through Kysely and is kept when the
 * bound values are exactly the rows' values in column order; later ones bind new values to that text.
 * Inside a PostgreSQL transaction the insert may be sent together with the transaction's next writes
 * (db/write-coalescing.ts): a constraint it breaks fails the transaction at its next statement or commit.
 */
export async function insertRows<S, T extends keyof S & string>(db: Kysely<S> | Transaction<S>, table: T, rows: readonly NoInfer<Row<S, T>>[], options: { ignoreConflicts?: boolean } = {}): Promise<void> {
  if (rows.length === 0) return;
  // One statement binds at most MAX_BOUND_VALUES: more rows go in several statements of the same shape.
  const perStatement = Math.max(1, Math.floor(MAX_BOUND_VALUES / Object.keys(rows[0]!).length));
  for (let start = 0; start < rows.length; start += perStatement) await insertChunk(db, table, rows.length <= perStatement ? rows : rows.slice(start, start + perStatement), options);
}

/**
 * Values bound in one INSERT: SQLite refuses more than 32,766 (SQLITE_MAX_VARIABLE_NUMBER) and PostgreSQL
 * more than 65,535 parameters in a statement ("too many SQL variables"), so a long row list is split below both.
 */
export const MAX_BOUND_VALUES = 16_000;

async function insertChunk<S, T extends keyof S & string>(db: Kysely<S> | Transaction<S>, table: T, rows: readonly Row<S, T>[], options: { ignoreConflicts?: boolean }): Promise<void> {
  const plain = rows as readonly Record<string, unknown>[];
  const columns = columnsOf(plain);
  const build = () => {
    // Generic over the schema, which Kysely's builder types cannot follow: the caller's types checked the rows.
    const query = (db as unknown as Kysely<Record<string, Record<string, unknown>>>).insertInto(table).values(rows);
    return options.ignoreConflicts ? query.onConflict((oc) => oc.doNothing()) : query;
  };
  if (!columns) {
    await build().execute();
    return;
  }
  const key = `insert ${table} ${rows.length} ${options.ignoreConflicts ? 'ignore' : 'fail'} ${columns.join(',')}`;
  const cache = compilationsFor(db);
  const values = valuesOf(plain, columns);
  const kept = cache.get(key);
  if (kept) {
    await db.executeQuery(deferrableWrite(rebound(kept, values)));
    return;
  }
  const compiled = build().compile();
  // Keep it only if binding the values ourselves gives exactly what Kysely bound.
  if (kept === undefined) cache.set(key, sameValues(compiled.parameters, values) ? compiled : null);
  await db.executeQuery(deferrableWrite(compiled));
}

/** Named placeholders while a prepared query is built: typed as the column's value, they are marker strings. */
export interface Param {
  <V>(name: string): V;
  /** One placeholder per element of the array parameter `name` (an IN list); each length is its own shape. */
  list<V>(name: string): V[];
  /** Whether the parameter `name` is given (not undefined): an optional filter. Each combination is its own shape. */
  has(name: string): boolean;
}

const MARKER = '\u0000mailroom-param:';

/** A bound value of a prepared query: a named parameter (an element of an array one), or a value compiled into it. */
type Slot = { name: string; index: number | null } | { name: null; value: unknown };

interface Prepared {
  compiled: CompiledQuery;
  slots: Slot[];
}

/** Which parameters are given, and the lengths of the array ones: queries differing in them have different SQL. */
function shapeOf(params: Record<string, unknown>): string {
  let shape = '';
  for (const name in params) {
    const value = params[name];
    if (value === undefined) continue;
    shape += Array.isArray(value) ? `${name}:${value.length};` : `${name};`;
  }
  return shape;
}

/** Binds `params` to the statement `build` gives, compiled once per shape (see `preparedQuery`). */
function preparedStatement<S, P extends Record<string, unknown>, O>(build: (db: Kysely<S>, param: Param) => Compilable<O>): (db: Kysely<S>, params: P) => CompiledQuery<O> {
  const cache = new WeakMap<object, Map<string, Prepared>>();
  return (db, params) => {
    const adapter = db.getExecutor().adapter;
    let shapes = cache.get(adapter);
    if (!shapes) {
      shapes = new Map();
      cache.set(adapter, shapes);
    }
    const shape = shapeOf(params);
    let entry = shapes.get(shape);
    if (!entry) {
      const param = (<V>(name: string) => `${MARKER}${name}` as V) as Param;
      param.list = <V>(name: string) => (params[name] as unknown[]).map((_, i) => `${MARKER}${name}#${i}` as V);
      param.has = (name: string) => params[name] !== undefined;
      const query = build(db, param).compile();
      const slots = query.parameters.map((value): Slot => {
        if (typeof value !== 'string' || !value.startsWith(MARKER)) return { name: null, value };
        const [name, index] = value.slice(MARKER.length).split('#') as [string, string | undefined];
        return { name, index: index === undefined ? null : Number(index) };
      });
      entry = { compiled: query, slots };
      shapes.set(shape, entry);
    }
    const values = entry.slots.map((slot) => {
      if (slot.name === null) return slot.value;
      const value = params[slot.name];
      return slot.index === null ? value : (value as unknown[])[slot.index];
    });
    return rebound(entry.compiled, values);
  };
}

/**
 * A query whose shape is fixed and whose values are named parameters: `build` is called once per
 * dialect (and per set of given parameters and length of each array parameter) with `param(name)`
 * markers in place of the values, and `param.has(name)` to leave out an optional condition;
 * the compilation is kept and each call binds `params` by name. Values written literally in `build`
 * (a LIMIT) stay as compiled.
 */
export function preparedQuery<P extends Record<string, unknown>, O, S = Database>(build: (db: Kysely<S>, param: Param) => Compilable<O>): (db: Kysely<S>, params: P) => Promise<O[]> {
  const bind = preparedStatement<S, P, O>(build);
  return async (db, params) => (await db.executeQuery<O>(bind(db, params))).rows;
}

/**
 * A prepared write (as `preparedQuery`) whose caller reads no result: inside a PostgreSQL transaction
 * it may be sent together with the transaction's next writes (db/write-coalescing.ts).
 */
export function preparedWrite<P extends Record<string, unknown>, S = Database>(build: (db: Kysely<S>, param: Param) => Compilable<unknown>): (db: Kysely<S>, params: P) => Promise<void> {
  const bind = preparedStatement<S, P, unknown>(build);
  return async (db, params) => {
    await db.executeQuery(deferrableWrite(bind(db, params)));
  };
}
