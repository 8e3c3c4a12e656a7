import ipaddr from 'ipaddr.js';
import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { iso } from '../../lib/clock.js';
import { forbidden, invalid, notFound, rateLimited, unauthorized } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import { DUMMY_PASSWORD_HASH, hashPassword, hashToken, newToken, verifyPassword } from '../../lib/secrets.js';
import { AUDIT_ACTIONS } from '../audit/audit.actions.js';
import type { AuditLog } from '../audit/audit.service.js';
import type { TenancyStore } from './tenancy.store.js';
import type { Actor, ApiKeyContext, LoginView, PasswordChangeView, SessionContext, SessionView, TenantContext } from './tenancy.types.js';
import { checkPassword, normalizeEmail } from './validation.js';
import { createRequestCounter } from './request-counter.js';
import { credentialVerdict, workspaceSuspended } from './workspace-state.js';

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;
/** Sessions end after 14 days without use or 30 days after login, whichever is first. */
export const SESSION_IDLE_MS = 14 * DAY_MS;
export const SESSION_ABSOLUTE_MS = 30 * DAY_MS;
/**
 * Failed logins for one email from one client address (an IPv4 address or an IPv6 /64) within the window, after which
 * that address is refused for that email until the window passes (MAILROOM_LOGIN_FAILURES_PER_ADDRESS).
 */
export const LOGIN_FAILURE_LIMIT = 10;
/**
 * Failed logins for one email from every address within the window, past which each address gets one attempt (its
 * first failure in the window) instead of LOGIN_FAILURE_LIMIT: a guesser spread over many addresses is slowed to one
 * guess per address, while the owner, at an address that has not failed, still logs in (MAILROOM_LOGIN_FAILURES_PER_ACCOUNT).
 */
export const LOGIN_ACCOUNT_FAILURE_LIMIT = 100;
export const LOGIN_FAILURE_WINDOW_MS = 15 * MINUTE_MS;

/** The login throttle's limits (the settings above). */
export interface LoginLimits {
  perAddress: number;
  perAccount: number;
}

/** Where a login attempt comes from: the address itself for IPv4, its /64 for IPv6 (one subscriber's block). */
export function loginClientKey(ip: string): string {
  const bare = ip.startsWith('::ffff:') && ip.includes('.') ? ip.slice('::ffff:'.length) : ip;
  if (!bare.includes(':')) return bare;
  try {
    const parts = ipaddr.IPv6.parse(bare).parts.slice(0, 4);
    return `${parts.map((p) => p.toString(16)).join(':')}::/64`;
  } catch {
    return bare;
  }
}
/**
 * The login throttle: failed attempts per account name and client address, counted in the database every process
 * shares. HTTP logins count under the user's email; mail clients' logins under `mailbox:<address>` (app-passwords),
 * so a guesser at a mailbox does not lock its owner out of the web app, nor the other way round.
 */
export interface LoginThrottle {
  /**
   * Count an attempt as a failure before its password is checked; throws 429 too_many_login_attempts (with the
   * seconds to wait) when `account` is over its limit from `client` (a loginClientKey).
   */
  count(account: string, client: string, now?: number): Promise<void>;
  /** The password was right: forget this account's failures from this client (and the account-wide ones). */
  clear(account: string, client: string): Promise<void>;
}

export function createLoginThrottle({
  work,
  store,
  clock,
  limits,
}: {
  work: Work;
  store: Pick<TenancyStore, 'insertLoginFailure' | 'loginFailuresSince' | 'deleteLoginFailure' | 'clearLoginFailures'>;
  clock: Clock;
  limits: LoginLimits;
}): LoginThrottle {
  return {
    /**
     * Record a login attempt as a failure before its password is checked, then count; refuse it (and take it back)
     * when the email is over its limit from this client address, or, once the email is over its account-wide limit,
     * when this address has failed before in the window. Each statement commits on its own, so the k-th attempt of
     * an address to commit counts at least k rows of it, whatever the isolation level or the interleaving: however many
     * attempts run at once, at most `perAddress` of an address reach the password check (one, past `perAccount`).
     * Stale rows are left to the maintenance sweep; the count only looks inside the window.
     */
    async count(email, client, now = clock.now()) {
      const id = newId('lst');
      await store.insertLoginFailure(work, id, email, client, now);
      const failures = await store.loginFailuresSince(work, email, client, now - LOGIN_FAILURE_WINDOW_MS);
      const fromClient = Number(failures.clientCount ?? 0);
      const accountWide = Number(failures.count) > limits.perAccount;
      if (fromClient <= (accountWide ? 1 : limits.perAddress)) return;
      await store.deleteLoginFailure(work, id);
      const oldest = Number(failures.clientOldest ?? now);
      const retryAfter = Math.max(1, Math.ceil((oldest + LOGIN_FAILURE_WINDOW_MS - now) / 1000));
      const why = accountWide ? 'too many failed logins for this email from many addresses, and from this one' : 'too many failed logins for this email from this address';
      throw rateLimited('too_many_login_attempts', `${why}; try again in ${retryAfter} s`, retryAfter);
    },
    async clear(email, client) {
      await store.clearLoginFailures(work, email, client, clock.now());
    },
  };
}

