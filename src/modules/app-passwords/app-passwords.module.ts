import type { Work } from '../../db/tables.js';
import { createAppPasswordService, type AppPasswordDeps, type AppPasswordService } from './app-password.service.js';
import { createAppPasswordSessions, type AppPasswordSessions } from './app-password-sessions.js';
import type { AppPasswordStore } from './app-password.store.js';

/** App passwords: what the session API manages, what IMAP and submission log in with, and their open sessions. */
export interface AppPasswordsModule {
  service: AppPasswordService;
  sessions: AppPasswordSessions;
}

export function createAppPasswordsModule(deps: AppPasswordDeps & { work: Work; store: AppPasswordStore; onError?: (err: unknown) => void; recheckMs?: number }): AppPasswordsModule {
  const sessions = createAppPasswordSessions({ work: deps.work, store: deps.store, onError: deps.onError, recheckMs: deps.recheckMs });
  return { service: createAppPasswordService(deps), sessions };
}
