import { performance } from 'node:perf_hooks';
import type { Work } from '../../db/tables.js';
import { forbidden, type DomainError } from '../../lib/errors.js';

/** The refusal of a suspended workspace's sends, logins and API calls (HTTP 403), naming the suspension. */
export function workspaceSuspended(workspaceId: string, reason: string | null): DomainError {
  const why = reason ? `: ${reason}` : '';
  return forbidden('workspace_suspended', `workspace ${workspaceId} is suspended by the operator${why}; its data is kept and inbound mail is still stored`);
}

/**
 * What a credential of a workspace in this state may do: pass (`ok`), be refused with 403 (`suspended`) or be
 * treated as unknown (`gone`: a workspace being deleted behaves as if it were deleted already).
 */
export function credentialVerdict(state: string | null): 'ok' | 'suspended' | 'gone' {
  if (state === 'suspended') return 'suspended';
  return state === 'deleting' ? 'gone' : 'ok';
}

/** How long a process trusts its list of workspaces being deleted (inbound RCPT checks read it). */
export const GONE_CACHE_MS = 1000;

export interface GoneWorkspaces {
  /** Whether the workspace is being deleted, as read at most GONE_CACHE_MS ago in this process. */
  has(workspaceId: string): Promise<boolean>;
  /** Read again at the next question (this process changed a state). */
  forget(): void;
}

/**
 * The workspaces being deleted, read once a second at most per process: inbound mail to their mailboxes is refused
 * as to unknown recipients without a query per RCPT. Another process's change is seen within GONE_CACHE_MS. The
 * age is measured on the process's monotonic clock, not the service clock (tests stop that one).
 */
export function createGoneWorkspaces(work: Work, list: (work: Work) => Promise<string[]>): GoneWorkspaces {
  let cached: { ids: Set<string>; at: number } | undefined;
  let pending: Promise<Set<string>> | undefined;
  async function current(): Promise<Set<string>> {
    if (cached && performance.now() - cached.at < GONE_CACHE_MS) return cached.ids;
    pending ??= list(work).then(
      (ids) => {
        cached = { ids: new Set(ids), at: performance.now() };
        pending = undefined;
        return cached.ids;
      },
      (err: unknown) => {
        pending = undefined;
        throw err;
      },
    );
    return pending;
  }
  return {
    has: async (workspaceId) => (await current()).has(workspaceId),
    forget() {
      cached = undefined;
    },
  };
}
