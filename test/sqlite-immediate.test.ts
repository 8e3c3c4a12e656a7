import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db, type DbHandle } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrator.js';
import type { Database } from '../src/db/schema.js';

/**
 * Another writer of the file, as another process (a CLI command, another role) would be: its own connection
 * on its own thread, since a connection waiting in `busy_timeout` blocks its thread. It inserts the
 * workspace it is sent and answers with the SQLite error code, if any.
 */
const WRITER = `
const { parentPort, workerData } = require('node:worker_threads');
const db = new (require(workerData.driver))(workerData.path);
db.pragma('busy_timeout = 5000');
parentPort.on('message', (id) => {
  try {
    db.prepare('insert into workspaces (id, name, created_at) values (?, ?, 1)').run(id, id);
    parentPort.postMessage({ id, error: null });
  } catch (err) {
    parentPort.postMessage({ id, error: err.code });
  }
});
parentPort.postMessage('ready');`;

interface Written {
  id: string;
  error: string | null;
}

describe('SQLite transactions begin IMMEDIATE', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mailroom-immediate-'));
  const path = join(dir, 'mailroom.db');
  let handle: DbHandle;
  let worker: Worker;
  const answers = new Map<string, (written: Written) => void>();
  const write = (id: string) =>
    new Promise<Written>((resolve) => {
      answers.set(id, resolve);
      worker.postMessage(id);
    });
  const read = (db: Db) => db.selectFrom('workspaces').select('id').execute();
  const insert = (db: Db, id: string) => db.insertInto('workspaces').values({ id, name: id, created_at: 1 }).execute();

  beforeAll(async () => {
    handle = createDb(`sqlite:${path}`);
    await migrateToLatest(handle.db);
    worker = new Worker(WRITER, { eval: true, workerData: { driver: createRequire(import.meta.url).resolve('better-sqlite3'), path } });
    await new Promise((resolve) => worker.once('message', resolve));
    worker.on('message', (written: Written) => answers.get(written.id)?.(written));
  });
  afterAll(async () => {
    await worker.terminate();
    await handle.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a transaction that read, then writes, succeeds: another writer waits for its commit instead of invalidating its snapshot', async () => {
    const { other } = await handle.db.transaction().execute(async (trx) => {
      await read(trx);
      const other = write('ws_other_1');
      // The transaction holds the write lock since BEGIN: the other connection waits in its busy handler.
      expect(await Promise.race([other, sleep(300).then(() => 'waiting')])).toBe('waiting');
      await insert(trx, 'ws_mine_1');
      return { other };
    });
    expect(await other).toEqual({ id: 'ws_other_1', error: null });
    const ids = (await read(handle.db)).map((r) => r.id).sort();
    expect(ids).toEqual(['ws_mine_1', 'ws_other_1']);
  });

  it("without it (Kysely's deferred BEGIN) the same transaction fails with SQLITE_BUSY_SNAPSHOT, busy_timeout or not", async () => {
    const database = new SQLite(path);
    database.pragma('busy_timeout = 5000');
    const deferred = new Kysely<Database>({ dialect: new SqliteDialect({ database }) });
    try {
      const transaction = deferred.transaction().execute(async (trx) => {
        await read(trx);
        // A deferred transaction that only read holds no write lock: the other writer commits at once.
        expect(await write('ws_other_2')).toEqual({ id: 'ws_other_2', error: null });
        await insert(trx, 'ws_mine_2');
      });
      await expect(transaction).rejects.toMatchObject({ code: 'SQLITE_BUSY_SNAPSHOT' });
    } finally {
      await deferred.destroy();
    }
  });
});
