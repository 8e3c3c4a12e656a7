import { CompiledQuery, type DatabaseConnection, type Dialect, type Driver, type QueryResult } from 'kysely';
import { wrapDriverOf } from './dialect-wrapper.js';

/**
 * Fewer round trips to PostgreSQL for the writes of a transaction whose outcome nobody reads.
 *
 * Storing a message is about ten statements, most of them INSERTs whose results the caller never
 * looks at; on PostgreSQL each one is a round trip, which costs the client CPU, the server CPU and the
 * wait (decision 170; bench/HISTORY.md). A statement marked with `deferrableWrite` is not sent at once inside a
 * transaction: it waits on its connection, and the writes that wait together are sent as one
 * statement of data-modifying CTEs (`WITH w1 AS (INSERT …), w2 AS (…) INSERT …`), right before the
 * next statement that is not such a write, or before COMMIT. Every other statement still runs in
 * the order it was issued, after all writes issued before it, so a transaction reads its own writes
 * exactly as before. What changes: a deferred write's error (a constraint it breaks) is raised by the
 * statement that flushes it, inside the same transaction, which then fails as a whole.
 *
 * The next statement may even carry the waiting writes itself, as CTEs in front of it, saving their
 * round trip as well: when it names none of their tables (so it cannot read a row they change; the
 * sub-statements of one statement see one snapshot) and holds no literal. A read of other tables, or a
 * lease check on `jobs` after writes to `outbound` and `events`, goes out with the writes before it;
 * a read of a table just written still waits for them, as above.
 *
 * Sub-statements of one statement share a snapshot and cannot see each other's rows, and PostgreSQL
 * leaves it undefined which of two changes to one row in one statement wins. Writes that wait
 * together therefore always touch different tables (a second write to a table flushes the first).
 * Foreign keys are checked at the end of the whole statement, so a message row and its thread may be
 * inserted in the same one. SQLite has no round trips to save: there every statement runs at once.
 * PostgreSQL's extended protocol could pipeline instead, but node-postgres does not (hence by hand).
 */

/** Statements whose callers read neither rows nor counts back (see `deferrableWrite`). */
const deferrable = new WeakSet<CompiledQuery>();

/**
 * Mark a write (INSERT, UPDATE, DELETE without RETURNING) as one whose caller reads no result: inside
 * a PostgreSQL transaction it may be sent later, together with others (see above). Returns the query.
 */
export function deferrableWrite<Q extends CompiledQuery>(query: Q): Q {
  deferrable.add(query);
  return query;
}

/** Most parameters of one combined statement (PostgreSQL allows 65,535). */
const MAX_PARAMETERS = 30_000;
/** The table a plain write statement changes, from the text Kysely compiled. */
const WRITE_TARGET = /^(?:insert into|update|delete from) "([^"]+)"/;
const EMPTY: QueryResult<never> = { rows: [] };

interface Waiting {
  table: string;
  sql: string;
  parameters: readonly unknown[];
}

interface State {
  inner: DatabaseConnection;
  /** Writes waiting to be sent; null outside a transaction. */
  waiting: Waiting[] | null;
}

