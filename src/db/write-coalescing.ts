import {
  AliasNode,
  CommonTableExpressionNameNode,
  CommonTableExpressionNode,
  DeleteQueryNode,
  InsertQueryNode,
  OperationNodeTransformer,
  SelectQueryNode,
  TableNode,
  UpdateQueryNode,
  createQueryId,
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type OperationNode,
  type QueryCompiler,
  type QueryResult,
  type RootOperationNode,
  type WithNode,
} from 'kysely';
import { wrapDriverOf } from './dialect-wrapper.js';
import { DEV_ASSERTIONS } from './unit-guard.js';

/**
 * Fewer round trips to PostgreSQL for the writes of a transaction whose outcome nobody reads.
 *
 * Storing a message is about ten statements, most of them INSERTs whose results the caller never
 * looks at; on PostgreSQL each one is a round trip, which costs the client CPU, the server CPU and the
 * wait (decision 170; bench/HISTORY.md). A statement marked with `deferrableWrite` is not sent at once inside a
 * transaction: it waits on its connection, and the writes that wait together are sent as one
 * statement of data-modifying CTEs (`with "mr_w0" as (insert …), "mr_w1" as (…) insert …`), right before the
 * next statement that is not such a write, or before COMMIT. Every other statement still runs in
 * the order it was issued, after all writes issued before it, so a transaction reads its own writes
 * exactly as before. What changes: a deferred write's error (a constraint it breaks) is raised by the
 * statement that flushes it, inside the same transaction, which then fails as a whole.
 *
 * The next statement may even carry the waiting writes itself, as CTEs in front of its own, saving their
 * round trip as well, when it names none of their tables (so it cannot read a row they change; the
 * sub-statements of one statement see one snapshot). A read of other tables, or a lease check on `jobs`
 * after writes to `outbound` and `events`, goes out with the writes before it; a read of a table just
 * written still waits for them, as above.
 *
 * Sub-statements of one statement share a snapshot and cannot see each other's rows, and PostgreSQL
 * leaves it undefined which of two changes to one row in one statement wins. A write therefore joins the
 * waiting ones only when it names none of their tables either (a second write to a table, or a write
 * reading one just written, sends them first). Foreign keys are checked at the end of the whole statement,
 * so a message row and its thread may be inserted in the same one.
 *
 * Everything works on Kysely's operation tree (`CompiledQuery.query`), never on SQL text: the target
 * table, RETURNING and every table a statement names are read from the nodes, and the combined statement
 * is a tree (the writes as `CommonTableExpressionNode`s in the main statement's `WithNode`) compiled by
 * the dialect's own compiler, which numbers the placeholders; its parameters are the parts' own, in
 * order. A statement without a tree (`CompiledQuery.raw`, a `sql` template run alone) never waits and
 * never carries. Tables are seen as `TableNode`s only: a `sql` fragment inside a builder must name a
 * table through `sql.table`/`sql.ref` (the code's rule anyway), never in its text.
 *
 * SQLite has no round trips to save: there every statement runs at once. PostgreSQL's extended protocol
 * could pipeline instead, but node-postgres does not (hence this). A `KyselyPlugin` cannot hold a
 * statement back, so this is a driver wrapper that rewrites trees, not text.
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
/** Combined statement texts kept per driver; the hot paths combine a small fixed set of shapes. */
const MAX_COMBINED_TEXTS = 512;
const EMPTY: QueryResult<never> = { rows: [] };

type Write = InsertQueryNode | UpdateQueryNode | DeleteQueryNode;
type Statement = SelectQueryNode | Write;

interface Waiting {
  /** The table it changes. */
  table: string;
  query: CompiledQuery;
  node: Write;
}

interface Combiner {
  compiler: QueryCompiler;
  /** Compiled text of a combined statement, by its parts' texts (see `combine`). */
  texts: Map<string, string>;
}

interface State {
  inner: DatabaseConnection;
  combiner: Combiner;
  /** Writes waiting to be sent; null outside a transaction. */
  waiting: Waiting[] | null;
}

/** Records the name of every table a tree names (FROM, JOIN, targets, references, sub-queries, CTE names). */
class TableNames extends OperationNodeTransformer {
  readonly names = new Set<string>();
  protected override transformTable(node: TableNode): TableNode {
    // The bare name, schema or not: a doubt only ever means sending the waiting writes first.
    this.names.add(node.table.identifier.name);
    return node;
  }
}

/** Table names per tree: a prepared statement reuses its tree, so it is walked once. */
const namesByTree = new WeakMap<RootOperationNode, ReadonlySet<string>>();

function tablesNamedBy(node: RootOperationNode): ReadonlySet<string> {
  let names = namesByTree.get(node);
  if (!names) {
    const walker = new TableNames();
    walker.transformNode(node);
    names = walker.names;
    namesByTree.set(node, names);
  }
  return names;
}

/** The node as a statement that may carry CTEs in front of it, or null (raw SQL, DDL, MERGE). */
function statementOf(node: RootOperationNode): Statement | null {
  return SelectQueryNode.is(node) || InsertQueryNode.is(node) || UpdateQueryNode.is(node) || DeleteQueryNode.is(node) ? node : null;
}

/** The name of a plain table, aliased or not; null for anything else (a join, a sub-query). */
function tableName(node: OperationNode | undefined): string | null {
  const table = node && AliasNode.is(node) ? node.node : node;
  return table && TableNode.is(table) ? table.table.identifier.name : null;
}

