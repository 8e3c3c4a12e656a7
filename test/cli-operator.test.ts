import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startServe } from './helpers/cli.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from './helpers/database.js';

interface Listed {
  workspace_id: string;
  name: string;
  state: string;
  state_reason: string | null;
  usage: { mailboxes: number; messages: number; stored_bytes: number; sent_last_day: number };
}

/**
 * `mailroom admin list-workspaces | suspend | resume | delete-workspace` as an operator runs them, each a process of
 * its own beside a running `mailroom serve`: the state lives in the database, so the server refuses a suspended
 * workspace's key at once, and a deletion stopped part-way is finished by running the command again.
 */
/** Each command is a process that loads the server and opens the database: a few seconds each on a loaded machine. */
const CLI_TEST_MS = 120_000;

describe(`mailroom admin: workspace controls (${TEST_DIALECT})`, () => {
  let database: TestDatabase;
  let env: Record<string, string>;
  let server: Awaited<ReturnType<typeof startServe>>;
  const tenants: Array<{ workspace_id: string; api_key: string }> = [];

  const cli = async (args: string[]) => {
    const result = await runCli(['admin', ...args], env);
    if (result.code !== 0) throw new Error(`mailroom admin ${args.join(' ')}: ${result.code} ${result.stderr}`);
    return result;
  };
  const listed = async (): Promise<Listed[]> => (JSON.parse((await cli(['list-workspaces', '--json'])).stdout) as { workspaces: Listed[] }).workspaces;
  const mailboxes = (apiKey: string) => fetch(`${server.url}/mailboxes`, { headers: { authorization: `Bearer ${apiKey}` } });

  beforeAll(async () => {
    database = await createTestDatabase();
    env = { MAILROOM_DATABASE_URL: database.url, ...database.secretEnv, MAILROOM_LOG_LEVEL: 'info' };
    for (const [name, email] of [
      ['Acme', 'owner@acme.example'],
      ['Other', 'owner@other.example'],
    ] as const) {
      const boot = await cli(['bootstrap', '--email', email, '--password', 'bootstrap-pass', '--workspace', name, '--json']);
      const tenant = JSON.parse(boot.stdout) as { workspace_id: string; api_key: string };
      tenants.push(tenant);
      await cli(['create-mailbox', '--workspace', tenant.workspace_id, '--address', `${name.toLowerCase()}@mailroom.localhost`]);
      await cli(['create-mailbox', '--workspace', tenant.workspace_id, '--address', `${name.toLowerCase()}-2@mailroom.localhost`]);
    }
    server = await startServe(['--role', 'api'], { ...env, MAILROOM_HTTP_PORT: '0' });
  }, CLI_TEST_MS);
  afterAll(async () => {
    server?.child.kill('SIGTERM');
    await server?.exited;
    await database?.drop();
  });

  it('list-workspaces shows each workspace with its state and usage, as JSON and as a table', async () => {
    const all = await listed();
    expect(all.map((w) => [w.workspace_id, w.name, w.state])).toEqual(
      tenants.map((t, i) => [t.workspace_id, i === 0 ? 'Acme' : 'Other', 'active']).sort((a, b) => a[0]!.localeCompare(b[0]!)),
    );
    for (const w of all) expect(w.usage).toEqual({ mailboxes: 2, messages: 0, stored_bytes: 0, sent_last_day: 0 });
    const table = (await cli(['list-workspaces'])).stdout;
    expect(table.split('\n')[0]).toMatch(/^WORKSPACE\s+STATE\s+MAILBOXES\s+MESSAGES\s+STORED\s+SENT\/24H\s+CREATED\s+NAME$/);
    for (const t of tenants) expect(table).toMatch(new RegExp(`${t.workspace_id}\\s+active\\s+2\\s+0\\s+0 B\\s+0`));
  }, CLI_TEST_MS);

  it('suspend refuses the workspace at the running server with 403 workspace_suspended, resume lets it back, the other never notices', async () => {
    const [acme, other] = tenants as [(typeof tenants)[0], (typeof tenants)[0]];
    const suspended = await cli(['suspend', acme.workspace_id, '--reason', 'unpaid invoice', '--json']);
    expect(JSON.parse(suspended.stdout)).toEqual({ workspace_id: acme.workspace_id, state: 'suspended', reason: 'unpaid invoice', changed: true });
    const refused = await mailboxes(acme.api_key);
    expect(refused.status).toBe(403);
    const body = (await refused.json()) as { error: string; detail: string };
    expect(body.error).toBe('workspace_suspended');
    expect(body.detail).toContain('unpaid invoice');
    expect((await mailboxes(other.api_key)).status).toBe(200);
    expect((await listed()).find((w) => w.workspace_id === acme.workspace_id)).toMatchObject({ state: 'suspended', state_reason: 'unpaid invoice' });
    expect((await cli(['suspend', acme.workspace_id])).stdout).toContain('was suspended already');

    expect((await cli(['resume', acme.workspace_id])).stdout).toContain(`workspace ${acme.workspace_id} resumed`);
    expect((await mailboxes(acme.api_key)).status).toBe(200);
    expect((await cli(['resume', acme.workspace_id])).stdout).toContain('was not suspended');
    const unknown = await runCli(['admin', 'suspend', 'ws_nope'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('(workspace_not_found)');
  }, CLI_TEST_MS);

  it('delete-workspace asks first, stops where told, and a second run finishes; the other workspace keeps everything', async () => {
    const [acme, other] = tenants as [(typeof tenants)[0], (typeof tenants)[0]];
    const unconfirmed = await runCli(['admin', 'delete-workspace', acme.workspace_id], env);
    expect(unconfirmed.code).toBe(1);
    expect(unconfirmed.stderr).toContain('without --yes');
    expect((await mailboxes(acme.api_key)).status).toBe(200);

    const partial = await cli(['delete-workspace', acme.workspace_id, '--yes', '--batch-size', '1', '--max-batches', '2', '--json']);
    expect(JSON.parse(partial.stdout)).toMatchObject({ workspace_id: acme.workspace_id, finished: false, batches: 2 });
    expect(partial.stderr.split('\n').filter((line) => / rows deleted \(batch \d+\)$/.test(line))).toHaveLength(2);
    expect((await mailboxes(acme.api_key)).status).toBe(401);
    expect((await listed()).find((w) => w.workspace_id === acme.workspace_id)?.state).toBe('deleting');
    expect((await runCli(['admin', 'resume', acme.workspace_id], env)).stderr).toContain('(workspace_deleting)');

    const rest = await cli(['delete-workspace', acme.workspace_id, '--yes', '--batch-size', '1']);
    expect(rest.stdout).toContain(`workspace ${acme.workspace_id} deleted`);
    expect(rest.stderr).toContain('tenancy: ');
    expect((await listed()).map((w) => w.workspace_id)).toEqual([other.workspace_id]);
    expect((await listed())[0]!.usage.mailboxes).toBe(2);
    const theirs = await mailboxes(other.api_key);
    expect(((await theirs.json()) as { mailboxes: unknown[] }).mailboxes).toHaveLength(2);
    const again = await runCli(['admin', 'delete-workspace', acme.workspace_id, '--yes'], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('(workspace_not_found)');
  }, CLI_TEST_MS);
});
