import type { Work } from '../../db/tables.js';
import type { AppPasswordStore } from './app-password.store.js';

/** What a mail-client session was opened with (AppPasswordLogin's `ok` answer). */
export interface SessionCredential {
  appPasswordId: string;
  workspaceId: string;
  userId: string;
}

/**
 * Open mail-client sessions (IMAP, SMTP submission) of this process and the credentials they were opened with. When a
 * credential ends (revoked; its mailbox, maker or workspace deleted; the maker removed; the workspace suspended) each
 * session opened with it is told once through its `end` callback and must close.
 *
 * How it learns: a change that may end credentials calls `workspaceChanged` / `userChanged` after its commit, in this
 * process directly and in the others through the database's notifications (the same path that ends the HTTP event
 * streams of a revoked session); the open sessions concerned are then checked in one query. A periodic check of every
 * open session covers a missed notification (a listener that reconnected, a change made by the CLI in another process).
 */
export interface AppPasswordSessions {
  /** Follow a session; the returned function stops following it (the session closed on its own). */
  watch(credential: SessionCredential, end: () => void): () => void;
  /** Credentials of this workspace may have ended: check its open sessions now. */
  workspaceChanged(workspaceId: string): void;
  /** This user's memberships may have changed: check their sessions now. */
  userChanged(userId: string): void;
  /** Check every open session now (notifications may have been missed). */
  recheckAll(): void;
  /** Whether a credential still holds, read now (a session may ask before a command that changes mail). */
  isLive(appPasswordId: string): Promise<boolean>;
  /** Sessions followed in this process. */
  open(): number;
  close(): void;
}

/** Every open session is checked at least this often, whatever the notifications say. */
export const SESSION_RECHECK_MS = 30_000;

interface Watched {
  credential: SessionCredential;
  end: () => void;
}

export function createAppPasswordSessions(deps: {
  work: Work;
  store: Pick<AppPasswordStore, 'live'>;
  recheckMs?: number;
  onError?: (err: unknown) => void;
}): AppPasswordSessions {
  const watched = new Set<Watched>();
  let timer: NodeJS.Timeout | undefined;

  async function check(sessions: readonly Watched[]): Promise<void> {
    if (sessions.length === 0) return;
    try {
      const live = await deps.store.live(deps.work, [...new Set(sessions.map((s) => s.credential.appPasswordId))]);
      for (const s of sessions) {
        if (live.has(s.credential.appPasswordId) || !watched.delete(s)) continue;
        s.end();
      }
    } catch (err) {
      deps.onError?.(err);
    } finally {
      if (watched.size === 0) stopTimer();
    }
  }
  const checkWhere = (pick: (c: SessionCredential) => boolean): void => void check([...watched].filter((s) => pick(s.credential)));
  function stopTimer(): void {
    if (timer !== undefined) clearInterval(timer);
    timer = undefined;
  }

  return {
    watch(credential, end) {
      const entry = { credential, end };
      watched.add(entry);
      if (timer === undefined) {
        timer = setInterval(() => void check([...watched]), deps.recheckMs ?? SESSION_RECHECK_MS);
        timer.unref();
      }
      return () => {
        watched.delete(entry);
        if (watched.size === 0) stopTimer();
      };
    },
    workspaceChanged: (workspaceId) => checkWhere((c) => c.workspaceId === workspaceId),
    userChanged: (userId) => checkWhere((c) => c.userId === userId),
    recheckAll: () => void check([...watched]),
    isLive: async (id) => (await deps.store.live(deps.work, [id])).has(id),
    open: () => watched.size,
    close() {
      stopTimer();
      watched.clear();
    },
  };
}
