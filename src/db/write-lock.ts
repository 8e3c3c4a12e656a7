/** Slots of the shared Int32Array: next ticket, ticket being served, abandoned flag. */
const NEXT = 0;
const SERVING = 1;
const ABANDONED = 2;
const SLOTS = 3;
/** A waiter looks again at least this often, whatever it was told (and its keep-alive timer fires as rarely). */
const KEEP_ALIVE_MS = 1000;

/**
 * `Atomics.waitAsync`, in Node.js since 16. Its type is in TypeScript's ES2024 library, which also
 * declares what Node.js 20 lacks (Promise.withResolvers, Object.groupBy), so it is declared here alone.
 */
type WaitAsync = (
  array: Int32Array,
  index: number,
  value: number,
  timeout: number,
) => { async: false; value: 'not-equal' | 'timed-out' } | { async: true; value: Promise<'ok' | 'timed-out'> };
const waitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync;

/**
 * A first-come-first-served lock shared by the threads of one process (a ticket lock over a
 * SharedArrayBuffer). Every SQLite connection of a process takes it around each write (see
 * `withWriteLock`), so that two connections of one process (the main thread's and the inbound store
 * thread's) take turns instead of meeting in SQLite's busy handler, which sleeps the whole thread (1, 2,
 * 5, 10 … ms) and can lose the race again and again until its time-out. Waiting is asynchronous
 * (`Atomics.waitAsync`), so a waiting thread's event loop goes on. Written by hand: the lock libraries
 * on npm serialise callers within one thread, not across threads.
 */
export interface WriteLock {
  /** The shared memory: hand it to another thread (workerData) and open the lock there with `openWriteLock`. */
  readonly buffer: SharedArrayBuffer;
  acquire(): Promise<void>;
  release(): void;
  /** Whether some thread holds the lock or waits for it (every ticket handed out not yet served and given back). */
  held(): boolean;
  /**
   * Stop locking for good: every waiter goes on and later calls return at once, leaving the writers to
   * SQLite's own locking. For when a thread that might hold a ticket died (its ticket would never be released).
   */
  abandon(): void;
}

export function createWriteLock(): WriteLock {
  return openWriteLock(new SharedArrayBuffer(SLOTS * Int32Array.BYTES_PER_ELEMENT));
}

export function openWriteLock(buffer: SharedArrayBuffer): WriteLock {
  const slots = new Int32Array(buffer);
  const abandoned = () => Atomics.load(slots, ABANDONED) === 1;
  return {
    buffer,
    async acquire() {
      if (abandoned()) return;
      // Int32 arithmetic wraps around the same way for both counters, so equality stays meaningful.
      const ticket = Atomics.add(slots, NEXT, 1);
      // A pending waitAsync does not keep the event loop alive (nodejs/node#44729): a thread with nothing
      // else to do would end with its ticket unserved, and every later ticket with it. A timer holds it open.
      let alive: NodeJS.Timeout | undefined;
      try {
        for (;;) {
          const serving = Atomics.load(slots, SERVING);
          if (serving === ticket || abandoned()) break;
          alive ??= setInterval(() => undefined, KEEP_ALIVE_MS);
          const wait = waitAsync(slots, SERVING, serving, KEEP_ALIVE_MS);
          if (wait.async) await wait.value;
        }
      } finally {
        if (alive) clearInterval(alive);
      }
    },
    release() {
      if (abandoned()) return;
      Atomics.add(slots, SERVING, 1);
      Atomics.notify(slots, SERVING);
    },
    held: () => !abandoned() && Atomics.load(slots, NEXT) !== Atomics.load(slots, SERVING),
    abandon() {
      Atomics.store(slots, ABANDONED, 1);
      Atomics.add(slots, SERVING, 1);
      Atomics.notify(slots, SERVING);
    },
  };
}
