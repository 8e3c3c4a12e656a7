import { AUDIT_ACTIONS, type AuditAction } from '../audit/audit.actions.js';
import type { AuditLog } from '../audit/audit.service.js';
import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { iso } from '../../lib/clock.js';
import { conflict, invalid, notFound } from '../../lib/errors.js';
import type { TenancyStore } from './tenancy.store.js';
import type { WorkspaceState } from './tenancy.table.js';
import type { GoneWorkspaces } from './workspace-state.js';
import { OPERATOR } from './tenancy.types.js';

const DAY_MS = 86_400_000;
/** Workspaces read (and their usage asked) at a time by the listing. */
const LIST_PAGE = 500;
/** Rows a purge statement deletes at most, unless the operator says otherwise. */
export const DEFAULT_PURGE_BATCH = 500;
const MAX_PURGE_BATCH = 10_000;
export const MAX_SUSPEND_REASON_LENGTH = 500;

/** A workspace's usage as the listing shows it. */
export interface WorkspaceUsage {
  mailboxes: number;
  messages: number;
  stored_bytes: number;
  sent_last_day: number;
}

export interface WorkspaceListing {
  workspace_id: string;
  name: string;
  state: WorkspaceState;
  state_reason: string | null;
  state_changed_at: string | null;
  created_at: string;
  usage: WorkspaceUsage;
}

/**
 * One module's part of a purge: deletes up to `limit` of the workspace's rows of its tables (the first that still has
 * some) in one short statement, through the store that owns them; 0 once it has none left.
 */
export interface PurgeStep {
  name: string;
  batch(work: Work, workspaceId: string, limit: number): Promise<number>;
}

/** One batch of a purge, for progress reports. */
export interface PurgeProgress {
  step: string;
  deleted: number;
  /** Rows this step has deleted so far in this run. */
  stepTotal: number;
  batches: number;
}

export interface DeleteOptions {
  /** Rows per statement (default DEFAULT_PURGE_BATCH). */
  batchSize?: number | undefined;
  /** Stop after this many batches, leaving the rest for a later run (the workspace stays `deleting`). */
  maxBatches?: number | undefined;
  onProgress?: ((progress: PurgeProgress) => void) | undefined;
}

export interface DeleteOutcome {
  workspace_id: string;
  /** False when `maxBatches` stopped it: run it again to finish. */
  finished: boolean;
  batches: number;
  /** Rows deleted in this run by each step (rows that went with them by a foreign key not counted). */
  deleted: Record<string, number>;
}

/** The operator's controls of whole workspaces (`mailroom admin list-workspaces | suspend | resume | delete-workspace`). */
export interface WorkspaceLifecycle {
  list(): Promise<{ workspaces: WorkspaceListing[] }>;
  suspend(workspaceId: string, reason?: string): Promise<{ workspace_id: string; state: 'suspended'; reason: string | null; changed: boolean }>;
  resume(workspaceId: string): Promise<{ workspace_id: string; state: 'active'; changed: boolean }>;
  /**
   * Mark the workspace `deleting` (from then on its credentials are unknown and its mailboxes refuse mail), then delete
   * its rows module by module in bounded batches, the workspace row last. A workspace already `deleting` (an
   * interrupted run) carries on where the rows left off.
   */
  delete(workspaceId: string, options?: DeleteOptions): Promise<DeleteOutcome>;
}

export interface LifecycleDeps {
  work: Work;
  store: Pick<TenancyStore, 'findWorkspace' | 'setWorkspaceState' | 'listWorkspacesPage' | 'purgeTenancyBatch' | 'deleteWorkspaceRow'>;
  clock: Clock;
  /** Each module's usage of a page of workspaces (mail: mailboxes, messages, bytes, sends since a time). */
  usage: (work: Work, workspaceIds: readonly string[], since: number) => Promise<Map<string, { mailboxes: number; messages: number; stored_bytes: number; sent_since: number }>>;
  /** The other modules' purges, in the order they run (the tenancy rows follow them). */
  purges: readonly PurgeStep[];
  /** This process's view of workspaces being deleted, read again after a change here. */
  gone?: GoneWorkspaces | undefined;
  /** Suspensions, resumptions and deletions, in the workspace's audit log (kept after the workspace is gone). */
  audit: Pick<AuditLog, 'record'>;
  /** Called after a state change commits: the workspace's open mail-client sessions are checked. */
  stateChanged?: (workspaceId: string) => void;
}

function checkReason(reason: string | undefined): string | null {
  const trimmed = reason?.trim() ?? '';
  if (trimmed.length > MAX_SUSPEND_REASON_LENGTH) throw invalid('invalid_reason', `the reason must be at most ${MAX_SUSPEND_REASON_LENGTH} characters`);
  return trimmed === '' ? null : trimmed;
}

