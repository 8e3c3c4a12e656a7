import { DEV_ASSERTIONS } from '../../db/unit-guard.js';
import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { iso } from '../../lib/clock.js';
import { forbidden, invalid } from '../../lib/errors.js';
import { looksLikeId, newId } from '../../lib/ids.js';
import type { Logger } from '../../lib/logger.js';
import { isAdmin, type Actor, type ActorKind, type TenantContext } from '../tenancy/tenancy.types.js';
import type { AuditAction } from './audit.actions.js';
import { withoutSecrets } from './audit-secrets.js';
import type { AuditFilter, AuditStore } from './audit.store.js';
import type { AuditLogTable } from './audit.table.js';

export { AUDIT_ACTIONS, AUDIT_ACTION_NAMES, type AuditAction } from './audit.actions.js';

/** One change to record. */
export interface AuditEntry {
  workspaceId: string;
  action: AuditAction;
  /** `actorOf(tenant)` for a request, `OPERATOR` for the CLI, `SYSTEM` for the service's own rules. */
  actor: Actor;
  /** What changed: `{ kind: 'webhook', id: 'whk_…' }`; null when the workspace itself is the target. */
  target: { kind: string; id: string } | null;
  /** Before/after values where they help. Never a secret (audit-secrets.ts). */
  details?: Record<string, unknown>;
}

export interface AuditEntryView {
  audit_id: string;
  action: string;
  actor: { kind: ActorKind; id: string | null; email: string | null };
  ip: string | null;
  created_at: string;
  target: { kind: string; id: string } | null;
  details: Record<string, unknown>;
}

export interface AuditQuery {
  limit?: number | undefined;
  before?: string | undefined;
  action?: string | undefined;
  actor?: string | undefined;
}

export interface AuditPage {
  entries: AuditEntryView[];
  /** Present when older entries remain: pass it as `before` for the next page. */
  next_before?: string;
}

/** The audit log: written by the services inside their own transactions, read by owners and admins. */
export interface AuditLog {
  /** Record one change in `work`, the transaction that makes it: it commits, or rolls back, with the change. */
  record(work: Work, entry: AuditEntry): Promise<void>;
  /** The workspace's entries, newest first (owner or admin). */
  list(tenant: TenantContext, query: AuditQuery): Promise<AuditPage>;
  /** Delete entries past the retention, in bounded batches; how many went. */
  sweep(): Promise<number>;
}

export const DEFAULT_AUDIT_PAGE = 50;
export const MAX_AUDIT_PAGE = 200;
const ACTOR_KINDS: readonly ActorKind[] = ['user', 'api_key', 'service_token', 'operator', 'system'];
/** An action name, or a family of them: `webhook`, `webhook.`, `webhook.*`, `member.role_changed`. */
const ACTION_FILTER = /^[a-z_]{1,40}(\.[a-z_]{0,40}|\.\*)?$/;
const SWEEP_BATCH = 1000;
/** Batches one sweep deletes at most; the next sweep goes on. */
const SWEEP_MAX_BATCHES = 50;
const DAY_MS = 86_400_000;

function toView(row: AuditLogTable): AuditEntryView {
  return {
    audit_id: row.id,
    action: row.action,
    actor: { kind: row.actor_kind as ActorKind, id: row.actor_id, email: row.actor_email },
    ip: row.ip,
    created_at: iso(row.created_at),
    target: row.target_kind === null || row.target_id === null ? null : { kind: row.target_kind, id: row.target_id },
    details: JSON.parse(row.details) as Record<string, unknown>,
  };
}

function actionFilter(raw: string | undefined): AuditFilter['action'] {
  if (raw === undefined || raw === '') return undefined;
  const value = raw.trim().toLowerCase();
  if (!ACTION_FILTER.test(value)) throw invalid('invalid_action', `action: '${raw}' is not an action name (member.added) or a family (webhook.)`);
  if (value.endsWith('.*')) return { prefix: value.slice(0, -1) };
  if (value.endsWith('.')) return { prefix: value };
  if (!value.includes('.')) return { prefix: `${value}.` };
  return { exact: value };
}

function actorFilter(raw: string | undefined): AuditFilter['actor'] {
  if (raw === undefined || raw.trim() === '') return undefined;
  const value = raw.trim();
  if (value.includes('@')) return { email: value.toLowerCase() };
  const kind = ACTOR_KINDS.find((k) => k === value);
  return kind ? { kind } : { id: value };
}

export function createAuditLog({ store, work, clock, retentionDays }: { store: AuditStore; work: Work; clock: Clock; retentionDays: number }): AuditLog {
  return {
    async record(trx, entry) {
      const details = withoutSecrets(entry.details ?? {}, DEV_ASSERTIONS);
      await store.insert(trx, {
        id: newId('aud'),
        workspace_id: entry.workspaceId,
        action: entry.action,
        actor_kind: entry.actor.kind,
        actor_id: entry.actor.id,
        actor_email: entry.actor.email,
        ip: entry.actor.ip,
        target_kind: entry.target?.kind ?? null,
        target_id: entry.target?.id ?? null,
        details: JSON.stringify(details),
        created_at: clock.now(),
      });
    },

    async list(tenant, query) {
      if (!isAdmin(tenant.role)) throw forbidden('forbidden_role', 'the audit log needs the owner or admin role');
      const limit = query.limit ?? DEFAULT_AUDIT_PAGE;
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_AUDIT_PAGE) throw invalid('invalid_request', `limit must be 1–${MAX_AUDIT_PAGE}`);
      if (query.before !== undefined && !looksLikeId(query.before, 'aud')) throw invalid('invalid_before', `before: not an audit id (aud_…): ${query.before}`);
      const filter: AuditFilter = { before: query.before, action: actionFilter(query.action), actor: actorFilter(query.actor), limit: limit + 1 };
      const rows = await store.page(work, tenant.workspaceId, filter);
      const shown = rows.slice(0, limit);
      const page: AuditPage = { entries: shown.map(toView) };
      if (rows.length > limit) page.next_before = shown[shown.length - 1]!.id;
      return page;
    },

    async sweep() {
      if (retentionDays <= 0) return 0;
      const cutoff = clock.now() - retentionDays * DAY_MS;
      let deleted = 0;
      for (let i = 0; i < SWEEP_MAX_BATCHES; i++) {
        const n = await store.deleteBefore(work, cutoff, SWEEP_BATCH);
        deleted += n;
        if (n < SWEEP_BATCH) break;
      }
      return deleted;
    },
  };
}

const SWEEP_INTERVAL_MS = 10 * 60_000;

/** The retention sweep of the worker role: every 10 minutes, logged when it deletes. */
export function startAuditSweeps(audit: Pick<AuditLog, 'sweep'>, logger: Logger): () => void {
  const timer = setInterval(() => {
    audit.sweep().then(
      (deleted) => {
        if (deleted > 0) logger.info({ deleted }, 'audit log: entries past retention deleted');
      },
      (err: unknown) => logger.warn({ err }, 'audit log sweep failed'),
    );
  }, SWEEP_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
