// The service as `mailroom serve` runs it (api and imap roles, config from the environment) on a test database,
// with workspaces, each a mailbox and an app password for it, made through the API before mail clients come.
import { loadConfig } from '../../src/config/config.js';
import { createLogger } from '../../src/lib/logger.js';
import { createServices, startService, type RunningService } from '../../src/main.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { TEST_SERVICE_ENV } from './service-env.js';

export interface ImapAccountFixture {
  workspaceId: string;
  address: string;
  password: string;
}

export interface RunningImapService {
  running: RunningService;
  database: TestDatabase;
  /** By mailbox address. */
  accounts: Map<string, ImapAccountFixture>;
  stop(): Promise<void>;
}

/** Starts the api and imap roles with `env` over the defaults; one workspace per address in `addresses`. */
export async function startImapService(env: Record<string, string>, addresses: readonly string[]): Promise<RunningImapService> {
  const database = await createTestDatabase();
  const config = loadConfig({
    ...TEST_SERVICE_ENV,
    MAILROOM_DATABASE_URL: database.url,
    ...database.secretEnv,
    MAILROOM_LOG_LEVEL: 'silent',
    MAILROOM_HTTP_PORT: '0',
    MAILROOM_SMTP_HOST: '127.0.0.1',
    MAILROOM_IMAP_PORT: '0',
    MAILROOM_ALLOW_PLAINTEXT_AUTH: 'loopback',
    MAILROOM_RATE_LIMIT_PER_MINUTE: '0',
    ...env,
  });
  // The workspaces first, with a service of their own (bootstrap is not an API call).
  const setup = await createServices(config);
  const owners: Array<{ address: string; email: string; workspaceId: string; apiKey: string }> = [];
  for (const [i, address] of addresses.entries()) {
    const email = `owner-${i}-${address.replace(/\W/g, '-')}@example.com`;
    const made = await setup.tenancy.admin.bootstrap({ email, password: 'correct horse battery', workspace: `Workspace ${i}` });
    owners.push({ address, email, workspaceId: made.workspace_id, apiKey: made.api_key });
  }
  await setup.database.destroy();
  const running = await startService(config, ['api', 'imap'], createLogger('silent'));
  const api = (path: string, headers: Record<string, string>, body: unknown) =>
    fetch(`${running.httpUrl!}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const accounts = new Map<string, ImapAccountFixture>();
  for (const owner of owners) {
    const mailbox = await api('/mailboxes', { authorization: `Bearer ${owner.apiKey}` }, { address: owner.address });
    if (mailbox.status !== 201) throw new Error(`mailbox ${owner.address}: ${mailbox.status}`);
    const login = await api('/app/api/login', {}, { email: owner.email, password: 'correct horse battery' });
    const { session_token: token } = (await login.json()) as { session_token: string };
    const created = await api('/app/api/app-passwords', { 'x-service-session': token }, { name: 'imap', mailbox: owner.address });
    if (created.status !== 201) throw new Error(`app password for ${owner.address}: ${created.status}`);
    const { password } = (await created.json()) as { password: string };
    accounts.set(owner.address, { workspaceId: owner.workspaceId, address: owner.address, password });
  }
  return {
    running,
    database,
    accounts,
    async stop() {
      await running.stop();
      await database.drop();
    },
  };
}
