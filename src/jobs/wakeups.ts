/**
 * In-process wake-ups for workers: a producer that enqueued work asks for it to be claimed now
 * instead of at the worker's next poll. Workers in other processes still find it by polling.
 * Notify only after the enqueuing transaction commits (`afterCommit`): a claim on another
 * connection cannot see the job before that.
 */
export interface JobWakeups {
  notify(queue: string): void;
  /** Receive every notification (a worker's `wake`); returns the function that stops it. */
  subscribe(listener: (queue: string) => void): () => void;
}

export function createJobWakeups(): JobWakeups {
  const listeners = new Set<(queue: string) => void>();
  return {
    notify(queue) {
      for (const listener of listeners) listener(queue);
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
