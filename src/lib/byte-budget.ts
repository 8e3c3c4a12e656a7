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