/** last_used_at / last_seen_at are written at most this often, so reads do not become writes. */
export const TOUCH_INTERVAL_MS = MINUTE_MS;

export interface AuthService {
  /** Resolve `Authorization: Bearer mrk_…` plus optional `X-Tenant-ID` to a tenant. */
  authenticateApiKey(token: string, tenantHeader: string | undefined): Promise<ApiKeyContext>;
  /** Resolve an `X-Service-Session` token; throws 401 for unknown, revoked or expired sessions. */
  authenticateSession(token: string): Promise<SessionContext>;
  /** `client`: the client's address (loginClientKey groups it). */
  login(email: string, password: string, client: string): Promise<LoginView>;
  logout(session: SessionContext): Promise<void>;
  describe(session: SessionContext): Promise<SessionView>;
  selectWorkspace(session: SessionContext, workspaceId: string): Promise<SessionView>;
  /** The tenant a session acts for; 403 when no workspace is active. */
  sessionTenant(session: SessionContext): TenantContext;
  /**
   * Change the session user's password after checking the current one (counted like a login attempt), and end the
   * user's other sessions; the session that asked stays.
   */
  changePassword(session: SessionContext, input: { current_password: string; new_password: string }, client: string): Promise<PasswordChangeView>;
  /**
   * Which grants still hold, in the order given: the session live (not logged out, revoked by a password change, or
   * expired) and its user still a member of the workspace with that role. Open event streams are checked with it.
   */
  checkGrants(grants: readonly SessionGrant[]): Promise<boolean[]>;
  /** Count one request in a rate-limit bucket's fixed window, in the database every process shares. */
  countRequest(bucket: string, windowMs: number): Promise<{ hits: number; resetInMs: number }>;
}

/** A session acting in a workspace with a role (what an event stream was opened with). */
export interface SessionGrant {
  sessionId: string;
  workspaceId: string;
  role: string;
}

const keyActor = (keyId: string): Actor => ({ kind: 'api_key', id: keyId, email: null, ip: null });

/** Sessions per query of `checkGrants`: well under either database's limit on bound parameters. */
const GRANT_CHECK_CHUNK = 500;

/**
 * The composition's hook, called after a change that may end a user's open event streams has committed (a
 * logout, a password change, a membership removed or its role changed).
 */
export type CredentialsChanged = (userId: string) => void;

/** The tenancy operations sign-in, sessions, API keys and rate limits use. */
export type AuthStore = Pick<
  TenancyStore,
  | 'clearLoginFailures'
  | 'addRequestCounts'
  | 'deleteLoginFailure'
  | 'findApiKeyByHash'
  | 'findMembership'
  | 'findSessionByHash'
  | 'findUserByEmail'
  | 'findUserById'
  | 'findWorkspace'
  | 'insertLoginFailure'
  | 'insertSession'
  | 'listMembershipsOfUser'
  | 'liveSessionMemberships'
  | 'loginFailuresSince'
  | 'revokeOtherSessions'
  | 'revokeSession'
  | 'setActiveWorkspace'
  | 'setPasswordHash'
  | 'touchApiKey'
  | 'touchSession'
>;

