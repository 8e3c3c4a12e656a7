import type { Work } from '../../db/tables.js';
import { isUniqueViolation } from '../../db/dialect.js';
import type { Clock } from '../../lib/clock.js';
import { iso } from '../../lib/clock.js';
import { conflict, forbidden, invalid, notFound } from '../../lib/errors.js';
import { hashPassword } from '../../lib/secrets.js';
import { AUDIT_ACTIONS } from '../audit/audit.actions.js';
import type { AuditLog } from '../audit/audit.service.js';
import { insertApiKey, insertUser } from './credentials.js';
import type { ApiKeyTable, Role } from './tenancy.table.js';
import type { CredentialsChanged } from './auth.service.js';
import type { TenancyStore } from './tenancy.store.js';
import { actorOf, isAdmin, type ApiKeyView, type ApiKeyWithSecret, type MemberView, type TenantContext } from './tenancy.types.js';
import { MAX_API_KEY_NAME_LENGTH, checkEmail, checkPassword, checkRole } from './validation.js';

/** Live (unrevoked) API keys one workspace may hold: enough for every deployment, a bound on a runaway script. */
export const MAX_LIVE_API_KEYS = 100;

export interface AddMemberInput {
  email: string;
  role: string;
  /** Given: a new user is created with it (409 email_taken if the address has one). Absent: the user must exist. */
  password?: string | undefined;
}

/** The workspace's own administration on the session surface: its API keys and its members. */
export interface WorkspaceAdminService {
  listApiKeys(tenant: TenantContext): Promise<{ api_keys: ApiKeyView[] }>;
  /** A new workspace key; the credential is in this answer only. */
  createApiKey(tenant: TenantContext, input: { name?: string | undefined }): Promise<ApiKeyWithSecret>;
  /** Revoke a key at once; revoking a revoked key answers it as it is. */
  revokeApiKey(tenant: TenantContext, keyId: string): Promise<ApiKeyView>;
  listMembers(tenant: TenantContext): Promise<{ members: MemberView[] }>;
  addMember(tenant: TenantContext, input: AddMemberInput): Promise<MemberView & { user_created: boolean }>;
  setRole(tenant: TenantContext, userId: string, role: string): Promise<MemberView>;
  removeMember(tenant: TenantContext, userId: string): Promise<void>;
}

type KeyRow = Pick<ApiKeyTable, 'id' | 'name' | 'created_at' | 'last_used_at' | 'revoked_at'>;

function keyView(row: KeyRow): ApiKeyView {
  return {
    key_id: row.id,
    name: row.name,
    created_at: iso(row.created_at),
    last_used_at: row.last_used_at === null ? null : iso(row.last_used_at),
    revoked_at: row.revoked_at === null ? null : iso(row.revoked_at),
  };
}

function memberView(row: { user_id: string; email: string; role: Role; created_at: number }): MemberView {
  return { user_id: row.user_id, email: row.email, role: row.role, joined_at: iso(row.created_at) };
}

function requireAdmin(tenant: TenantContext, what: string): void {
  if (!isAdmin(tenant.role)) throw forbidden('forbidden_role', `${what} need the owner or admin role`);
}

/** Only an owner makes, changes or removes an owner. */
function requireOwnerFor(tenant: TenantContext, touchesOwner: boolean): void {
  if (touchesOwner && tenant.role !== 'owner') throw forbidden('forbidden_role', 'only an owner can make, change or remove an owner');
}

/** The tenancy operations a workspace's own administration uses. */
export type WorkspaceAdminStore = Pick<
  TenancyStore,
  | 'countLiveApiKeys'
  | 'countOwners'
  | 'deleteMembership'
  | 'findApiKey'
  | 'findMember'
  | 'findMembership'
  | 'findUserByEmail'
  | 'insertMembership'
  | 'listApiKeys'
  | 'listMembers'
  | 'lockWorkspace'
  | 'revokeApiKey'
  | 'setRole'
  | 'insertUser'
  | 'insertApiKey'
>;