/** The one table a write changes. */
function targetOf(node: Write): string | null {
  if (InsertQueryNode.is(node)) return tableName(node.into);
  if (UpdateQueryNode.is(node)) return tableName(node.table);
  return node.from.froms.length === 1 ? tableName(node.from.froms[0]) : null;
}

/**
 * The write, if it may wait, or null to run it at once: one that returns rows, or has CTEs of its own
 * (they would have to move to the top level with it). A literal in it no longer matters: the compiler
 * numbers the placeholders of the combined tree, so nothing is renumbered by hand.
 */
function waitable(query: CompiledQuery): Waiting | null {
  if (!deferrable.has(query)) return null;
  const node = query.query;
  if (!(InsertQueryNode.is(node) || UpdateQueryNode.is(node) || DeleteQueryNode.is(node)) || node.returning || node.with) return null;
  const table = targetOf(node);
  return table === null ? null : { table, query, node };
}

/** Whether `query` may be sent in one statement with the waiting `writes`: it names none of their tables, and the parameters fit. */
function mayJoin(query: CompiledQuery, writes: readonly Waiting[]): boolean {
  if (writes.reduce((n, w) => n + w.query.parameters.length, query.parameters.length) > MAX_PARAMETERS) return false;
  const names = tablesNamedBy(query.query);
  return writes.every((write) => !names.has(write.table));
}

/** `main` with the `writes` as its first CTEs, `mr_w0`, `mr_w1`, …, before any of its own. */
function withWrites(writes: readonly Waiting[], main: Statement): Statement {
  const ctes = writes.map((write, i) => CommonTableExpressionNode.create(CommonTableExpressionNameNode.create(`mr_w${i}`), write.query.query));
  const own = main.with;
  const withNode: WithNode = own ? { ...own, expressions: [...ctes, ...own.expressions] } : { kind: 'WithNode', expressions: ctes };
  return { ...main, with: withNode };
}

/**
 * The waiting writes as one statement: CTEs in front of `carrier`, or in front of the last write. The
 * compiler writes each part's placeholders in the order it writes them alone, so the parameters are the
 * parts' own, concatenated; the text is compiled once per combination of parts' texts.
 */
function combine(combiner: Combiner, writes: readonly Waiting[], carrier?: { query: CompiledQuery; node: Statement }): CompiledQuery {
  const main = carrier ?? writes[writes.length - 1]!;
  const ctes = carrier ? writes : writes.slice(0, -1);
  if (ctes.length === 0) return main.query;
  const tree = withWrites(ctes, main.node);
  const parameters: unknown[] = [];
  for (const write of ctes) parameters.push(...write.query.parameters);
  parameters.push(...main.query.parameters);
  // The parts' texts identify the combination: equal texts are equal trees for the compiler.
  const key = `${ctes.map((write) => write.query.sql).join('\u0000')}\u0000\u0000${main.query.sql}`;
  let sql = combiner.texts.get(key);
  if (sql === undefined) {
    const compiled = combiner.compiler.compileQuery(tree, createQueryId());
    if (compiled.parameters.length !== parameters.length) throw new Error('write coalescing: the combined statement binds other parameters than its parts');
    sql = compiled.sql;
    if (combiner.texts.size >= MAX_COMBINED_TEXTS) combiner.texts.delete(combiner.texts.keys().next().value!);
    combiner.texts.set(key, sql);
  }
  return { query: tree, queryId: createQueryId(), sql, parameters };
}

async function flush(state: State): Promise<void> {
  const writes = state.waiting;
  if (!writes || writes.length === 0) return;
  state.waiting = [];
  await carrying(writes, state.inner.executeQuery(combine(state.combiner, writes)));
}

/**
 * A statement that carries earlier deferred writes fails for any of them. Development and test builds say so in
 * the error (its code and class unchanged), since the caller that made the failing write has long returned.
 */
async function carrying<R>(writes: readonly Waiting[], sent: Promise<R>): Promise<R> {
  try {
    return await sent;
  } catch (err) {
    if (DEV_ASSERTIONS && err instanceof Error) err.message += ` (this statement carried deferred writes to ${[...new Set(writes.map((w) => w.table))].join(', ')}: one of them may be what failed)`;
    throw err;
  }
}

function wrapConnection(state: State): DatabaseConnection {
  return {
    async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
      const waiting = state.waiting;
      if (waiting === null) return state.inner.executeQuery<R>(query);
      const write = waitable(query);
      if (write !== null) {
        if (!mayJoin(query, waiting)) await flush(state);
        state.waiting!.push(write);
        return EMPTY;
      }
      const node = waiting.length > 0 ? statementOf(query.query) : null;
      if (node && mayJoin(query, waiting)) {
        state.waiting = [];
        return carrying(waiting, state.inner.executeQuery<R>(combine(state.combiner, waiting, { query, node })));
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
    const combiner: Combiner = { compiler: dialect.createQueryCompiler(), texts: new Map() };
    const wrappers = new WeakMap<DatabaseConnection, DatabaseConnection>();
    const states = new WeakMap<DatabaseConnection, State>();
    const stateOf = (connection: DatabaseConnection) => states.get(connection)!;
    const driver: Driver = {
      init: () => inner.init(),
      async acquireConnection() {
        const connection = await inner.acquireConnection();
        let wrapper = wrappers.get(connection);
        if (!wrapper) {
          const state: State = { inner: connection, combiner, waiting: null };
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
    return withSavepoints(driver, inner, stateOf);
  });
}

/** Savepoints as `inner` has them, after the waiting writes are sent (or dropped, when rolling back to one). */
function withSavepoints(driver: Driver, inner: Driver, stateOf: (connection: DatabaseConnection) => State): Driver {
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
}
