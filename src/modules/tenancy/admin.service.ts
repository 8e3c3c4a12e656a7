import type { Work } from '../../db/tables.js';
import { isUniqueViolation } from '../../db/dialect.js';
import type { Clock } from '../../lib/clock.js';
import { conflict, invalid, notFound } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import { hashPassword } from '../../lib/secrets.js';
import { insertApiKey as createApiKeyRow, insertUser as createUserRow } from './credentials.js';
import type { Role } from './tenancy.table.js';
import { AUDIT_ACTIONS, type AuditAction } from '../audit/audit.actions.js';
import type { AuditLog } from '../audit/audit.service.js';
import { OPERATOR } from './tenancy.types.js';
import type { TenancyStore } from './tenancy.store.js';
import { MAX_WORKSPACE_NAME_LENGTH, checkEmail, checkPassword, checkRole } from './validation.js';

export interface AdminService {
  /** Create a workspace, its owner and a workspace API key in one transaction. */
  bootstrap(input: { email: string; password: string; workspace: string }): Promise<{ workspace_id: string; user_id: string; api_key: string }>;
  createUser(input: { email: string; password: string }): Promise<{ user_id: string; email: string }>;
  createWorkspace(input: { name: string }): Promise<{ workspace_id: string; name: string }>;
  addMember(input: { workspace: string; email: string; role: string }): Promise<{ workspace_id: string; user_id: string; role: Role }>;
  /** A workspace key (`workspace` given) or a platform key; the plaintext is returned only here. */
  createApiKey(input: { workspace?: string; platform?: boolean }): Promise<{ api_key: string; key_id: string; workspace_id: string | null }>;
}

function checkWorkspaceName(name: string): string {
  const trimmed = name.trim();
  if (trimmed.length < 1 || trimmed.length > MAX_WORKSPACE_NAME_LENGTH) {
    throw invalid('invalid_workspace_name', `workspace name must be 1–${MAX_WORKSPACE_NAME_LENGTH} characters`);
  }
  return trimmed;
}

/** Operator actions behind `mailroom admin …`: users, workspaces, memberships and API keys. */
/** The tenancy operations the operator commands use. */
export type AdminStore = Pick<TenancyStore, 'findUserByEmail' | 'findWorkspace' | 'insertMembership' | 'insertWorkspace' | 'insertUser' | 'insertApiKey'>;

export function createAdminService({ work, store, clock, audit }: { work: Work; store: AdminStore; clock: Clock; audit: Pick<AuditLog, 'record'> }): AdminService {
  /** The operator's changes to a workspace, recorded with actor `operator` (no address: the command line). */
  const record = (trx: Work, workspaceId: string, action: AuditAction, target: { kind: string; id: string } | null, details?: Record<string, unknown>) =>
    audit.record(trx, { workspaceId, action, actor: OPERATOR, target, details });

  async function insertApiKey(trx: Work, workspaceId: string | null) {
    const { token, row } = await createApiKeyRow(store, trx, clock, workspaceId);
    // A platform key belongs to no workspace, so no workspace's log holds it.
    if (workspaceId !== null) await record(trx, workspaceId, AUDIT_ACTIONS.apiKeyCreated, { kind: 'api_key', id: row.id }, { name: row.name });
    return { api_key: token, key_id: row.id, workspace_id: workspaceId };
  }

  return {
    async bootstrap(input) {
      const email = checkEmail(input.email);
      checkPassword(input.password);
      const name = checkWorkspaceName(input.workspace);
      const passwordHash = await hashPassword(input.password);
      return work.transaction().execute(async (trx) => {
        const now = clock.now();
        const workspaceId = newId('ws');
        await store.insertWorkspace(trx, { id: workspaceId, name, created_at: now });
        await record(trx, workspaceId, AUDIT_ACTIONS.workspaceCreated, { kind: 'workspace', id: workspaceId }, { name });
        const userId = await createUserRow(store, trx, clock, email, passwordHash);
        await store.insertMembership(trx, { workspace_id: workspaceId, user_id: userId, role: 'owner', created_at: now });
        await record(trx, workspaceId, AUDIT_ACTIONS.memberAdded, { kind: 'user', id: userId }, { email, role: 'owner', user_created: true });
        const { api_key } = await insertApiKey(trx, workspaceId);
        return { workspace_id: workspaceId, user_id: userId, api_key };
      });
    },

    async createUser(input) {
      const email = checkEmail(input.email);
      checkPassword(input.password);
      const userId = await createUserRow(store, work, clock, email, await hashPassword(input.password));
      return { user_id: userId, email };
    },

    async createWorkspace(input) {
      const name = checkWorkspaceName(input.name);
      const id = newId('ws');
      await work.transaction().execute(async (trx) => {
        await store.insertWorkspace(trx, { id, name, created_at: clock.now() });
        await record(trx, id, AUDIT_ACTIONS.workspaceCreated, { kind: 'workspace', id }, { name });
      });
      return { workspace_id: id, name };
    },

    async addMember(input) {
      const role = checkRole(input.role);
      const email = checkEmail(input.email);
      const workspace = await store.findWorkspace(work, input.workspace);
      // A workspace being deleted is gone: nothing new is added to it.
      if (!workspace || workspace.state === 'deleting') throw notFound('workspace_not_found', `no workspace ${input.workspace}`);
      const user = await store.findUserByEmail(work, email);
      if (!user) throw notFound('user_not_found', `no user with email ${email}`);
      try {
        await work.transaction().execute(async (trx) => {
          await store.insertMembership(trx, { workspace_id: workspace.id, user_id: user.id, role, created_at: clock.now() });
          await record(trx, workspace.id, AUDIT_ACTIONS.memberAdded, { kind: 'user', id: user.id }, { email, role, user_created: false });
        });
      } catch (err) {
        if (isUniqueViolation(err)) throw conflict('already_member', `${email} is already a member of ${workspace.id}`);
        throw err;
      }
      return { workspace_id: workspace.id, user_id: user.id, role };
    },

    async createApiKey(input) {
      if (input.platform && input.workspace) throw invalid('invalid_request', 'give either a workspace or --platform, not both');
      if (input.platform) return insertApiKey(work, null);
      if (!input.workspace) throw invalid('invalid_request', 'a workspace id (or --platform) is required');
      const workspace = await store.findWorkspace(work, input.workspace);
      // A workspace being deleted is gone: nothing new is added to it.
      if (!workspace || workspace.state === 'deleting') throw notFound('workspace_not_found', `no workspace ${input.workspace}`);
      return work.transaction().execute((trx) => insertApiKey(trx, workspace.id));
    },
  };
}