export function createWorkspaceAdminService({
  work,
  store,
  clock,
  audit,
  credentialsChanged,
}: {
  work: Work;
  store: WorkspaceAdminStore;
  clock: Clock;
  audit: Pick<AuditLog, 'record'>;
  credentialsChanged?: CredentialsChanged;
}): WorkspaceAdminService {
  /** A change to a member, in the transaction that makes it. */
  const recordMember = (trx: Work, tenant: TenantContext, action: (typeof AUDIT_ACTIONS)['memberAdded' | 'memberRoleChanged' | 'memberRemoved'], userId: string, details: Record<string, unknown>) =>
    audit.record(trx, { workspaceId: tenant.workspaceId, action, actor: actorOf(tenant), target: { kind: 'user', id: userId }, details });

  /** Run a membership change with the workspace locked, so the owner count it reads stays true until it commits. */
  function changeMembers<T>(tenant: TenantContext, change: (trx: Work) => Promise<T>): Promise<T> {
    return work.transaction().execute(async (trx) => {
      if (!(await store.lockWorkspace(trx, tenant.workspaceId))) {
        throw notFound('workspace_not_found', `no workspace ${tenant.workspaceId}`);
      }
      return change(trx);
    });
  }

  async function findMember(trx: Work, tenant: TenantContext, userId: string) {
    const member = await store.findMember(trx, tenant.workspaceId, userId);
    if (!member) throw notFound('member_not_found', `no member ${userId} in this workspace`);
    return member;
  }

  async function keepAnOwner(trx: Work, tenant: TenantContext): Promise<void> {
    if ((await store.countOwners(trx, tenant.workspaceId)) <= 1) {
      throw conflict('last_owner', 'this is the last owner of the workspace: make another member owner first');
    }
  }

  return {
    async listApiKeys(tenant) {
      requireAdmin(tenant, 'API keys');
      return { api_keys: (await store.listApiKeys(work, tenant.workspaceId)).map(keyView) };
    },

    async createApiKey(tenant, input) {
      requireAdmin(tenant, 'API keys');
      const name = (input.name ?? '').trim();
      if (name.length > MAX_API_KEY_NAME_LENGTH) throw invalid('invalid_request', `name must be at most ${MAX_API_KEY_NAME_LENGTH} characters`);
      if ((await store.countLiveApiKeys(work, tenant.workspaceId)) >= MAX_LIVE_API_KEYS) {
        throw conflict('too_many_api_keys', `the workspace already has ${MAX_LIVE_API_KEYS} API keys; revoke one first`);
      }
      const { token, row } = await work.transaction().execute(async (trx) => {
        const made = await insertApiKey(store, trx, clock, tenant.workspaceId, name);
        await audit.record(trx, { workspaceId: tenant.workspaceId, action: AUDIT_ACTIONS.apiKeyCreated, actor: actorOf(tenant), target: { kind: 'api_key', id: made.row.id }, details: { name } });
        return made;
      });
      return { ...keyView(row), api_key: token };
    },

    async revokeApiKey(tenant, keyId) {
      requireAdmin(tenant, 'API keys');
      await work.transaction().execute(async (trx) => {
        const [result] = await store.revokeApiKey(trx, tenant.workspaceId, keyId, clock.now());
        // Revoking a revoked key changes nothing, and records nothing.
        if (Number(result?.numUpdatedRows ?? 0) === 0) return;
        await audit.record(trx, { workspaceId: tenant.workspaceId, action: AUDIT_ACTIONS.apiKeyRevoked, actor: actorOf(tenant), target: { kind: 'api_key', id: keyId } });
      });
      const row = await store.findApiKey(work, tenant.workspaceId, keyId);
      if (!row) throw notFound('api_key_not_found', `no API key ${keyId} in this workspace`);
      return keyView(row);
    },

    async listMembers(tenant) {
      return { members: (await store.listMembers(work, tenant.workspaceId)).map(memberView) };
    },

    async addMember(tenant, input) {
      requireAdmin(tenant, 'members');
      const role = checkRole(input.role);
      requireOwnerFor(tenant, role === 'owner');
      const email = checkEmail(input.email);
      if (input.password !== undefined) checkPassword(input.password);
      // scrypt before the transaction: the workspace stays locked only for the writes.
      const passwordHash = input.password === undefined ? null : await hashPassword(input.password);
      return changeMembers(tenant, async (trx) => {
        let userId: string;
        if (passwordHash !== null) userId = await insertUser(store, trx, clock, email, passwordHash);
        else {
          const user = await store.findUserByEmail(trx, email);
          if (!user) throw notFound('user_not_found', `no user with email ${email}; give a password to create one`);
          userId = user.id;
        }
        if (await store.findMembership(trx, tenant.workspaceId, userId)) throw conflict('already_member', `${email} is already a member of this workspace`);
        const row = { workspace_id: tenant.workspaceId, user_id: userId, role, created_at: clock.now() };
        try {
          await store.insertMembership(trx, row);
        } catch (err) {
          if (isUniqueViolation(err)) throw conflict('already_member', `${email} is already a member of this workspace`);
          throw err;
        }
        await recordMember(trx, tenant, AUDIT_ACTIONS.memberAdded, userId, { email, role, user_created: passwordHash !== null });
        return { ...memberView({ ...row, email }), user_created: passwordHash !== null };
      });
    },

    async setRole(tenant, userId, roleInput) {
      requireAdmin(tenant, 'members');
      const role = checkRole(roleInput);
      let changed = false;
      const view = await changeMembers(tenant, async (trx) => {
        const member = await findMember(trx, tenant, userId);
        requireOwnerFor(tenant, member.role === 'owner' || role === 'owner');
        if (member.role === role) return memberView(member);
        if (member.role === 'owner') await keepAnOwner(trx, tenant);
        await store.setRole(trx, tenant.workspaceId, userId, role);
        await recordMember(trx, tenant, AUDIT_ACTIONS.memberRoleChanged, userId, { email: member.email, before: { role: member.role }, after: { role } });
        changed = true;
        return memberView({ ...member, role });
      });
      if (changed) credentialsChanged?.(userId);
      return view;
    },

    async removeMember(tenant, userId) {
      requireAdmin(tenant, 'members');
      await changeMembers(tenant, async (trx) => {
        const member = await findMember(trx, tenant, userId);
        requireOwnerFor(tenant, member.role === 'owner');
        if (member.role === 'owner') await keepAnOwner(trx, tenant);
        await store.deleteMembership(trx, tenant.workspaceId, userId);
        await recordMember(trx, tenant, AUDIT_ACTIONS.memberRemoved, userId, { email: member.email, role: member.role });
      });
      credentialsChanged?.(userId);
    },
  };
}
