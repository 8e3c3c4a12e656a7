import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import type { Scope } from './scope.js';

export const DEFAULT_PG_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
/** How long the reachability probe waits for PostgreSQL. */
const PG_CONNECT_TIMEOUT_MS = 3000;

export type Dialect = 'sqlite' | 'postgres';

export interface BenchDatabase {
  dialect: Dialect;
  /** The MAILROOM_DATABASE_URL of the fresh database. */
  url: string;
  /** What the report prints (no password). */
  label: string;
}

/** The PostgreSQL server the bench creates its databases on (MAILROOM_BENCH_PG_URL or the default). */
export function postgresBaseUrl(env: NodeJS.ProcessEnv = process.env): string {
  const given = env.MAILROOM_BENCH_PG_URL?.trim();
  return given ? given : DEFAULT_PG_URL;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

/** The bench only ever talks to this machine; a remote URL is refused rather than loaded. */
export function assertLoopback(url: string, what: string): void {
  const host = new URL(url).hostname;
  if (!LOOPBACK_HOSTS.has(host) && !/^127\.\d+\.\d+\.\d+$/.test(host)) {
    throw new Error(`${what} must point at a loopback address (127.0.0.1, ::1 or localhost), not '${host}'`);
  }
}

export function redactUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}

/** null when PostgreSQL answers at `baseUrl`, otherwise why not. */
export async function probePostgres(baseUrl: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: baseUrl, connectionTimeoutMillis: PG_CONNECT_TIMEOUT_MS });
  // A connection dropped by the server after connect must not crash the bench.
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
    return null;
  } catch (err) {
    return err instanceof Error ? err.message || err.name : String(err);
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function withAdmin<T>(baseUrl: string, body: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: baseUrl, connectionTimeoutMillis: PG_CONNECT_TIMEOUT_MS });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await body(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** A temporary SQLite file in the bench's work directory (which the run removes at the end). */
export function createSqliteDatabase(workDir: string, name: string): BenchDatabase {
  const path = join(workDir, `${name}.db`);
  return { dialect: 'sqlite', url: `sqlite:${path}`, label: `sqlite:${path}` };
}

/** A new, empty PostgreSQL database beside the one `baseUrl` names; dropped when `scope` closes. */
export async function createPostgresDatabase(baseUrl: string, scope: Scope): Promise<BenchDatabase> {
  const name = `mailroom_bench_${process.pid}_${randomBytes(4).toString('hex')}`;
  await withAdmin(baseUrl, (client) => client.query(`create database ${name}`));
  if (!process.env.BENCH_KEEP_DB) scope.defer(`drop database ${name}`, () => withAdmin(baseUrl, (client) => client.query(`drop database if exists ${name} with (force)`)).then(() => undefined));
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return { dialect: 'postgres', url: url.toString(), label: redactUrl(url.toString()) };
}
