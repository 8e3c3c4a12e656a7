import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { loadConfig, type Config } from '../../src/config/config.js';
import { manualClock } from '../../src/lib/clock.js';
import { createLogger } from '../../src/lib/logger.js';
import { createHttpApp, createServices, type Services } from '../../src/main.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { TEST_SERVICE_ENV } from './service-env.js';

/** A service wired exactly as `mailroom serve` wires it, on a fresh database, with a clock tests can move. */
export interface Harness {
  config: Readonly<Config>;
  services: Services;
  app: FastifyInstance;
  clock: ReturnType<typeof manualClock>;
  database: TestDatabase;
  close(): Promise<void>;
}

/** What a harness may give `createServices` beyond its clock (a test CA to trust, say). */
export type HarnessServiceOptions = Omit<NonNullable<Parameters<typeof createServices>[1]>, 'clock'>;

/** `sandbox`: as `mailroom serve --sandbox` runs it (a flag, not a variable); `services`: options of `createServices`. */
export async function startHarness(env: Record<string, string> = {}, options: { sandbox?: boolean; services?: HarnessServiceOptions } = {}): Promise<Harness> {
  const database = await createTestDatabase();
  const loaded = loadConfig({
    MAILROOM_DATABASE_URL: database.url,
    ...database.secretEnv,
    MAILROOM_LOG_LEVEL: 'silent',
    MAILROOM_HTTP_PORT: '0',
    MAILROOM_RATE_LIMIT_PER_MINUTE: '0',
    ...TEST_SERVICE_ENV,
    ...env,
  });
  const config = options.sandbox === true ? Object.freeze({ ...loaded, sandbox: true }) : loaded;
  const clock = manualClock(Date.UTC(2026, 10, 21, 12, 0, 0));
  const services = await createServices(config, { ...options.services, clock });
  const app = await createHttpApp(config, services, createLogger('silent'));
  await app.ready();
  return {
    config,
    services,
    app,
    clock,
    database,
    async close() {
      await app.close();
      services.deliverer.close?.();
      await services.analyzer.close();
      await services.signer.close();
      await services.composer.close();
      await services.database.destroy();
      await database.drop();
    },
  };
}

export interface Tenant {
  workspaceId: string;
  ownerId: string;
  ownerEmail: string;
  password: string;
  apiKey: string;
}

let counter = 0;

/** A workspace with an owner and an API key, created through the admin service (as the CLI does). */
export async function createTenant(h: Harness, name = 'Acme'): Promise<Tenant> {
  counter += 1;
  const ownerEmail = `owner${counter}-${Math.random().toString(36).slice(2, 8)}@example.com`;
  const password = 'correct horse battery';
  const result = await h.services.tenancy.admin.bootstrap({ email: ownerEmail, password, workspace: name });
  return { workspaceId: result.workspace_id, ownerId: result.user_id, ownerEmail, password, apiKey: result.api_key };
}

/** A user with the given role in a workspace, logged in; returns the session token. */
export async function memberSession(h: Harness, workspaceId: string, role: 'owner' | 'admin' | 'member'): Promise<{ email: string; token: string }> {
  counter += 1;
  const email = `${role}${counter}-${Math.random().toString(36).slice(2, 8)}@example.com`;
  await h.services.tenancy.admin.createUser({ email, password: 'correct horse battery' });
  await h.services.tenancy.admin.addMember({ workspace: workspaceId, email, role });
  return { email, token: await login(h, email, 'correct horse battery') };
}

export async function login(h: Harness, email: string, password: string): Promise<string> {
  const res = await h.app.inject({ method: 'POST', url: '/app/api/login', payload: { email, password } });
  if (res.statusCode !== 200) throw new Error(`login failed: ${res.statusCode} ${res.body}`);
  return res.json<{ session_token: string }>().session_token;
}

export const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
export const session = (token: string) => ({ 'x-service-session': token });

/** The `{error, detail}` body of a refused request, checked for shape. */
export function errorOf(res: LightMyRequestResponse): { status: number; error: string; detail: string } {
  const body = res.json<{ error: unknown; detail: unknown }>();
  if (typeof body.error !== 'string' || typeof body.detail !== 'string') throw new Error(`not an error body: ${res.body}`);
  return { status: res.statusCode, error: body.error, detail: body.detail };
}
