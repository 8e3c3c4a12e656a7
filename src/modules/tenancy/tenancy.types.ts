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
