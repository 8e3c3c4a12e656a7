import type { Release } from './byte-budget.js';

export type { Release } from './byte-budget.js';

/** Why a gate refused at once instead of queueing: the key's own queue is full, or every queue together is. */
export class GateFull extends Error {
  constructor(
    readonly key: string,
    readonly scope: 'key' | 'total',
  ) {
    super(scope === 'key' ? `too much work waiting for ${key}` : 'too much work waiting in all');
    this.name = 'GateFull';
  }
}

export interface FairGateOptions {
  /** Slots held at once by every key together (the process-wide cap). */
  total: number;
  /** Slots one key may hold at once (its share); at most `total`. */
  perKey: number;
  /** Requests one key may have waiting; past it `acquire` rejects with GateFull('key'). Default: no limit. */
  maxWaitingPerKey?: number;
  /** Requests waiting in all; past it `acquire` rejects with GateFull('total'). Default: no limit. */
  maxWaiting?: number;
}

/**
 * Slots for work that belongs to a tenant (usually a workspace id as the key): a process-wide cap, a cap
 * per key, and waiting requests granted round-robin across keys, so a key with a thousand requests queued
 * waits its turn behind a key with one instead of in front of it.
 */
export interface FairGate {
  /** Waits for a slot for `key`; rejects with GateFull when the waiting limits are reached. */
  acquire(key: string): Promise<Release>;
  /** A slot now, or null when `key` would have to wait. */
  tryAcquire(key: string): Release | null;
  /** Slots held now, in all and by one key. */
  readonly active: number;
  activeFor(key: string): number;
  /** Requests waiting now, in all and for one key. */
  readonly waiting: number;
  waitingFor(key: string): number;
}

export function createFairGate(options: FairGateOptions): FairGate {
  const perKey = Math.max(1, Math.min(options.perKey, options.total));
  const held = new Map<string, number>();
  // Insertion order is the round-robin: a key that was just served moves to the end.
  const queues = new Map<string, Array<(release: Release) => void>>();
  let active = 0;
  let waiting = 0;

  const heldBy = (key: string) => held.get(key) ?? 0;
  const canTake = (key: string) => active < options.total && heldBy(key) < perKey;

  function take(key: string): Release {
    active += 1;
    held.set(key, heldBy(key) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      active -= 1;
      const left = heldBy(key) - 1;
      if (left === 0) held.delete(key);
      else held.set(key, left);
      grantWaiting();
    };
  }

  /** Hands free slots to waiting keys, one grant per key per round. */
  function grantWaiting(): void {
    let granted = true;
    while (granted && active < options.total && waiting > 0) {
      granted = false;
      for (const [key, queue] of queues) {
        if (!canTake(key)) continue;
        const grant = queue.shift()!;
        waiting -= 1;
        queues.delete(key);
        if (queue.length > 0) queues.set(key, queue);
        grant(take(key));
        granted = true;
        break;
      }
    }
  }

  return {
    acquire(key) {
      if (!queues.has(key) && canTake(key)) return Promise.resolve(take(key));
      const queue = queues.get(key) ?? [];
      if (options.maxWaitingPerKey !== undefined && queue.length >= options.maxWaitingPerKey) return Promise.reject(new GateFull(key, 'key'));
      if (options.maxWaiting !== undefined && waiting >= options.maxWaiting) return Promise.reject(new GateFull(key, 'total'));
      return new Promise((grant) => {
        queue.push(grant);
        waiting += 1;
        if (!queues.has(key)) queues.set(key, queue);
      });
    },
    tryAcquire(key) {
      return !queues.has(key) && canTake(key) ? take(key) : null;
    },
    get active() {
      return active;
    },
    activeFor: heldBy,
    get waiting() {
      return waiting;
    },
    waitingFor: (key) => queues.get(key)?.length ?? 0,
  };
}
