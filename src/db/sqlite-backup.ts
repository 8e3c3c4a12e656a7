/**
 * SQLite backups and restores, on the database file itself (the operator's `admin backup` and `admin restore`).
 *
 * A backup is SQLite's online backup API run from a connection of its own, copying every page in ONE step: that step
 * reads under one read transaction, a snapshot of the last commit before it began, while the service's writers go
 * on (WAL: a reader never blocks a writer). Copying in small steps would let writers go on between steps too, but the
 * API restarts a copy whenever another connection writes between two steps, so under steady ingest a large database
 * might never finish. `VACUUM INTO` would also read one snapshot, but rebuilds every table and index on the way
 * (CPU, for a smaller file), where the backup API copies pages as they are.
 *
 * A restore replaces a stopped service's database: it refuses while any process has the database open, checks the
 * backup (integrity, Mailroom's migrations), migrates a copy forward beside the target, and renames it into place.
 */
import { closeSync, copyFileSync, existsSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, statSync, chmodSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import SQLite from 'better-sqlite3';
import { conflict, invalid, notFound } from '../lib/errors.js';
import { createDb, SQLITE_BUSY_TIMEOUT_MS } from './database.js';
import { knownMigrationNames, migrateToLatest } from './migrator.js';
import { asWork, type Work } from './tables.js';

/** Kysely's table of applied migrations. */
const MIGRATION_TABLE = 'kysely_migration';
/** The whole database in one backup step (the API takes a page count; this is its largest). */
const ALL_PAGES = 0x7fffffff;
/** How long a restore waits for the target's lock before deciding a process holds it open. */
const IN_USE_WAIT_MS = 500;
const OWNER_ONLY = 0o600;

export interface BackupResult {
  path: string;
  bytes: number;
  pages: number;
  /** The last migration applied to the backed-up database. */
  migration: string | null;
}

export interface RestoreResult {
  path: string;
  /** Migrations applied to the backup on its way in (it was made by an older version). */
  migrated: string[];
  /** Where the database that was at the target went (beside it), or null when there was none. */
  previous: string | null;
}

/** fsync a file or directory, so that a rename after it is durable with its contents. */
function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The migrations applied to a database (empty when it has no migration table). */
function appliedMigrations(db: SQLite.Database): string[] {
  const table = db.prepare("select name from sqlite_master where type = 'table' and name = ?").get(MIGRATION_TABLE);
  if (!table) return [];
  return (db.prepare(`select name from ${MIGRATION_TABLE} order by name`).all() as Array<{ name: string }>).map((r) => r.name);
}

/** Check a database file: SQLite's integrity check (`quick`: the cheaper one) and Mailroom's migrations. Returns them. */
function checkDatabase(file: string, quick: boolean): string[] {
  let db: SQLite.Database;
  try {
    db = new SQLite(file, { fileMustExist: true });
  } catch (err) {
    throw invalid('not_a_database', `${file} is not a SQLite database (${(err as Error).message})`);
  }
  try {
    const result = (() => {
      try {
        return db.pragma(quick ? 'quick_check' : 'integrity_check', { simple: true });
      } catch (err) {
        throw invalid('not_a_database', `${file} is not a SQLite database (${(err as Error).message})`);
      }
    })();
    if (result !== 'ok') throw invalid('backup_damaged', `${file} fails SQLite's integrity check: ${String(result)}`);
    const applied = appliedMigrations(db);
    if (applied.length === 0) throw invalid('not_a_mailroom_database', `${file} is a SQLite database, but not Mailroom's (it has no applied migrations)`);
    const known = new Set(knownMigrationNames());
    const unknown = applied.filter((name) => !known.has(name));
    if (unknown.length > 0) {
      throw invalid('backup_too_new', `${file} was made by a newer Mailroom (its migration ${unknown[0]} is unknown here): restore it with that version or a later one`);
    }
    return applied;
  } finally {
    db.close();
  }
}

/** A consistent copy of a running service's SQLite database at `dest` (which must not exist), written beside and renamed. */
export async function backupSqliteDatabase(source: string, dest: string): Promise<BackupResult> {
  if (!existsSync(source)) throw notFound('database_not_found', `no database at ${source}`);
  if (existsSync(dest)) throw conflict('backup_target_exists', `${dest} exists: name a new file`);
  mkdirSync(dirname(dest), { recursive: true });
  const partial = join(dirname(dest), `.${basename(dest)}.partial-${process.pid}`);
  const db = new SQLite(source, { fileMustExist: true });
  try {
    db.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
    const progress = await db.backup(partial, { progress: () => ALL_PAGES });
    chmodSync(partial, OWNER_ONLY);
    const applied = checkDatabase(partial, true);
    fsyncPath(partial);
    renameSync(partial, dest);
    fsyncPath(dirname(dest));
    return { path: dest, bytes: statSync(dest).size, pages: progress.totalPages, migration: applied[applied.length - 1] ?? null };
  } catch (err) {
    rmSync(partial, { force: true });
    rmSync(`${partial}-journal`, { force: true });
    throw err;
  } finally {
    db.close();
  }
}

/**
 * Refuse when any process has the database open. Every connection to a WAL database holds a shared lock on the
 * file for as long as it is open, so taking it exclusively (exclusive locking mode, then a write transaction)
 * fails while a service, a worker or an admin command has it; closing then checkpoints the WAL into the file.
 */
export function assertNotInUse(file: string): void {
  if (!existsSync(file)) return;
  const db = new SQLite(file, { fileMustExist: true, timeout: IN_USE_WAIT_MS });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('begin exclusive');
    db.exec('commit');
  } catch (err) {
    if ((err as { code?: string }).code?.startsWith('SQLITE_BUSY')) {
      throw conflict('database_in_use', `a process has ${file} open: stop every Mailroom service and command on it, then restore`);
    }
    throw err;
  } finally {
    db.close();
  }
}

