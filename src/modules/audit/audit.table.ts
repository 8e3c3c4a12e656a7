/** Row type of the audit log. Times are epoch milliseconds. */
export interface AuditLogTable {
  /** `aud_…`: a ULID, so ids sort by creation (the paging cursor). */
  id: string;
  workspace_id: string;
  /** `member.added`, `webhook.secret_rotated`, … (AUDIT_ACTIONS). */
  action: string;
  /** user, api_key, service_token, operator or system. */
  actor_kind: string;
  actor_id: string | null;
  actor_email: string | null;
  ip: string | null;
  /** What was changed: `member`, `webhook`, … and its id (a user id, an address, a list entry). */
  target_kind: string | null;
  target_id: string | null;
  /** A JSON object: before/after values where they help; never a secret. */
  details: string;
  created_at: number;
}

/** The audit module's table. */
export interface AuditTables {
  audit_log: AuditLogTable;
}
