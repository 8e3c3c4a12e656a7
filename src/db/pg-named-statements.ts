import type { PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import type pg from 'pg';
import { isBinaryCopy, runBinaryCopy } from './pg-copy-binary.js';

/**
 * PostgreSQL server-side prepared statements for every statement with parameters.
 *
 * node-postgres sends an unnamed statement as Parse + Bind + Execute each time, so the server parses,
 * analyses and plans it anew on every run; on the `outbound` bench planning was a large share of the
 * server's statement time (decision 188; figures in bench/HISTORY.md). A named
 * statement is parsed once per connection; after five runs PostgreSQL keeps a generic plan when it
 * costs no more than the custom ones (`plan_cache_mode = auto`), so later runs are Bind + Execute.
 *
 * **Plans made on small tables are renewed.** A generic plan is costed with the table sizes of the
 * moment it is made, and on a new or nearly empty table every index looks alike: on the bench, a plan made
 * in the first second of a fresh database looked outbound rows up through the workspace index and
 * filtered them, instead of through the primary key, and kept doing so as the table grew. A table grows
 * with the statements that write and read it, so each statement is prepared again, under a new name,
 * when its runs on a connection reach 32, 64, 128… (doubling, then every `MAX_RENEWAL_INTERVAL` runs):
 * every plan was made when the work behind it was at least half what it is, and the old statement is
 * deallocated. Once tables have statistics, ANALYZE (autovacuum) also makes the server re-plan.
 *
 * **Bounded.** The service's statement texts are a small fixed set (Kysely writes them from a fixed set
 * of query shapes, values are always parameters). A connection that has been given more than
 * `MAX_PER_CONNECTION` distinct texts runs further ones unnamed and is closed when it is released (the
 * pool opens a fresh one), which bounds the server's memory however many texts appear.
 *
 * Statements without parameters (BEGIN, COMMIT, DDL) stay on the simple protocol, and a binary COPY runs as one
 * (pg-copy-binary.ts). A statement that
 * fails because the schema under a cached plan changed its result type (a rolling migration) makes
 * its connection close on release, so the next use prepares again. `MAILROOM_PG_PREPARE=off` turns the
 * naming off, for poolers that cannot carry prepared statements (PgBouncer before 1.21 in transaction mode).
 */

/** Distinct texts prepared on one connection before it is replaced. */
export const MAX_PER_CONNECTION = 200;
/** Runs of a statement on a connection before it is first prepared again; the interval then doubles. */
export const FIRST_RENEWAL = 32;
/** The longest interval between two preparations of a statement on a connection. */
export const MAX_RENEWAL_INTERVAL = 16_384;

/** SQLSTATE of "cached plan must not change result type" (and other unsupported features). */
const FEATURE_NOT_SUPPORTED = '0A000';

/** One text prepared on one connection: its name is `s<number>_<generation>`. */
interface Prepared {
  /** Its number on this connection. */
  number: number;
  generation: number;
  runs: number;
  renewAt: number;
}

const nameOf = (p: Prepared) => `s${p.number}_${p.generation}`;

/** The wrapper of each pool client: Kysely keeps its connection state per client object, so it must be the same one each time. */
const wrappers = new WeakMap<pg.PoolClient, NamingClient>();

/** One pool client, seen through Kysely's interface, naming what it runs. */
class NamingClient {
  readonly #client: pg.PoolClient;
  readonly #prepared = new Map<string, Prepared>();
  readonly #prepare: boolean;
  #replace = false;

  constructor(client: pg.PoolClient, prepare: boolean) {
    this.#client = client;
    this.#prepare = prepare;
  }

  async query<R>(text: string, parameters: readonly unknown[]): Promise<PostgresQueryResult<R>> {
    if (isBinaryCopy(text)) {
      const rows = await runBinaryCopy(this.#client, text, parameters);
      return { command: 'COPY', rowCount: rows.length, rows } as unknown as PostgresQueryResult<R>;
    }
    const prepared = this.#prepare && parameters.length > 0 ? this.#preparedFor(text) : undefined;
    if (prepared === undefined) return (await this.#client.query(text, parameters as unknown[])) as unknown as PostgresQueryResult<R>;
    if (++prepared.runs > prepared.renewAt) await this.#renew(prepared);
    try {
      return (await this.#client.query({ name: nameOf(prepared), text, values: parameters as unknown[] })) as unknown as PostgresQueryResult<R>;
    } catch (err) {
      if ((err as { code?: unknown }).code === FEATURE_NOT_SUPPORTED) this.#replace = true;
      throw err;
    }
  }

  /** The statement `text` runs as on this connection; undefined to run it unnamed (the connection has its share). */
  #preparedFor(text: string): Prepared | undefined {
    let prepared = this.#prepared.get(text);
    if (!prepared) {
      if (this.#prepared.size >= MAX_PER_CONNECTION) {
        this.#replace = true;
        return undefined;
      }
      prepared = { number: this.#prepared.size, generation: 0, runs: 0, renewAt: FIRST_RENEWAL };
      this.#prepared.set(text, prepared);
    }
    return prepared;
  }

  /** Prepare the statement again under its next name (the server plans it anew) and drop the old one. */
  async #renew(prepared: Prepared): Promise<void> {
    const old = nameOf(prepared);
    prepared.generation++;
    prepared.renewAt += Math.min(prepared.renewAt, MAX_RENEWAL_INTERVAL);
    // Not transactional. Where it fails (inside a transaction already aborted) the old statement stays on the
    // server, so the connection is closed on release instead: the bound per connection holds either way.
    await this.#client.query(`deallocate ${old}`).catch(() => {
      this.#replace = true;
    });
  }

  release(): void {
    // A client released destroyed takes its prepared statements with it, and the pool forgets it.
    if (this.#replace) wrappers.delete(this.#client);
    this.#client.release(this.#replace);
  }
}

/**
 * A pool for Kysely's PostgresDialect whose clients run parameterised statements as named prepared statements
 * (unless `prepare` is false) and binary COPY statements as such.
 */
export function withNamedStatements(pool: pg.Pool, { prepare = true }: { prepare?: boolean } = {}): PostgresPool {
  return {
    async connect(): Promise<PostgresPoolClient> {
      const client = await pool.connect();
      let wrapped = wrappers.get(client);
      if (!wrapped) {
        wrapped = new NamingClient(client, prepare);
        wrappers.set(client, wrapped);
      }
      // Kysely only calls query(text, parameters) (no cursors are configured) and release().
      return wrapped as unknown as PostgresPoolClient;
    },
    end: () => pool.end(),
  };
}
