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
  /**
   * Who acts, for the audit log: set by the transports (with the client's address) and by the CLI; a context made
   * without one (a test, an internal call) is described from `role` and `userId` by `actorOf`.
   */
  actor?: Actor;
}

/** Who made a change, as the audit log records it. `system` is the service itself (the webhook auto-disable). */
export type ActorKind = 'user' | 'api_key' | 'service_token' | 'operator' | 'system';

export interface Actor {
  kind: ActorKind;
  /** The user (usr_…), API key (key_…) or service token (tok_…); null for the operator and the system. */
  id: string | null;
  /** The user's email when the actor is a user. */
  email: string | null;
  /** The client's address of the request; null for the CLI and the worker. */
  ip: string | null;
}

/** The operator at the command line (`mailroom admin …`). */
export const OPERATOR: Actor = Object.freeze({ kind: 'operator', id: null, email: null, ip: null });
/** The service itself, acting on its own rules (a failing webhook disabled). */
export const SYSTEM: Actor = Object.freeze({ kind: 'system', id: null, email: null, ip: null });

/** The actor of a tenant context: the one the transport set, else what its role and user say. */
export function actorOf(tenant: TenantContext): Actor {
  if (tenant.actor) return tenant.actor;
  if (tenant.role === 'api_key' || tenant.role === 'service_token') return { kind: tenant.role, id: null, email: null, ip: null };
  return { kind: 'user', id: tenant.userId, email: null, ip: null };
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
  /** The client's address of the request (set by the transport), for the audit log. */
  ip?: string | null;
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
