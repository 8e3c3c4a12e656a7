import { DomainError, withFields } from '../../lib/errors.js';

/** The quotas an operator may set per workspace (`mailroom admin quota set WORKSPACE NAME VALUE`). */
export const QUOTA_NAMES = ['mailboxes', 'stored_bytes', 'sent_per_hour', 'sent_per_day', 'api_requests_per_minute'] as const;
export type QuotaName = (typeof QUOTA_NAMES)[number];

/** Each quota's limit; null = unlimited. */
export type Quotas = Record<QuotaName, number | null>;

/** What a workspace holds and has sent, as its quotas count it. */
export interface Usage {
  mailboxes: number;
  /** Raw size of every stored message (received mail and sent copies). */
  stored_bytes: number;
  /** Messages sent in the current clock hour. */
  sent_last_hour: number;
  /** Messages sent in the current clock hour and the 23 before it. */
  sent_last_day: number;
}

/** `GET /app/api/usage`, `GET /usage` and `usageOf`: usage beside the limits in force. */
export interface UsageReport {
  usage: Usage;
  quotas: Quotas;
}

/** Where each limit in force comes from: the workspace's own setting or the service-wide default. */
export type QuotaSources = Record<QuotaName, 'workspace' | 'default'>;

/** The operator's view (`mailroom admin quota show WORKSPACE --json`). */
export interface QuotaShow extends UsageReport {
  workspace_id: string;
  sources: QuotaSources;
}

export const isQuotaName = (name: string): name is QuotaName => (QUOTA_NAMES as readonly string[]).includes(name);

/**
 * Over a quota: 429 `quota_exceeded` naming it. `retryAfterSeconds` only where waiting helps (the hourly, daily
 * and per-minute windows), none for stored bytes or mailboxes, which only a delete or a higher quota frees.
 */
export function quotaExceeded(quota: QuotaName, detail: string, retryAfterSeconds?: number): DomainError {
  return withFields(new DomainError('rate_limited', 'quota_exceeded', detail, retryAfterSeconds), { quota });
}

export const isQuotaExceeded = (err: unknown): err is DomainError => err instanceof DomainError && err.code === 'quota_exceeded';
