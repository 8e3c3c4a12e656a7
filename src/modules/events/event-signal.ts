/**
 * "A workspace has new events": rung after the events' transaction commits (in this process by an
 * after-commit hook, from other processes through the database's notifications), heard by the event
 * streams. `notifyAll` asks every listener to look again (after a lost notification channel reconnects).
 */
export interface EventSignal {
  notify(workspaceId: string): void;
  notifyAll(): void;
  /** Hear the workspace's signals; returns the function that stops listening. */
  subscribe(workspaceId: string, listener: () => void): () => void;
}

export function createEventSignal(): EventSignal {
  const listeners = new Map<string, Set<() => void>>();
  const call = (set: Iterable<() => void>) => {
    for (const listener of [...set]) listener();
  };
  return {
    notify(workspaceId) {
      const set = listeners.get(workspaceId);
      if (set) call(set);
    },
    notifyAll() {
      for (const set of [...listeners.values()]) call(set);
    },
    subscribe(workspaceId, listener) {
      let set = listeners.get(workspaceId);
      if (!set) listeners.set(workspaceId, (set = new Set()));
      set.add(listener);
      return () => {
        set.delete(listener);
        if (set.size === 0 && listeners.get(workspaceId) === set) listeners.delete(workspaceId);
      };
    },
  };
}
