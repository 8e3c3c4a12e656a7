import type { RetentionConfig } from '../../config/config.js';
import type { Work } from '../../db/tables.js';
import { forbidden, invalid } from '../../lib/errors.js';
import type { MailStore } from '../mail/mail.store.js';
import type { RetentionSettings } from '../mail/retention.store.js';
import { actorOf, isAdmin, type TenantContext } from '../tenancy/tenancy.types.js';
import { AUDIT_ACTIONS } from '../audit/audit.actions.js';
import type { AuditLog } from '../audit/audit.service.js';

/** The longest period a workspace may choose (ten years); 0 or null: never. */
export const MAX_RETENTION_DAYS = 3650;

/** The operator's periods in days (MAILROOM_RETENTION_*, read by config.ts); 0 = never. */
export type RetentionPolicy = Omit<RetentionConfig, 'intervalMs' | 'batch'>;

/** Days, or null for never (0 in settings and configuration). */
type Days = number | null;

/** What `GET /app/api/retention` answers. */
export interface RetentionView {
  /** Days a message stays in `trash` (counted from its last change: moved there, read, labelled); null = never. */
  trash_days: Days;
  spam_days: Days;
  /** Whether the workspace chose the period itself (false: the operator's default, which may change). */
  trash_custom: boolean;
  spam_custom: boolean;
  /** The operator's defaults for the two folders. */
  defaults: { trash_days: Days; spam_days: Days };
  /** Periods of the service's own records, set by the operator for every workspace. */
  records: { events_days: Days; webhook_attempts_days: Days; dead_jobs_days: Days; idempotency_days: Days };
}

/** A change: a number of days (1 to 3650), or 0 or null for never; a field left out stays. */
export interface RetentionChange {
  trash_days?: number | null | undefined;
  spam_days?: number | null | undefined;
}

export interface RetentionService {
  /** The workspace's retention periods (every role may read them). */
  get(tenant: TenantContext): Promise<RetentionView>;
  /** Set the workspace's periods for `trash` and `spam` (owner or admin). */
  update(tenant: TenantContext, change: RetentionChange): Promise<RetentionView>;
}

export interface RetentionServiceDeps {
  work: Work;
  mail: Pick<MailStore, 'retentionSettings' | 'saveRetentionSettings'>;
  policy: RetentionPolicy;
  /** Each change of the periods, in the workspace's audit log. */
  audit: Pick<AuditLog, 'record'>;
}

const days = (n: number): Days => (n === 0 ? null : n);

function checked(name: string, value: number | null | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (value === null) return 0;
  if (!Number.isInteger(value) || value < 0 || value > MAX_RETENTION_DAYS) {
    throw invalid('invalid_retention', `${name} must be a whole number of days 1..${MAX_RETENTION_DAYS}, or 0 or null for never`);
  }
  return value;
}

export function createRetentionService({ work, mail, policy, audit }: RetentionServiceDeps): RetentionService {
  function view(own: RetentionSettings | undefined): RetentionView {
    const trash = own?.trash_days ?? null;
    const spam = own?.spam_days ?? null;
    return {
      trash_days: days(trash ?? policy.trashDays),
      spam_days: days(spam ?? policy.spamDays),
      trash_custom: trash !== null,
      spam_custom: spam !== null,
      defaults: { trash_days: days(policy.trashDays), spam_days: days(policy.spamDays) },
      records: {
        events_days: days(policy.eventsDays),
        webhook_attempts_days: days(policy.webhookAttemptsDays),
        dead_jobs_days: days(policy.deadJobsDays),
        idempotency_days: days(policy.idempotencyDays),
      },
    };
  }

  return {
    get: async (tenant) => view(await mail.retentionSettings(work, tenant.workspaceId)),
    async update(tenant, change) {
      if (!isAdmin(tenant.role)) throw forbidden('forbidden_role', 'retention settings need the owner or admin role');
      const values = { trash_days: checked('trash_days', change.trash_days), spam_days: checked('spam_days', change.spam_days) };
      const given = Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as Partial<RetentionSettings>;
      if (Object.keys(given).length > 0) {
        const before = await mail.retentionSettings(work, tenant.workspaceId);
        await work.transaction().execute(async (trx) => {
          await mail.saveRetentionSettings(trx, tenant.workspaceId, given);
          const was = Object.fromEntries(Object.keys(given).map((k) => [k, before?.[k as keyof RetentionSettings] ?? null]));
          await audit.record(trx, { workspaceId: tenant.workspaceId, action: AUDIT_ACTIONS.retentionSet, actor: actorOf(tenant), target: null, details: { before: was, after: given } });
        });
      }
      return view(await mail.retentionSettings(work, tenant.workspaceId));
    },
  };
}
