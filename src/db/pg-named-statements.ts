import type { PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import type pg from 'pg';

/**
 * PostgreSQL server-side prepared statements for every statement with parameters.
 *
 * node-postgres sends an unnamed statement as Parse + Bind + Execute each time, so the server parses,
 * analyses and plans it anew on every run. Measured on the `outbound` bench (pg_stat_statements with
 * planning tracked), planning alone was 46 % of the server's statement time, 0.9 ms of PostgreSQL's
 * CPU a message, with the delivery's lease-and-read statement at 320 µs of planning a run. A named
 * statement is parsed once per connection; after five runs PostgreSQL keeps a generic plan when it
 * costs no more than the custom ones (`plan_cache_mode = auto`), so later runs are Bind + Execute.
 *
 * The service's statement texts are a small fixed set (Kysely writes them from a fixed set of query
 * shapes, values are always parameters), so each distinct text gets one name for the life of the
 * process. A connection that has prepared more than `MAX_PER_CONNECTION` names is closed when it is
 * released (the pool opens a fresh one), which bounds the server's memory however many texts appear.
 *
 * Statements without parameters (BEGIN, COMMIT, DDL) stay on the simple protocol. A statement that
 * fails because the schema under a cached plan changed its result type (a rolling migration) makes
 * its connection close on release, so the next use prepares again. `MAILROOM_PG_PREPARE=off` turns it
 * all off, for poolers that cannot carry prepared statements (PgBouncer before 1.21 in transaction mode).
 */

/** Names prepared on one connection before it is replaced. */
export const MAX_PER_CONNECTION = 200;
/** Distinct texts named by the process; beyond it a text runs unnamed (nothing the service writes comes near). */
const MAX_NAMED_TEXTS = 2000;

/** SQLSTATE of "cached plan must not change result type" (and other unsupported features). */
const FEATURE_NOT_SUPPORTED = '0A000';

const names = new Map<string, string>();

function nameFor(text: string): string | undefined {
  let name = names.get(text);
  if (name === undefined && names.size < MAX_NAMED_TEXTS) {
    name = `mr_${names.size.toString(36)}`;
    names.set(text, name);
  }
  return name;
}

/** The wrapper of each pool client: Kysely keeps its connection state per client object, so it must be the same one each time. */
const clients = new WeakMap<pg.PoolClient, NamingClient>();

/** One pool client, seen through Kysely's interface, naming what it runs. */
class NamingClient {
  readonly #client: pg.PoolClient;
  readonly #prepared = new Set<string>();
  #replace = false;

  constructor(client: pg.PoolClient) {
    this.#client = client;
  }

  async query<R>(text: string, parameters: readonly unknown[]): Promise<PostgresQueryResult<R>> {
    const name = parameters.length > 0 ? nameFor(text) : undefined;
    if (name === undefined) return (await this.#client.query(text, parameters as unknown[])) as unknown as PostgresQueryResult<R>;
    this.#prepared.add(name);
    if (this.#prepared.size > MAX_PER_CONNECTION) this.#replace = true;
    try {
      return (await this.#client.query({ name, text, values: parameters as unknown[] })) as unknown as PostgresQueryResult<R>;
    } catch (err) {
      if ((err as { code?: unknown }).code === FEATURE_NOT_SUPPORTED) this.#replace = true;
      throw err;
    }
  }

  release(): void {
    // A client that is released destroyed loses its prepared statements with it, and the pool forgets it.
    if (this.#replace) clients.delete(this.#client);
    this.#client.release(this.#replace);
  }
}

/** A pool for Kysely's PostgresDialect whose clients run parameterised statements as named prepared statements. */
export function withNamedStatements(pool: pg.Pool): PostgresPool {
  return {
    async connect(): Promise<PostgresPoolClient> {
      const client = await pool.connect();
      let wrapped = clients.get(client);
      if (!wrapped) {
        wrapped = new NamingClient(client);
        clients.set(client, wrapped);
      }
      // Kysely only calls query(text, parameters) (no cursors are configured) and release().
      return wrapped as unknown as PostgresPoolClient;
    },
    end: () => pool.end(),
  };
}