/** Kysely's PostgreSQL placeholders are $1…$n; no string literal can hold one (see `waitable`). */
function renumber(sql: string, offset: number): string {
  return offset === 0 ? sql : sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`);
}

/** The table of a write that may wait, or null: a statement with literals or RETURNING runs at once. */
function waitable(query: CompiledQuery): string | null {
  if (!deferrable.has(query) || query.sql.includes("'") || /\breturning\b/i.test(query.sql)) return null;
  return WRITE_TARGET.exec(query.sql)?.[1] ?? null;
}

/** The waiting writes as one statement: CTEs in front of `carrier`, or in front of the last write. */
function combine(writes: readonly Waiting[], carrier?: CompiledQuery): CompiledQuery {
  const parameters: unknown[] = [];
  const parts = writes.map((write) => {
    const text = renumber(write.sql, parameters.length);
    parameters.push(...write.parameters);
    return text;
  });
  let main: string;
  if (carrier) {
    main = renumber(carrier.sql, parameters.length);
    parameters.push(...carrier.parameters);
  } else {
    main = parts.pop()!;
  }
  const ctes = parts.map((text, i) => `mr_w${i} as (${text})`).join(', ');
  if (ctes === '') return CompiledQuery.raw(main, parameters);
  // A statement with CTEs of its own gets the writes as its first ones.
  const sql = /^with\s/i.test(main) ? `with ${ctes}, ${main.replace(/^with\s+/i, '')}` : `with ${ctes} ${main}`;
  return CompiledQuery.raw(sql, parameters);
}

async function flush(state: State): Promise<void> {
  const writes = state.waiting;
  if (!writes || writes.length === 0) return;
  state.waiting = [];
  await state.inner.executeQuery(combine(writes));
}

/** Whether `query` may carry the waiting `writes` (see above): it names none of their tables and holds no literal. */
function canCarry(query: CompiledQuery, writes: readonly Waiting[]): boolean {
  const text = query.sql;
  if (text.includes("'") || !/^(?:select|insert|update|delete|with)\s/i.test(text) || /^with\s+recursive\s/i.test(text)) return false;
  if (writes.reduce((n, w) => n + w.parameters.length, query.parameters.length) > MAX_PARAMETERS) return false;
  return writes.every((write) => !namePattern(write.table).test(text));
}

/** A table's name as a word, compiled once per table (the test runs for every statement after a deferred write). */
const namePatterns = new Map<string, RegExp>();
function namePattern(table: string): RegExp {
  let pattern = namePatterns.get(table);
  if (!pattern) {
    pattern = new RegExp(`\\b${table}\\b`, 'i');
    namePatterns.set(table, pattern);
  }
  return pattern;
}

function wrapConnection(state: State): DatabaseConnection {
  return {
    async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
      const waiting = state.waiting;
      const table = waiting ? waitable(query) : null;
      if (waiting && table !== null) {
        const count = waiting.reduce((n, w) => n + w.parameters.length, 0);
        if (waiting.some((w) => w.table === table) || count + query.parameters.length > MAX_PARAMETERS) await flush(state);
        state.waiting!.push({ table, sql: query.sql, parameters: query.parameters });
        return EMPTY;
      }
      if (waiting && waiting.length > 0 && canCarry(query, waiting)) {
        state.waiting = [];
        return state.inner.executeQuery<R>(combine(waiting, query));
      }
      await flush(state);
      return state.inner.executeQuery<R>(query);
    },
    async *streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
      await flush(state);
      yield* state.inner.streamQuery<R>(query, chunkSize);
    },
  };
}

/** A PostgreSQL dialect whose transactions send deferrable writes together (see above). */
export function withWriteCoalescing(dialect: Dialect): Dialect {
  return wrapDriverOf(dialect, (inner): Driver => {
    const wrappers = new WeakMap<DatabaseConnection, DatabaseConnection>();
    const states = new WeakMap<DatabaseConnection, State>();
    const stateOf = (connection: DatabaseConnection) => states.get(connection)!;
    const driver: Driver = {
      init: () => inner.init(),
      async acquireConnection() {
        const connection = await inner.acquireConnection();
        let wrapper = wrappers.get(connection);
        if (!wrapper) {
          const state: State = { inner: connection, waiting: null };
          wrapper = wrapConnection(state);
          wrappers.set(connection, wrapper);
          states.set(wrapper, state);
        }
        return wrapper;
      },
      async beginTransaction(connection, settings) {
        const state = stateOf(connection);
        await inner.beginTransaction(state.inner, settings);
        state.waiting = [];
      },
      async commitTransaction(connection) {
        const state = stateOf(connection);
        try {
          await flush(state);
        } finally {
          state.waiting = null;
        }
        await inner.commitTransaction(state.inner);
      },
      async rollbackTransaction(connection) {
        const state = stateOf(connection);
        state.waiting = null;
        await inner.rollbackTransaction(state.inner);
      },
      releaseConnection: (connection) => inner.releaseConnection(stateOf(connection).inner),
      destroy: () => inner.destroy(),
    };
    if (inner.savepoint) {
      const savepoint = inner.savepoint.bind(inner);
      driver.savepoint = async (connection, name, compile) => {
        await flush(stateOf(connection));
        await savepoint(stateOf(connection).inner, name, compile);
      };
    }
    if (inner.rollbackToSavepoint) {
      const rollbackTo = inner.rollbackToSavepoint.bind(inner);
      // Writes issued after the savepoint and not yet sent are undone by not sending them.
      driver.rollbackToSavepoint = async (connection, name, compile) => {
        const state = stateOf(connection);
        state.waiting = [];
        await rollbackTo(state.inner, name, compile);
      };
    }
    if (inner.releaseSavepoint) {
      const release = inner.releaseSavepoint.bind(inner);
      driver.releaseSavepoint = async (connection, name, compile) => {
        await flush(stateOf(connection));
        await release(stateOf(connection).inner, name, compile);
      };
    }
    return driver;
  });
}
