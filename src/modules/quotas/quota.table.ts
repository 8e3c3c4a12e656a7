import type { ColumnType } from 'kysely';

/** An operator's setting of one quota for one workspace; a quota without a row takes the service-wide default. */
export interface WorkspaceQuotaTable {
  workspace_id: string;
  /** One of QUOTA_NAMES (quota.types.ts). */
  name: string;
  /** The limit; null = unlimited (set so, whatever the default). PostgreSQL returns a bigint as a string. */
  value: ColumnType<number | string | null, number | null, number | null>;
  updated_at: number;
}

/** Messages a workspace sent (accepted for sending) in one clock hour, `window_start` its first millisecond. */
export interface QuotaSendCountTable {
  workspace_id: string;
  window_start: ColumnType<number | string, number, number>;
  sent: number;
}

/** The quotas module's tables: the operator's settings and the send counters they are checked against. */
export interface QuotaTables {
  workspace_quotas: WorkspaceQuotaTable;
  quota_send_counts: QuotaSendCountTable;
}
