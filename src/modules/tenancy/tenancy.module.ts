import type { Db } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import { createAdminService, type AdminService } from './admin.service.js';
import { createAuthService, type AuthService } from './auth.service.js';

export interface TenancyModule {
  admin: AdminService;
  auth: AuthService;
}

export function createTenancyModule(deps: { db: Db; clock: Clock }): TenancyModule {
  return { admin: createAdminService(deps), auth: createAuthService(deps) };
}
