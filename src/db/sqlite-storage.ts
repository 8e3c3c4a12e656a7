import { sql } from 'kysely';
import type { Work } from './tables.js';

/**
 * SQLite's file and its free pages: what a delete frees stays in the file (on its freelist) until it is given back.
 * With `auto_vacuum = INCREMENTAL` (the retention migration; `mailroom admin vacuum` for an older file) the sweep gives
 * it back a chunk at a time (`giveBackPages`); without it only a VACUUM shrinks the file.
 */
export interface SqliteStorage {
  pageSize: number;
  pageCount: number;
  /** Pages in the file that hold nothing. */
  freePages: number;
  /** 0 none, 1 full, 2 incremental. */
  autoVacuum: number;
}

async function pragmaNumber(db: Work, name: 'page_size' | 'page_count' | 'freelist_count' | 'auto_vacuum'): Promise<number> {
  // The pragma's table-valued form: a SELECT, whatever the driver does with statements that return nothing.
  const { rows } = await sql<{ n: number }>`select * from ${sql.raw(`pragma_${name}()`)}`.execute(db);
  return Number(Object.values(rows[0] ?? { n: 0 })[0]);
}

export async function sqliteStorage(db: Work): Promise<SqliteStorage> {
  return {
    pageSize: await pragmaNumber(db, 'page_size'),
    pageCount: await pragmaNumber(db, 'page_count'),
    freePages: await pragmaNumber(db, 'freelist_count'),
    autoVacuum: await pragmaNumber(db, 'auto_vacuum'),
  };
}

/**
 * Give up to `pages` free pages back to the file system, in one short transaction; the number given back. better-sqlite3
 * steps a statement that returns no columns once, and `incremental_vacuum` frees one page per step, so the pragma runs
 * once per page (cheap: no commit between them). Nothing to do unless the file is in incremental mode.
 */
export async function giveBackPages(db: Work, pages: number): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const before = await pragmaNumber(trx, 'freelist_count');
    const todo = Math.min(before, pages);
    for (let i = 0; i < todo; i++) await sql`pragma incremental_vacuum(1)`.execute(trx);
    return before - (await pragmaNumber(trx, 'freelist_count'));
  });
}

/**
 * Put the file in incremental mode and rebuild it (VACUUM): the one way an older file starts giving space back, and
 * it shrinks to its live pages now. It holds the write lock throughout and needs free disk space for a copy of the file.
 */
export async function rebuildIncremental(db: Work): Promise<{ before: SqliteStorage; after: SqliteStorage }> {
  const before = await sqliteStorage(db);
  await sql`pragma auto_vacuum = incremental`.execute(db);
  await sql`vacuum`.execute(db);
  return { before, after: await sqliteStorage(db) };
}
