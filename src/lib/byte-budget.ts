/** Gives back what `acquire` took. Calling it more than once gives back nothing more. */
export type Release = () => void;

/**
 * A counting semaphore over bytes: at most `totalBytes` are held at once, taken in arrival order (a
 * large request is not overtaken by a stream of small ones). A request above the total takes the whole
 * budget, so it runs, alone, rather than never.
 */
export interface ByteBudget {
  acquire(bytes: number): Promise<Release>;
  /** Bytes held now (for tests and logs). */
  readonly held: number;
}

export function createByteBudget(totalBytes: number): ByteBudget {
  let held = 0;
  const waiting: Array<{ bytes: number; grant: (release: Release) => void }> = [];

  function take(bytes: number): Release {
    held += bytes;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      held -= bytes;
      grantWaiting();
    };
  }

  function grantWaiting(): void {
    while (waiting.length > 0 && held + waiting[0]!.bytes <= totalBytes) {
      const next = waiting.shift()!;
      next.grant(take(next.bytes));
    }
  }

  return {
    acquire(raw) {
      const bytes = Math.min(Math.max(0, raw), totalBytes);
      if (waiting.length === 0 && held + bytes <= totalBytes) return Promise.resolve(take(bytes));
      return new Promise((grant) => waiting.push({ bytes, grant }));
    },
    get held() {
      return held;
    },
  };
}

export interface FairByteBudgetOptions {
  /** Bytes held at once by every key together (the process-wide budget). */
  totalBytes: number;
  /** Bytes one key may hold at once (its share); at most `totalBytes`. */
  perKeyBytes: number;
}

/**
 * A byte budget shared by tenants (usually a workspace id as the key): a process-wide total, a share per key,
 * and waiting requests granted round-robin across keys, each key's own in arrival order. A key's request that
 * does not fit the total stops the round there, so a large request is not overtaken forever by small ones of
 * other keys; one that does not fit its own key's share waits for that key alone. A request above the share
 * takes the whole share, so it runs rather than never.
 */
export interface FairByteBudget {
  /** Waits up to `waitMs` for `bytes` under `key`; null when that time passed first (the request left the queue). */
  acquire(key: string, bytes: number, waitMs: number): Promise<Release | null>;
  /** Bytes held now, in all and by one key. */
  readonly held: number;
  heldBy(key: string): number;
  /** Requests waiting now. */
  readonly waiting: number;
}

interface Waiter {
  bytes: number;
  grant: (release: Release) => void;
}

export function createFairByteBudget(options: FairByteBudgetOptions): FairByteBudget {
  const perKey = Math.max(1, Math.min(options.perKeyBytes, options.totalBytes));
  const heldByKey = new Map<string, number>();
  // Insertion order is the round-robin: a key that was just served moves to the end.
  const queues = new Map<string, Waiter[]>();
  let held = 0;
  let waiting = 0;
  const heldBy = (key: string) => heldByKey.get(key) ?? 0;
  const fitsShare = (key: string, bytes: number) => heldBy(key) + bytes <= perKey;

  function take(key: string, bytes: number): Release {
    held += bytes;
    heldByKey.set(key, heldBy(key) + bytes);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      held -= bytes;
      const left = heldBy(key) - bytes;
      if (left === 0) heldByKey.delete(key);
      else heldByKey.set(key, left);
      grantWaiting();
    };
  }

  /** One grant per key per round; a head that does not fit the total ends the granting (no overtaking it). */
  function grantWaiting(): void {
    let granted = true;
    while (granted && waiting > 0) {
      granted = false;
      for (const [key, queue] of queues) {
        const head = queue[0]!;
        if (!fitsShare(key, head.bytes)) continue;
        if (held + head.bytes > options.totalBytes) return;
        queue.shift();
        waiting -= 1;
        queues.delete(key);
        if (queue.length > 0) queues.set(key, queue);
        head.grant(take(key, head.bytes));
        granted = true;
        break;
      }
    }
  }

  function leave(key: string, waiter: Waiter): void {
    const queue = queues.get(key);
    const at = queue?.indexOf(waiter) ?? -1;
    if (!queue || at === -1) return;
    queue.splice(at, 1);
    waiting -= 1;
    if (queue.length === 0) queues.delete(key);
    // The one that left may have been the head holding the round back.
    grantWaiting();
  }

  return {
    acquire(key, raw, waitMs) {
      const bytes = Math.min(Math.max(0, raw), perKey);
      if (waiting === 0 && fitsShare(key, bytes) && held + bytes <= options.totalBytes) return Promise.resolve(take(key, bytes));
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          leave(key, waiter);
          resolve(null);
        }, waitMs);
        const waiter: Waiter = {
          bytes,
          grant: (release) => {
            clearTimeout(timer);
            resolve(release);
          },
        };
        const queue = queues.get(key) ?? [];
        queue.push(waiter);
        waiting += 1;
        if (!queues.has(key)) queues.set(key, queue);
        grantWaiting();
      });
    },
    get held() {
      return held;
    },
    heldBy,
    get waiting() {
      return waiting;
    },
  };
}
