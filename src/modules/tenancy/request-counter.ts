import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import type { TenancyStore } from './tenancy.store.js';

/** Buckets one statement counts at most (the rest wait for the next). */
const MAX_ROWS = 500;

interface Waiter {
  resolve: (hits: number) => void;
  reject: (err: unknown) => void;
}

interface Pending {
  bucket: string;
  windowStart: number;
  waiters: Waiter[];
}

/**
 * Requests counted in the database every process shares, the concurrent ones together (see README.md here): while
 * one statement is out, the requests that arrive wait, and the next statement adds each bucket's number of them to its
 * row at once. Each request gets the count it would have got alone (the row's total minus the requests after it), so
 * limits hold exactly as with one statement per request; one statement per turn instead of one per request, and one
 * update of a hot row (a busy API key's, a workspace's quota) instead of a queue of them waiting on its lock.
 */
export function createRequestCounter(deps: { work: Work; store: Pick<TenancyStore, 'addRequestCounts'>; clock: Clock }) {
  const pending = new Map<string, Pending>();
  let running = false;
  let scheduled = false;

  async function flush(): Promise<void> {
    scheduled = false;
    running = true;
    try {
      while (pending.size > 0) {
        const batch = [...pending.values()].slice(0, MAX_ROWS);
        for (const p of batch) pending.delete(`${p.windowStart} ${p.bucket}`);
        await countBatch(batch);
      }
    } finally {
      running = false;
      if (pending.size > 0) schedule();
    }
  }

  async function countBatch(batch: readonly Pending[]): Promise<void> {
    try {
      const rows = await deps.store.addRequestCounts(deps.work, batch.map((p) => ({ bucket: p.bucket, windowStart: p.windowStart, hits: p.waiters.length })));
      const totals = new Map(rows.map((r) => [`${r.windowStart} ${r.bucket}`, r.hits]));
      for (const p of batch) {
        const total = totals.get(`${p.windowStart} ${p.bucket}`) ?? p.waiters.length;
        // In arrival order: the first of n waiters is the request that made the count total − n + 1.
        p.waiters.forEach((w, i) => w.resolve(total - p.waiters.length + 1 + i));
      }
    } catch (err) {
      for (const p of batch) for (const w of p.waiters) w.reject(err);
    }
  }

  function schedule(): void {
    if (scheduled || running) return;
    scheduled = true;
    // The requests of this turn of the event loop join the statement.
    setImmediate(() => void flush());
  }

  /** Count one request in a bucket's fixed window; the count so far and when the window ends. */
  return async function countRequest(bucket: string, windowMs: number): Promise<{ hits: number; resetInMs: number }> {
    const now = deps.clock.now();
    const windowStart = now - (now % windowMs);
    const key = `${windowStart} ${bucket}`;
    let entry = pending.get(key);
    if (!entry) pending.set(key, (entry = { bucket, windowStart, waiters: [] }));
    const hits = new Promise<number>((resolve, reject) => entry.waiters.push({ resolve, reject }));
    schedule();
    return { hits: await hits, resetInMs: windowStart + windowMs - now };
  };
}
