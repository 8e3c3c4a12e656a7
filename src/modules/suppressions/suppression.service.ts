import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { iso } from '../../lib/clock.js';
import { DomainError, invalid, notFound, withFields } from '../../lib/errors.js';
import { actorOf, type TenantContext } from '../tenancy/tenancy.types.js';
import { AUDIT_ACTIONS } from '../audit/audit.actions.js';
import type { AuditLog } from '../audit/audit.service.js';
import { normalizeEmail } from '../tenancy/validation.js';
import type { SendingMailStore } from '../mail/sending-mail.store.js';
import { SUPPRESSION_REASONS, type SuppressionReason, type SuppressionTable } from '../mail/suppression.table.js';

export const MAX_DETAIL_LENGTH = 500;

export interface SuppressionView {
  address: string;
  reason: SuppressionReason;
  detail: string | null;
  status_code: string | null;
  message_id: string | null;
  created_at: string;
}

function toView(row: SuppressionTable): SuppressionView {
  return { address: row.address, reason: row.reason, detail: row.detail, status_code: row.status_code, message_id: row.message_id, created_at: iso(row.created_at) };
}

/** A DSN status of class 5 (RFC 3464 section 2.3.4, RFC 3463): permanent. 4.x.x and anything else is not. */
export const isPermanentStatus = (status: string | null | undefined): boolean => /^5\.\d{1,3}\.\d{1,3}$/.test(status?.trim() ?? '');

/**
 * The status of an SMTP reply: its enhanced code (RFC 2034, `550 5.1.1 …`), else its basic code (`550`).
 * An SMTP reply's `status` in the events and `status_code` in a suppression.
 */
export function replyStatus(code: number, response: string): string {
  return /^\d{3}[ -]([245]\.\d{1,3}\.\d{1,3})\b/.exec(response.trim())?.[1] ?? String(code);
}

/** 422 recipient_suppressed: every recipient of a send is suppressed. */
export function suppressedError(addresses: readonly string[]): DomainError {
  const error = new DomainError(
    'unprocessable',
    'recipient_suppressed',
    `${addresses.length === 1 ? 'the recipient is' : 'every recipient is'} on this workspace's suppression list (hard bounce, complaint or added by hand): ${addresses.join(', ')}; remove ${addresses.length === 1 ? 'it' : 'them'} with DELETE /app/api/suppressions/{address} to send again`,
  );
  return withFields(error, { suppressed: [...addresses] });
}

export interface SuppressionPage {
  suppressions: SuppressionView[];
  total: number;
  limit: number;
  offset: number;
}

/** The suppression list of the session surface. Automatic entries are written by the bounce and delivery paths (the mail store's `suppress`). */
export interface SuppressionService {
  list(tenant: TenantContext, query: { reason?: string | undefined; limit: number; offset: number }): Promise<SuppressionPage>;
  get(tenant: TenantContext, address: string): Promise<SuppressionView>;
  /** A manual entry; an address already suppressed keeps its row (`created: false`). */
  add(tenant: TenantContext, input: { address: string; detail?: string | undefined }): Promise<{ suppression: SuppressionView; created: boolean }>;
  /** Lift a suppression; returns it as it was. */
  remove(tenant: TenantContext, address: string): Promise<SuppressionView>;
}

function parseReason(value: string | undefined): SuppressionReason | undefined {
  if (value === undefined) return undefined;
  const reason = SUPPRESSION_REASONS.find((r) => r === value);
  if (!reason) throw invalid('invalid_reason', `reason must be one of ${SUPPRESSION_REASONS.join(', ')}`);
  return reason;
}

export interface SuppressionDeps {
  work: Work;
  clock: Clock;
  mail: Pick<SendingMailStore, 'suppressOne' | 'listSuppressions' | 'countSuppressions' | 'findSuppression' | 'unsuppress'>;
  /** Entries added and lifted by a person, in the audit log (bounces and complaints are the events' to tell). */
  audit: Pick<AuditLog, 'record'>;
}

export function createSuppressionService({ work, clock, mail, audit }: SuppressionDeps): SuppressionService {
  const record = (trx: Work, tenant: TenantContext, action: (typeof AUDIT_ACTIONS)['suppressionAdded' | 'suppressionRemoved'], row: SuppressionTable) =>
    audit.record(trx, { workspaceId: tenant.workspaceId, action, actor: actorOf(tenant), target: { kind: 'suppression', id: row.address }, details: { reason: row.reason, detail: row.detail } });

  async function findOrThrow(tenant: TenantContext, rawAddress: string): Promise<SuppressionTable> {
    const address = normalizeEmail(rawAddress);
    const row = address ? await mail.findSuppression(work, tenant.workspaceId, address) : undefined;
    if (!row) throw notFound('suppression_not_found', `${rawAddress} is not on this workspace's suppression list`);
    return row;
  }

  return {
    async list(tenant, query) {
      const reason = parseReason(query.reason);
      const [rows, total] = await Promise.all([mail.listSuppressions(work, tenant.workspaceId, reason, query.limit, query.offset), mail.countSuppressions(work, tenant.workspaceId, reason)]);
      return { suppressions: rows.map(toView), total, limit: query.limit, offset: query.offset };
    },

    get: async (tenant, address) => toView(await findOrThrow(tenant, address)),

    async add(tenant, input) {
      const address = normalizeEmail(input.address);
      if (!address) throw invalid('invalid_address', `address: '${input.address}' is not a valid email address`);
      const detail = input.detail?.trim() || null;
      if (detail && detail.length > MAX_DETAIL_LENGTH) throw invalid('invalid_request', `detail must be at most ${MAX_DETAIL_LENGTH} characters`);
      const row: SuppressionTable = { workspace_id: tenant.workspaceId, address, reason: 'manual', detail, status_code: null, message_id: null, created_at: clock.now() };
      const created = await work.transaction().execute(async (trx) => {
        // An address suppressed already changes nothing, and records nothing.
        if (!(await mail.suppressOne(trx, row))) return false;
        await record(trx, tenant, AUDIT_ACTIONS.suppressionAdded, row);
        return true;
      });
      // An address suppressed already keeps its row: a manual add does not hide the bounce or complaint that came first.
      const stored = created ? row : await mail.findSuppression(work, tenant.workspaceId, address);
      if (!stored) throw new Error('suppression vanished after a conflicting insert');
      return { suppression: toView(stored), created };
    },

    async remove(tenant, address) {
      const row = await findOrThrow(tenant, address);
      await work.transaction().execute(async (trx) => {
        await mail.unsuppress(trx, tenant.workspaceId, row.address);
        await record(trx, tenant, AUDIT_ACTIONS.suppressionRemoved, row);
      });
      return toView(row);
    },
  };
}
