import type { Db } from './database.js';
import { asWork, type Work } from './tables.js';
import { runAsUnit } from './unit-guard.js';

/** Most units of work one shared transaction carries. */
const MAX_BATCH = 64;
/** Longest a batch waits for announced units (see `announce`). */
const MAX_SIBLING_WAIT_MS = 4;

export interface GroupCommit {
  /**
   * Run `work` inside a transaction shared with whatever other work is waiting at that moment, and
   * resolve once that transaction has committed. Amortises the commit (and its fsync) over concurrent
   * callers, as databases do with group commit. If the shared transaction fails, each unit of work
   * is retried in a transaction of its own, so one bad unit never fails the others; `work` must
   * therefore be safe to run again from the start.
   *
   * `key` says whose work it is (a workspace id): a batch takes the waiting units round-robin across keys, so a
   * workspace with hundreds of units queued does not put them all in front of another's one. Units of one key
   * (and all units without one) keep their order.
   */
  run<T>(work: (trx: Work) => Promise<T>, key?: string): Promise<T>;
  /**
   * Say that a unit of work is on its way (a message being parsed before it is stored). While such
   * units are announced, a batch waits for them a few milliseconds before it starts, as PostgreSQL's
   * `commit_delay` waits for `commit_siblings`: under load the commits, and the index pages each one
   * writes again, are shared by more units; with nothing announced nothing waits. Call the returned
   * function once the unit has called `run` or given up.
   */
  announce(): () => void;
  /** Units waiting for a shared transaction now (metrics). */
  waiting(): number;
}

interface Unit {
  work: (trx: Work) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/** The key of units given none. */
const NO_KEY = '';

/**
 * Units waiting, one queue per key. The map's insertion order is the round-robin: a key that was just taken from
 * moves to the end.
 */
function createFairQueue() {
  const queues = new Map<string, Unit[]>();
  let length = 0;
  return {
    get length() {
      return length;
    },
    push(key: string, unit: Unit) {
      const queue = queues.get(key);
      if (queue) queue.push(unit);
      else queues.set(key, [unit]);
      length += 1;
    },
    /** Up to `max` units, one per key in turn. */
    take(max: number): Unit[] {
      const batch: Unit[] = [];
      for (let next = queues.entries().next(); batch.length < max && !next.done; next = queues.entries().next()) {
        const [key, queue] = next.value;
        batch.push(queue.shift()!);
        queues.delete(key);
        if (queue.length > 0) queues.set(key, queue);
      }
      length -= batch.length;
      return batch;
    },
  };
}

export function createGroupCommit(db: Db, maxBatch = MAX_BATCH): GroupCommit {
  const waiting = createFairQueue();
  let draining = false;
  let announced = 0;
  /** Wakes a batch that waits for announced units (a unit arrived or withdrew). */
  let arrival: (() => void) | null = null;
  const signal = () => {
    const wake = arrival;
    arrival = null;
    wake?.();
  };

  /** Until every announced unit has arrived, the batch is full, or the wait is over. */
  async function awaitSiblings(): Promise<void> {
    const deadline = performance.now() + MAX_SIBLING_WAIT_MS;
    while (announced > 0 && waiting.length < maxBatch) {
      const left = deadline - performance.now();
      if (left <= 0) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        arrival = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  async function runAlone(unit: Unit): Promise<void> {
    try {
      unit.resolve(await db.transaction().execute((trx) => runAsUnit(() => unit.work(asWork(trx)))));
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
        await awaitSiblings();
        const batch = waiting.take(maxBatch);
        if (batch.length === 1) {
          await runAlone(batch[0]!);
          continue;
        }
        let results: unknown[];
        try {
          results = await db.transaction().execute(async (trx) => {
            const out: unknown[] = [];
            for (const unit of batch) out.push(await runAsUnit(() => unit.work(asWork(trx))));
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
    run<T>(work: (trx: Work) => Promise<T>, key = NO_KEY): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        waiting.push(key, { work, resolve: resolve as (value: unknown) => void, reject });
        if (!draining) void drain();
        else signal();
      });
    },
    announce() {
      announced++;
      let withdrawn = false;
      return () => {
        if (withdrawn) return;
        withdrawn = true;
        announced--;
        signal();
      };
    },
    waiting: () => waiting.length,
  };
}
