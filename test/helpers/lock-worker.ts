/**
 * A thread for test/write-lock.test.ts: takes the shared write lock `rounds` times and, holding it,
 * increments a shared counter with a turn of the event loop between reading and writing it (so that
 * without the lock the two threads would lose each other's increments).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openWriteLock } from '../../src/db/write-lock.js';

const { lock: buffer, counter, rounds } = workerData as { lock: SharedArrayBuffer; counter: SharedArrayBuffer; rounds: number };
const lock = openWriteLock(buffer);
const shared = new Int32Array(counter);
// Start together with the test's own loop: loading this module takes longer than that loop.
const go = new Promise((resolve) => parentPort!.once('message', resolve));
parentPort!.postMessage('ready');
await go;
for (let i = 0; i < rounds; i++) {
  await lock.acquire();
  const seen = shared[0]!;
  await new Promise((resolve) => setImmediate(resolve));
  shared[0] = seen + 1;
  lock.release();
}
parentPort!.postMessage('done');
