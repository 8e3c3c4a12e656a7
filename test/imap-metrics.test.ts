import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.js';
import { createLogger } from '../src/lib/logger.js';
import { createServices, startService, type RunningService } from '../src/main.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from './helpers/database.js';
import { ImapLines } from './helpers/imap-lines.js';
import { TEST_SERVICE_ENV } from './helpers/service-env.js';

// GET /metrics of a process running the imap role, after real IMAP sessions: sessions open by listener, logins by
// outcome, tagged answers by command and status, sessions in IDLE; no workspace or address in any label.

/** One sample's value from the exposition: the line `name{labels} value` (labels exactly, in prom-client's order). */
function sample(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels ? `{${labels}}` : ''} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

const scrape = async (running: RunningService): Promise<string> => (await fetch(`${running.metricsUrl!}/metrics`)).text();

describe(`IMAP metrics (${TEST_DIALECT})`, () => {
  let database: TestDatabase;
  let running: RunningService;
  let workspaceId: string;
  let password: string;
  const address = 'metered@mailroom.localhost';
  const clients: ImapLines[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    const config = loadConfig({
      ...TEST_SERVICE_ENV,
      MAILROOM_DATABASE_URL: database.url,
      ...database.secretEnv,
      MAILROOM_LOG_LEVEL: 'silent',
      MAILROOM_HTTP_PORT: '0',
      MAILROOM_SMTP_HOST: '127.0.0.1',
      MAILROOM_IMAP_PORT: '0',
      MAILROOM_METRICS_PORT: '0',
      MAILROOM_ALLOW_PLAINTEXT_AUTH: 'loopback',
      MAILROOM_IMAP_MAX_CLIENTS_PER_WORKSPACE: '1',
      MAILROOM_RATE_LIMIT_PER_MINUTE: '0',
    });
    // A workspace, its mailbox and an app password, made before the service starts.
    const setup = await createServices(config);
    const email = 'owner-metered@example.com';
    const made = await setup.tenancy.admin.bootstrap({ email, password: 'correct horse battery', workspace: 'Metered' });
    workspaceId = made.workspace_id;
    await setup.database.destroy();
    running = await startService(config, ['api', 'imap'], createLogger('silent'));
    const api = (path: string, headers: Record<string, string>, body: unknown) => fetch(`${running.httpUrl!}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    expect((await api('/mailboxes', { authorization: `Bearer ${made.api_key}` }, { address })).status).toBe(201);
    const login = await api('/app/api/login', {}, { email, password: 'correct horse battery' });
    const { session_token: token } = (await login.json()) as { session_token: string };
    const created = await api('/app/api/app-passwords', { 'x-service-session': token }, { name: 'metered', mailbox: address });
    expect(created.status).toBe(201);
    password = ((await created.json()) as { password: string }).password;
  });

  afterAll(async () => {
    for (const c of clients) c.close();
    await running?.stop();
    await database?.drop();
  });

  const open = async (): Promise<ImapLines> => {
    const client = await ImapLines.open(running.imapPort!);
    clients.push(client);
    return client;
  };

  it('counts sessions by listener, logins by outcome, answers by command and status, and IDLE, with no tenant in any label', async () => {
    const first = await open();
    expect((await first.command(`LOGIN ${address} "wrong password"`)).at(-1)).toMatch(/NO \[AUTHENTICATIONFAILED\]/);
    expect((await first.command(`LOGIN ${address} "${password}"`)).at(-1)).toMatch(/OK/);
    expect((await first.command('FROBNICATE')).at(-1)).toMatch(/BAD/);
    expect((await first.command('SELECT INBOX')).at(-1)).toMatch(/OK/);
    // The workspace's one session is taken.
    const second = await open();
    expect((await second.command(`LOGIN ${address} "${password}"`)).at(-1)).toMatch(/^t\d+ NO \[UNAVAILABLE\]/);
    first.send('i1 IDLE');
    await first.waitFor(/^\+ idling/);

    const idling = await scrape(running);
    expect(sample(idling, 'mailroom_imap_sessions_open', 'listener="imap"')).toBe(2);
    expect(sample(idling, 'mailroom_imap_idle_sessions')).toBe(1);
    first.send('DONE');
    await first.waitFor(/^i1 OK/);
    second.close();

    const text = await scrape(running);
    expect(sample(text, 'mailroom_imap_idle_sessions')).toBe(0);
    expect(sample(text, 'mailroom_imap_logins_total', 'outcome="ok"')).toBe(1);
    expect(sample(text, 'mailroom_imap_logins_total', 'outcome="failed"')).toBe(1);
    expect(sample(text, 'mailroom_imap_logins_total', 'outcome="limit"')).toBe(1);
    expect(sample(text, 'mailroom_imap_commands_total', 'command="LOGIN",status="OK"')).toBe(1);
    expect(sample(text, 'mailroom_imap_commands_total', 'command="LOGIN",status="NO"')).toBe(2);
    expect(sample(text, 'mailroom_imap_commands_total', 'command="UNKNOWN",status="BAD"')).toBe(1);
    expect(sample(text, 'mailroom_imap_commands_total', 'command="SELECT",status="OK"')).toBe(1);
    expect(sample(text, 'mailroom_imap_commands_total', 'command="IDLE",status="OK"')).toBe(1);
    expect(text).not.toContain(workspaceId);
    expect(text).not.toContain('metered@');
    expect(text).not.toContain('FROBNICATE');

    first.close();
    await expect.poll(async () => sample(await scrape(running), 'mailroom_imap_sessions_open', 'listener="imap"'), { timeout: 5000 }).toBe(0);
  });
});