export function createAuthService({
  work,
  store,
  clock,
  audit,
  credentialsChanged,
  loginLimits = { perAddress: LOGIN_FAILURE_LIMIT, perAccount: LOGIN_ACCOUNT_FAILURE_LIMIT },
}: {
  work: Work;
  store: AuthStore;
  clock: Clock;
  audit: Pick<AuditLog, 'record'>;
  credentialsChanged?: CredentialsChanged;
  loginLimits?: LoginLimits;
}): AuthService {
  const userActor = (session: Pick<SessionContext, 'userId' | 'email' | 'ip'>, ip = session.ip ?? null): Actor => ({ kind: 'user', id: session.userId, email: session.email, ip });
  const countRequest = createRequestCounter({ work, store, clock });

  async function view(session: { userId: string; email: string; activeWorkspaceId: string | null; expiresAt: number }): Promise<SessionView> {
    const workspaces = (await store.listMembershipsOfUser(work, session.userId)).filter((w) => w.state !== 'deleting');
    return {
      ok: true,
      expires_at: iso(session.expiresAt),
      user: { user_id: session.userId, email: session.email },
      workspaces: workspaces.map((w) => ({ workspace_id: w.workspace_id, name: w.name, role: w.role })),
      active_workspace_id: session.activeWorkspaceId,
    };
  }

  const throttle = createLoginThrottle({ work, store, clock, limits: loginLimits });
  const countAttempt = (email: string, client: string, now: number) => throttle.count(email, client, now);

  return {
    async authenticateApiKey(token, tenantHeader) {
      if (!token.startsWith('mrk_')) throw unauthorized('invalid_credential', 'the API key is not valid');
      const key = await store.findApiKeyByHash(work, hashToken(token));
      const verdict = credentialVerdict(key?.workspace_state ?? null);
      // A workspace being deleted is gone: its keys are unknown from the moment it was marked.
      if (!key || verdict === 'gone') throw unauthorized('invalid_credential', 'the API key is not valid');
      if (verdict === 'suspended') throw workspaceSuspended(key.workspace_id!, key.state_reason);
      const now = clock.now();
      if (key.last_used_at === null || now - key.last_used_at > TOUCH_INTERVAL_MS) await store.touchApiKey(work, key.id, now);
      const tenant = tenantHeader?.trim() || undefined;
      if (key.workspace_id !== null) {
        if (tenant !== undefined && tenant !== key.workspace_id) {
          throw forbidden('tenant_mismatch', 'X-Tenant-ID names a workspace this API key does not belong to');
        }
        return { workspaceId: key.workspace_id, role: 'api_key', userId: null, apiKeyId: key.id, actor: keyActor(key.id) };
      }
      if (tenant === undefined) throw invalid('tenant_required', 'a platform API key needs an X-Tenant-ID header naming the workspace');
      const workspace = await store.findWorkspace(work, tenant);
      const state = credentialVerdict(workspace?.state ?? null);
      if (!workspace || state === 'gone') throw notFound('tenant_not_found', `no workspace ${tenant}`);
      if (state === 'suspended') throw workspaceSuspended(workspace.id, workspace.state_reason);
      return { workspaceId: workspace.id, role: 'api_key', userId: null, apiKeyId: key.id, actor: keyActor(key.id) };
    },

    async authenticateSession(token) {
      if (!token.startsWith('mrs_')) throw unauthorized('invalid_session', 'the session token is not valid');
      const row = await store.findSessionByHash(work, hashToken(token));
      if (!row) throw unauthorized('invalid_session', 'the session token is not valid or has been logged out');
      const now = clock.now();
      if (row.expires_at <= now || row.last_seen_at + SESSION_IDLE_MS <= now) {
        throw unauthorized('session_expired', 'the session has expired; log in again');
      }
      if (now - row.last_seen_at > TOUCH_INTERVAL_MS) await store.touchSession(work, row.id, now);
      // A workspace the user has left, or one being deleted, no longer counts as active.
      const active = row.role && credentialVerdict(row.workspace_state) !== 'gone';
      return {
        sessionId: row.id,
        userId: row.user_id,
        email: row.email,
        activeWorkspaceId: active ? row.active_workspace_id : null,
        role: active ? row.role : null,
        suspension: active && row.workspace_state === 'suspended' ? { reason: row.state_reason } : null,
        expiresAt: Math.min(row.expires_at, Math.max(row.last_seen_at, now) + SESSION_IDLE_MS),
      };
    },

    async login(emailInput, password, clientIp) {
      const email = normalizeEmail(emailInput) ?? emailInput.trim().toLowerCase();
      const now = clock.now();
      const client = loginClientKey(clientIp);
      await countAttempt(email, client, now);
      const user = await store.findUserByEmail(work, email);
      // An unknown email still costs one scrypt, so both failures take the same time.
      const ok = await verifyPassword(password, user?.password_hash ?? DUMMY_PASSWORD_HASH);
      // A wrong password keeps its attempt as a failure; the right one clears them all.
      if (!user || !ok) throw unauthorized('invalid_credentials', 'email or password is wrong');
      await throttle.clear(email, client);
      const memberships = (await store.listMembershipsOfUser(work, user.id)).filter((m) => m.state !== 'deleting');
      // The first workspace the user may act in; a user whose every workspace is suspended is refused.
      const usable = memberships.find((m) => m.state === 'active');
      const suspended = memberships.find((m) => m.state === 'suspended');
      if (!usable && suspended) throw workspaceSuspended(suspended.workspace_id, suspended.state_reason);
      const token = newToken('mrs');
      const expiresAt = now + SESSION_ABSOLUTE_MS;
      const activeWorkspaceId = usable?.workspace_id ?? null;
      await store.insertSession(work, {
        id: newId('ses'),
        user_id: user.id,
        token_hash: hashToken(token),
        active_workspace_id: activeWorkspaceId,
        created_at: now,
        last_seen_at: now,
        expires_at: expiresAt,
        revoked_at: null,
      });
      const described = await view({ userId: user.id, email: user.email, activeWorkspaceId, expiresAt: Math.min(expiresAt, now + SESSION_IDLE_MS) });
      return { ...described, session_token: token };
    },

    async logout(session) {
      await work.transaction().execute(async (trx) => {
        await store.revokeSession(trx, session.sessionId, clock.now());
        // In the workspace the session acted in: a user in none has no log to write to.
        if (session.activeWorkspaceId === null) return;
        await audit.record(trx, { workspaceId: session.activeWorkspaceId, action: AUDIT_ACTIONS.sessionRevoked, actor: userActor(session), target: { kind: 'session', id: session.sessionId } });
      });
      credentialsChanged?.(session.userId);
    },

    describe: (session) => view(session),

    async selectWorkspace(session, workspaceId) {
      const membership = await store.findMembership(work, workspaceId, session.userId);
      const workspace = membership ? await store.findWorkspace(work, workspaceId) : undefined;
      const state = credentialVerdict(workspace?.state ?? null);
      if (!workspace || state === 'gone') throw notFound('workspace_not_found', `no workspace ${workspaceId}`);
      if (state === 'suspended') throw workspaceSuspended(workspace.id, workspace.state_reason);
      await store.setActiveWorkspace(work, session.sessionId, workspaceId);
      return view({ ...session, activeWorkspaceId: workspaceId });
    },

    async changePassword(session, input, clientIp) {
      checkPassword(input.new_password);
      const now = clock.now();
      const client = loginClientKey(clientIp);
      // The login throttle's budget: a stolen session cannot guess the password faster than a login could.
      await countAttempt(session.email, client, now);
      const user = await store.findUserById(work, session.userId);
      const ok = await verifyPassword(input.current_password, user?.password_hash ?? DUMMY_PASSWORD_HASH);
      if (!user || !ok) throw forbidden('wrong_password', 'the current password is wrong');
      await throttle.clear(session.email, client);
      const passwordHash = await hashPassword(input.new_password);
      const ended = await work.transaction().execute(async (trx) => {
        await store.setPasswordHash(trx, user.id, passwordHash);
        const count = await store.revokeOtherSessions(trx, user.id, session.sessionId, now, now - SESSION_IDLE_MS);
        // Each workspace of the user sees it: their admins answer for what the user's credentials reach.
        for (const m of await store.listMembershipsOfUser(trx, user.id)) {
          await audit.record(trx, { workspaceId: m.workspace_id, action: AUDIT_ACTIONS.passwordChanged, actor: userActor(session, clientIp), target: { kind: 'user', id: user.id }, details: { email: user.email, sessions_ended: count } });
        }
        return count;
      });
      if (ended > 0) credentialsChanged?.(user.id);
      return { ok: true as const, sessions_ended: ended };
    },

    async checkGrants(grants) {
      const now = clock.now();
      const holding = new Set<string>();
      const key = (sessionId: string, workspaceId: string, role: string) => `${sessionId} ${workspaceId} ${role}`;
      const sessionIds = [...new Set(grants.map((g) => g.sessionId))];
      const workspaceIds = [...new Set(grants.map((g) => g.workspaceId))];
      for (let i = 0; i < sessionIds.length; i += GRANT_CHECK_CHUNK) {
        const rows = await store.liveSessionMemberships(work, sessionIds.slice(i, i + GRANT_CHECK_CHUNK), workspaceIds, now, now - SESSION_IDLE_MS);
        for (const row of rows) holding.add(key(row.session_id, row.workspace_id, row.role));
      }
      return grants.map((g) => holding.has(key(g.sessionId, g.workspaceId, g.role)));
    },

    countRequest,

    sessionTenant(session) {
      if (!session.activeWorkspaceId || !session.role) {
        throw forbidden('no_active_workspace', 'select a workspace first (POST /app/api/workspaces/select)');
      }
      if (session.suspension) throw workspaceSuspended(session.activeWorkspaceId, session.suspension.reason);
      return { workspaceId: session.activeWorkspaceId, role: session.role, userId: session.userId, actor: userActor(session) };
    },
  };
}
