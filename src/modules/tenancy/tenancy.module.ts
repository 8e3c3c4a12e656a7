import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import type { AuditLog } from '../audit/audit.service.js';
import { createAdminService, type AdminService, type AdminStore } from './admin.service.js';
import { createAuthService, type AuthService, type AuthStore, type CredentialsChanged, type LoginLimits } from './auth.service.js';
import { createWorkspaceAdminService, type WorkspaceAdminService, type WorkspaceAdminStore } from './workspace-admin.service.js';

export interface TenancyModule {
  admin: AdminService;
  auth: AuthService;
  /** The session surface's administration of the active workspace: API keys, members. */
  workspace: WorkspaceAdminService;
}

export function createTenancyModule(deps: {
  work: Work;
  store: AdminStore & AuthStore & WorkspaceAdminStore;
  clock: Clock;
  /** Members, keys, sessions, passwords and workspaces made are recorded in the audit log. */
  audit: Pick<AuditLog, 'record'>;
  credentialsChanged?: CredentialsChanged;
  loginLimits?: LoginLimits;
}): TenancyModule {
  return { admin: createAdminService(deps), auth: createAuthService(deps), workspace: createWorkspaceAdminService(deps) };
}
