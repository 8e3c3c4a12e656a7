/**
 * Entry of a search reader thread (search-runner.ts): SQLite searches, on a read-only connection of the thread's
 * own to the database file. WAL lets it read beside the process's writer; what it reads is what was committed
 * when each statement started. Runs in a worker thread only.
 */
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { workerData } from 'piscina';
import type { Db } from '../../db/database.js';
import { SQLITE } from '../../db/dialect.js';
import type { Database } from '../../db/schema.js';
import { executeSearch, type SearchAnswer, type SearchTask } from './search-task.js';

export interface SearchWorkerData {
  /** The database file. */
  path: string;
  busyTimeoutMs: number;
}

let db: Db | null = null;

function open(): Db {
  const settings = workerData as SearchWorkerData;
  const database = new SQLite(settings.path, { readonly: true, fileMustExist: true });
  database.pragma(`busy_timeout = ${settings.busyTimeoutMs}`);
  return new Kysely<Database>({ dialect: new SqliteDialect({ database }) });
}

export default function search(task: SearchTask): Promise<SearchAnswer> {
  return executeSearch((db ??= open()), SQLITE, task);
}
