import type { Db } from './database.js';

/** Most units of work one shared transaction carries. */
const MAX_BATCH = 64;

export interface GroupCommit {
  /**
   * Run `work` inside a transaction shared with whatever other work is waiting at that moment, and
   * resolve once that transaction has committed. Amortises the commit (and its fsync) over concurrent
   * callers, as databases do with group commit. If the shared transaction fails, each unit of work
   * is retried in a transaction of its own, so one bad unit never fails the others; `work` must
   * therefore be safe to run again from the start.
   */
  run<T>(work: (trx: Db) => Promise<T>): Promise<T>;
}

interface Unit {
  work: (trx: Db) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

export function createGroupCommit(db: Db, maxBatch = MAX_BATCH): GroupCommit {
  const waiting: Unit[] = [];
  let draining = false;

  async function runAlone(unit: Unit): Promise<void> {
    try {
      unit.resolve(await db.transaction().execute((trx) => unit.work(trx)));
    } catch (err) {
      unit.reject(err);
    }
  }

  async function drain(): Promise<void> {
    draining = true;
    try {
      while (waiting.length > 0) {
        // Let the event loop run once first: SQLite statements are synchronous, so without this turn no
        // other caller could ever join a batch (the previous transaction never yielded to I/O).
        await new Promise<void>((resolve) => setImmediate(resolve));
        const batch = waiting.splice(0, maxBatch);
        if (batch.length === 1) {
          await runAlone(batch[0]!);
          continue;
        }
        let results: unknown[];
        try {
          results = await db.transaction().execute(async (trx) => {
            const out: unknown[] = [];
            for (const unit of batch) out.push(await unit.work(trx));
            return out;
          });
        } catch {
          for (const unit of batch) await runAlone(unit);
          continue;
        }
        batch.forEach((unit, i) => unit.resolve(results[i]));
      }
    } finally {
      draining = false;
    }
  }

  return {
    run<T>(work: (trx: Db) => Promise<T>): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        waiting.push({ work, resolve: resolve as (value: unknown) => void, reject });
        if (!draining) void drain();
      });
    },
  };
}
