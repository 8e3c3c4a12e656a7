import type { ColumnType } from 'kysely';

/** Row types of the tenancy tables. Times are epoch milliseconds. */
export const ROLES = ['owner', 'admin', 'member'] as const;
export type Role = (typeof ROLES)[number];

/**
 * `active`; `suspended` by the operator (credentials answer 403 workspace_suspended, queued work is held);
 * `deleting`: behaves as gone while its rows are deleted (mailroom admin delete-workspace).
 */
export const WORKSPACE_STATES = ['active', 'suspended', 'deleting'] as const;
export type WorkspaceState = (typeof WORKSPACE_STATES)[number];

export interface WorkspaceTable {
  id: string;
  name: string;
  created_at: number;
  state: ColumnType<WorkspaceState, WorkspaceState | undefined, WorkspaceState>;
  /** The operator's reason for the last suspension (null when none was given, or once resumed). */
  state_reason: ColumnType<string | null, string | null | undefined, string | null>;
  /** When the state last changed; null while it never has. */
  state_changed_at: ColumnType<number | null, number | null | undefined, number | null>;
}

export interface UserTable {
  id: string;
  email: string;
  password_hash: string;
  created_at: number;
}

export interface MembershipTable {
  workspace_id: string;
  user_id: string;
  role: Role;
  created_at: number;
}

export interface ApiKeyTable {
  id: string;
  /** null for a platform (operator-level) key. */
  workspace_id: string | null;
  /** A label for people (empty when none was given). */
  name: string;
  token_hash: string;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

export interface SessionTable {
  id: string;
  user_id: string;
  token_hash: string;
  active_workspace_id: string | null;
  created_at: number;
  last_seen_at: number;
  /** Absolute expiry; the idle expiry is derived from last_seen_at. */
  expires_at: number;
  revoked_at: number | null;
}

export interface LoginFailureTable {
  id: string;
  email: string;
  /** The client address it came from (IPv4, or the IPv6 /64); '' for rows from before addresses were kept. */
  client: string;
  failed_at: number;
}

/** One HTTP rate-limit bucket's requests in one window (see transports/http/plugins/rate-limit.ts). */
export interface RequestCountTable {
  /** `key:…`, `ses:…`, `tok:…` or `ip:…`. */
  bucket: string;
  window_start: number;
  hits: number;
}

/** The tenancy module's tables: workspaces, their users and memberships, credentials (API keys, sessions) and the counters that rate-limit logins and requests. */
export interface TenancyTables {
  workspaces: WorkspaceTable;
  users: UserTable;
  memberships: MembershipTable;
  api_keys: ApiKeyTable;
  sessions: SessionTable;
  login_failures: LoginFailureTable;
  request_counts: RequestCountTable;
}
