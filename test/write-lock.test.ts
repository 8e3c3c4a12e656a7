import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterAll, describe, expect, it } from 'vitest';
import { createDb, type DbHandle } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrator.js';
import { createWriteLock } from '../src/db/write-lock.js';

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('write lock (shared by the threads of a process)', () => {
  it('lets one thread at a time in: two threads incrementing a shared counter lose nothing', async () => {
    const lock = createWriteLock();
    const counter = new SharedArrayBuffer(4);
    const shared = new Int32Array(counter);
    const rounds = 200;
    // A worker thread does not inherit the test runner's TypeScript loader: it registers tsx, then loads the helper.
    const source = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then(({ register }) => { register(); return import(${JSON.stringify(new URL('./helpers/lock-worker.ts', import.meta.url).href)}); })`;
    const worker = new Worker(source, { eval: true, workerData: { lock: lock.buffer, counter, rounds } });
    const next = () =>
      new Promise((resolve, reject) => {
        worker.once('message', resolve);
        worker.once('error', reject);
      });
    await next();
    const done = next();
    worker.postMessage('go');
    for (let i = 0; i < rounds; i++) {
      await lock.acquire();
      const seen = shared[0]!;
      await turn();
      shared[0] = seen + 1;
      lock.release();
    }
    await done;
    await worker.terminate();
    expect(shared[0]).toBe(2 * rounds);
    expect(lock.held()).toBe(false);
  });

  it('serves in the order asked: a waiter goes before the holder asking again', async () => {
    const lock = createWriteLock();
    const order: string[] = [];
    await lock.acquire();
    const waiter = lock.acquire().then(() => order.push('waiter'));
    await turn();
    expect(order).toEqual([]);
    lock.release();
    const again = lock.acquire().then(() => order.push('holder again'));
    await waiter;
    expect(order).toEqual(['waiter']);
    lock.release();
    await again;
    lock.release();
    expect(order).toEqual(['waiter', 'holder again']);
    expect(lock.held()).toBe(false);
  });

  it('abandoned, lets every waiter and every later caller through', async () => {
    const lock = createWriteLock();
    await lock.acquire();
    let through = false;
    const waiter = lock.acquire().then(() => {
      through = true;
    });
    await turn();
    expect(through).toBe(false);
    lock.abandon();
    await waiter;
    expect(through).toBe(true);
    await lock.acquire();
    await lock.acquire();
    expect(lock.held()).toBe(false);
  });
});

describe('SQLite connections sharing a write lock', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mailroom-lock-'));
  const handles: DbHandle[] = [];
  afterAll(async () => {
    for (const handle of handles) await handle.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('two connections of one thread write in turn instead of meeting in the busy handler', async () => {
    const url = `sqlite:${join(dir, 'shared.db')}`;
    const first = createDb(url);
    handles.push(first);
    await migrateToLatest(first.db);
    const second = createDb(url, { writeLock: first.writeLock!.buffer });
    handles.push(second);
    const insert = (h: DbHandle, id: string) =>
      h.db.insertInto('workspaces').values({ id, name: id, created_at: 1 }).execute();

    // Both read, yield, then write: the pattern that fails on SQLite when two connections interleave
    // (the second could neither take the write lock nor, once it could, upgrade its stale snapshot).
    const started = performance.now();
    const transactions = [first, second, first, second].map((h, i) =>
      h.db.transaction().execute(async (trx) => {
        await trx.selectFrom('workspaces').select('id').execute();
        await new Promise((resolve) => setTimeout(resolve, 20));
        await trx.insertInto('workspaces').values({ id: `ws_lock_t${i}`, name: 'T', created_at: 1 }).execute();
        return i;
      }),
    );
    // A write outside any transaction waits its turn as well.
    const lone = insert(second, 'ws_lock_lone');
    expect(await Promise.all(transactions)).toEqual([0, 1, 2, 3]);
    await lone;
    // Well under SQLite's 5 s busy time-out: nobody slept in the busy handler.
    expect(performance.now() - started).toBeLessThan(2000);
    const ids = (await first.db.selectFrom('workspaces').select('id').where('id', 'like', 'ws_lock_%').execute()).map((r) => r.id).sort();
    expect(ids).toEqual(['ws_lock_lone', 'ws_lock_t0', 'ws_lock_t1', 'ws_lock_t2', 'ws_lock_t3']);
    expect(first.writeLock!.held()).toBe(false);
  });
});
