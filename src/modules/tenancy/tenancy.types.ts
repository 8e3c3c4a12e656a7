import type { Role } from './tenancy.table.js';

/** Who is calling, after authentication, for a tenant-scoped operation. */
export interface TenantContext {
  workspaceId: string;
  /**
   * The session user's role, `api_key` (a workspace or platform key acts with admin rights), or
   * `service_token` (a transactional token: it may send from its one mailbox and nothing else).
   */
  role: Role | 'api_key' | 'service_token';
  /** The user behind a session; null for API keys. */
  userId: string | null;
}

/** A resolved API key: its tenant, and the key's id (what its requests are counted by). */
export interface ApiKeyContext extends TenantContext {
  apiKeyId: string;
}

/** An authenticated session (the workspace part may be absent: a user in no workspace yet). */
export interface SessionContext {
  sessionId: string;
  userId: string;
  email: string;
  activeWorkspaceId: string | null;
  role: Role | null;
  expiresAt: number;
  /** Set while the active workspace is suspended: acting in it answers 403 workspace_suspended. */
  suspension?: { reason: string | null } | null;
}

export interface WorkspaceMembershipView {
  workspace_id: string;
  name: string;
  role: Role;
}

export interface SessionView {
  ok: true;
  expires_at: string;
  user: { user_id: string; email: string };
  workspaces: WorkspaceMembershipView[];
  active_workspace_id: string | null;
}

export interface LoginView extends SessionView {
  session_token: string;
}

/** Roles allowed to administer a workspace (sending domains, service tokens, mailboxes). */
export function isAdmin(role: TenantContext['role']): boolean {
  return role === 'owner' || role === 'admin' || role === 'api_key';
}

/** A workspace API key as the session surface shows it: never the key itself. */
export interface ApiKeyView {
  key_id: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

/** The answer to creating a key: the only time `api_key` (the credential) is shown. */
export interface ApiKeyWithSecret extends ApiKeyView {
  api_key: string;
}

export interface MemberView {
  user_id: string;
  email: string;
  role: Role;
  joined_at: string;
}

export interface PasswordChangeView {
  ok: true;
  /** The user's other sessions that ended with the change. */
  sessions_ended: number;
}