function checkBatchSize(size: number | undefined): number {
  if (size === undefined) return DEFAULT_PURGE_BATCH;
  if (!Number.isInteger(size) || size < 1 || size > MAX_PURGE_BATCH) throw invalid('invalid_batch_size', `the batch size must be 1–${MAX_PURGE_BATCH}`);
  return size;
}

export function createWorkspaceLifecycle(deps: LifecycleDeps): WorkspaceLifecycle {
  const { work, store, clock } = deps;

  async function existing(workspaceId: string) {
    const workspace = await store.findWorkspace(work, workspaceId);
    if (!workspace) throw notFound('workspace_not_found', `no workspace ${workspaceId}`);
    if (workspace.state === 'deleting') throw conflict('workspace_deleting', `workspace ${workspaceId} is being deleted; run delete-workspace again to finish`);
    return workspace;
  }

  /** Mark the workspace `deleting` unless it is already (a run that was interrupted); 404 when there is none. */
  /** Change the state and record it in one transaction; false when the workspace was in none of `from`. */
  async function changeState(workspaceId: string, change: { state: WorkspaceState; from: readonly WorkspaceState[]; reason: string | null }, action: AuditAction, details?: Record<string, unknown>) {
    const changed = await work.transaction().execute(async (trx) => {
      const done = await store.setWorkspaceState(trx, workspaceId, { ...change, at: clock.now() });
      if (done) await deps.audit.record(trx, { workspaceId, action, actor: OPERATOR, target: { kind: 'workspace', id: workspaceId }, details });
      return done;
    });
    if (changed) deps.stateChanged?.(workspaceId);
    return changed;
  }

  async function markDeleting(workspaceId: string): Promise<void> {
    const marked = await changeState(workspaceId, { state: 'deleting', from: ['active', 'suspended'], reason: null }, AUDIT_ACTIONS.workspaceDeleted);
    if (!marked && (await store.findWorkspace(work, workspaceId))?.state !== 'deleting') throw notFound('workspace_not_found', `no workspace ${workspaceId}`);
    deps.gone?.forget();
  }

  return {
    async list() {
      const since = clock.now() - DAY_MS;
      const workspaces: WorkspaceListing[] = [];
      for (let after = ''; ; ) {
        const page = await store.listWorkspacesPage(work, after, LIST_PAGE);
        const usage = await deps.usage(work, page.map((w) => w.id), since);
        for (const w of page) {
          const u = usage.get(w.id);
          workspaces.push({
            workspace_id: w.id,
            name: w.name,
            state: w.state,
            state_reason: w.state_reason,
            state_changed_at: w.state_changed_at === null ? null : iso(Number(w.state_changed_at)),
            created_at: iso(Number(w.created_at)),
            usage: { mailboxes: u?.mailboxes ?? 0, messages: u?.messages ?? 0, stored_bytes: u?.stored_bytes ?? 0, sent_last_day: u?.sent_since ?? 0 },
          });
        }
        if (page.length < LIST_PAGE) return { workspaces };
        after = page[page.length - 1]!.id;
      }
    },

    async suspend(workspaceId, reasonInput) {
      const reason = checkReason(reasonInput);
      const before = await existing(workspaceId);
      // A suspended workspace suspended again keeps its state and takes the new reason.
      const changed = await changeState(workspaceId, { state: 'suspended', from: ['active', 'suspended'], reason }, AUDIT_ACTIONS.workspaceSuspended, { reason });
      if (!changed) await existing(workspaceId);
      return { workspace_id: workspaceId, state: 'suspended' as const, reason, changed: before.state !== 'suspended' };
    },

    async resume(workspaceId) {
      await existing(workspaceId);
      const changed = await changeState(workspaceId, { state: 'active', from: ['suspended'], reason: null }, AUDIT_ACTIONS.workspaceResumed);
      if (!changed) await existing(workspaceId);
      return { workspace_id: workspaceId, state: 'active' as const, changed };
    },

    async delete(workspaceId, options = {}) {
      const limit = checkBatchSize(options.batchSize);
      await markDeleting(workspaceId);
      const steps: PurgeStep[] = [...deps.purges, { name: 'tenancy', batch: (w, id, n) => store.purgeTenancyBatch(w, id, n) }];
      const deleted: Record<string, number> = {};
      let batches = 0;
      for (const step of steps) {
        let stepTotal = 0;
        for (;;) {
          deleted[step.name] = stepTotal;
          if (options.maxBatches !== undefined && batches >= options.maxBatches) return { workspace_id: workspaceId, finished: false, batches, deleted };
          const n = await step.batch(work, workspaceId, limit);
          if (n === 0) break;
          batches += 1;
          stepTotal += n;
          options.onProgress?.({ step: step.name, deleted: n, stepTotal, batches });
        }
      }
      await store.deleteWorkspaceRow(work, workspaceId);
      return { workspace_id: workspaceId, finished: true, batches, deleted };
    },
  };
}