/** A name beside `file` that is free: `<file>.<tag>-<time>`. */
function besideName(file: string, tag: string): string {
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  return `${file}.${tag}-${stamp}`;
}

/** Move the database at `file` with its -wal and -shm aside; returns where it went (null: nothing there). */
function moveAside(file: string): string | null {
  if (!existsSync(file)) {
    for (const suffix of ['-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
    return null;
  }
  const aside = besideName(file, 'before-restore');
  for (const suffix of ['-wal', '-shm']) if (existsSync(`${file}${suffix}`)) renameSync(`${file}${suffix}`, `${aside}${suffix}`);
  renameSync(file, aside);
  return aside;
}

/**
 * Bring a backup into place at `target` for a stopped service: check it, copy it beside the target, migrate the
 * copy forward, let `verify` look at it (the secret key's check), then move the old database aside and rename the
 * copy into place. Nothing at the target changes until the copy is complete and synced.
 */
export async function restoreSqliteDatabase(backup: string, target: string, verify: (work: Work) => Promise<void>): Promise<RestoreResult> {
  if (!existsSync(backup) || !statSync(backup).isFile()) throw notFound('backup_not_found', `no backup file at ${backup}`);
  assertNotInUse(target);
  mkdirSync(dirname(target), { recursive: true });
  const copy = join(dirname(target), `.${basename(target)}.restoring-${process.pid}`);
  const cleanup = () => {
    for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(`${copy}${suffix}`, { force: true });
  };
  try {
    copyFileSync(backup, copy);
    chmodSync(copy, OWNER_ONLY);
    checkDatabase(copy, false);
    const opened = createDb(`sqlite:${copy}`);
    let migrated: string[];
    try {
      migrated = await migrateToLatest(opened.db);
      await verify(asWork(opened.db));
    } finally {
      // The last connection to close checkpoints the WAL into the file and removes it.
      await opened.destroy();
    }
    fsyncPath(copy);
    assertNotInUse(target);
    const previous = moveAside(target);
    renameSync(copy, target);
    fsyncPath(dirname(target));
    return { path: target, migrated, previous };
  } catch (err) {
    cleanup();
    throw err;
  }
}
