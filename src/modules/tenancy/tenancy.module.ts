import type { Db } from '../../db/database.js';
import type { DialectInfo } from '../../db/dialect.js';
import type { Clock } from '../../lib/clock.js';
import { createAdminService, type AdminService } from './admin.service.js';
import { createAuthService, type AuthService, type CredentialsChanged, type LoginLimits } from './auth.service.js';
import { createWorkspaceAdminService, type WorkspaceAdminService } from './workspace-admin.service.js';

export interface TenancyModule {
  admin: AdminService;
  auth: AuthService;
  /** The session surface's administration of the active workspace: API keys, members. */
  workspace: WorkspaceAdminService;
}

export function createTenancyModule(deps: { db: Db; clock: Clock; dialect: DialectInfo; credentialsChanged?: CredentialsChanged; loginLimits?: LoginLimits }): TenancyModule {
  return { admin: createAdminService(deps), auth: createAuthService(deps), workspace: createWorkspaceAdminService(deps) };
}
