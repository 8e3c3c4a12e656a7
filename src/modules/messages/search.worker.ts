/**
 * Entry of a search reader thread (search-runner.ts): SQLite searches, on a read-only connection of the thread's
 * own to the database file. WAL lets it read beside the process's writer; what it reads is what was committed
 * when each statement started. Runs in a worker thread only.
 */
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { workerData } from 'piscina';
import { SQLITE } from '../../db/dialect.js';
import type { NoTables, Work } from '../../db/tables.js';
import { systemClock } from '../../lib/clock.js';
import { createReceivedMailStore } from '../mail/mail.store.js';
import { executeSearch, type SearchAnswer, type SearchTask } from './search-task.js';

export interface SearchWorkerData {
  /** The database file. */
  path: string;
  busyTimeoutMs: number;
}

let opened: { work: Work; store: ReturnType<typeof createReceivedMailStore> } | null = null;

function open(): NonNullable<typeof opened> {
  const settings = workerData as SearchWorkerData;
  const database = new SQLite(settings.path, { readonly: true, fileMustExist: true });
  database.pragma(`busy_timeout = ${settings.busyTimeoutMs}`);
  // A handle naming no table: the mail store's searches view it over their own tables.
  return { work: new Kysely<NoTables>({ dialect: new SqliteDialect({ database }) }), store: createReceivedMailStore({ clock: systemClock, dialect: SQLITE }) };
}

export default function search(task: SearchTask): Promise<SearchAnswer> {
  const { work, store } = (opened ??= open());
  return executeSearch(work, store, task);
}
