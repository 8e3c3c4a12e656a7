import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from './helpers/database.js';
import { runCli, startServe } from './helpers/cli.js';

describe(`mailroom CLI: migrate, admin, serve (${TEST_DIALECT})`, () => {
  let database: TestDatabase;
  let env: Record<string, string>;

  beforeAll(async () => {
    database = await createTestDatabase();
    env = { MAILROOM_DATABASE_URL: database.url, ...database.secretEnv, MAILROOM_LOG_LEVEL: 'info' };
  });
  afterAll(async () => database.drop());

  it('migrate applies every migration once', async () => {
    const first = await runCli(['migrate', '--json'], env);
    expect(first.code).toBe(0);
    const applied = (JSON.parse(first.stdout) as { applied: string[] }).applied;
    expect(applied.length).toBeGreaterThanOrEqual(3);
    expect(applied).toEqual([...applied].sort());
    const second = await runCli(['migrate'], env);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('up to date');
  });

  it('sweeps now (admin sweep) and, on SQLite, rebuilds the file in incremental mode (admin vacuum)', async () => {
    const sweep = await runCli(['admin', 'sweep', '--json'], env);
    expect(sweep.stderr).toBe('');
    expect(sweep.code).toBe(0);
    expect(JSON.parse(sweep.stdout)).toMatchObject({ messages: 0, events: 0, webhookAttempts: 0, deadJobs: 0, idempotencyKeys: 0 });
    const vacuum = await runCli(['admin', 'vacuum', '--json'], env);
    expect(vacuum.code).toBe(0);
    const answer = JSON.parse(vacuum.stdout) as { rebuilt: boolean; after?: { autoVacuum: number } };
    expect(answer.rebuilt).toBe(TEST_DIALECT === 'sqlite');
    if (TEST_DIALECT === 'sqlite') expect(answer.after?.autoVacuum).toBe(2);
  });

  it('bootstraps a workspace whose API key then works against `mailroom serve`', async () => {
    const boot = await runCli(['admin', 'bootstrap', '--email', 'Owner@Example.com', '--password', 'bootstrap-pass', '--workspace', 'Acme', '--json'], env);
    expect(boot.stderr).toBe('');
    expect(boot.code).toBe(0);
    const result = JSON.parse(boot.stdout) as Record<string, string>;
    expect(Object.keys(result).sort()).toEqual(['api_key', 'user_id', 'workspace_id']);
    expect(result.workspace_id).toMatch(/^ws_/);
    expect(result.user_id).toMatch(/^usr_/);
    expect(result.api_key).toMatch(/^mrk_/);

    const member = await runCli(['admin', 'create-user', '--email', 'dev@example.com', '--password', 'developer-pass', '--json'], env);
    expect(member.code).toBe(0);
    const added = await runCli(['admin', 'add-member', '--workspace', result.workspace_id!, '--email', 'dev@example.com', '--role', 'member', '--json'], env);
    expect(added.code).toBe(0);
    expect(JSON.parse(added.stdout)).toMatchObject({ workspace_id: result.workspace_id, role: 'member' });
    const platform = await runCli(['admin', 'create-api-key', '--platform', '--json'], env);
    expect(platform.code).toBe(0);
    const platformKey = (JSON.parse(platform.stdout) as { api_key: string }).api_key;

    const server = await startServe(['--role', 'api'], { ...env, MAILROOM_HTTP_PORT: '0' });
    try {
      const health = await fetch(`${server.url}/health`);
      expect(health.status).toBe(200);
      const created = await fetch(`${server.url}/mailboxes?address=cli@mailroom.localhost`, {
        method: 'POST',
        headers: { authorization: `Bearer ${result.api_key}` },
      });
      expect(created.status).toBe(201);
      const viaPlatform = await fetch(`${server.url}/mailboxes`, {
        headers: { authorization: `Bearer ${platformKey}`, 'x-tenant-id': result.workspace_id! },
      });
      expect(((await viaPlatform.json()) as { mailboxes: { address: string }[] }).mailboxes.map((m) => m.address)).toEqual(['cli@mailroom.localhost']);
      const login = await fetch(`${server.url}/app/api/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'dev@example.com', password: 'developer-pass' }),
      });
      expect(login.status).toBe(200);
      expect(((await login.json()) as { workspaces: { role: string }[] }).workspaces).toEqual([{ workspace_id: result.workspace_id, name: 'Acme', role: 'member' }]);
    } finally {
      server.child.kill('SIGTERM');
    }
    expect(await server.exited).toBe(0);
    expect(server.logs()).toContain('"msg":"stopped"');
  });

  it('says what is wrong in one line, without a stack trace', async () => {
    const duplicate = await runCli(['admin', 'bootstrap', '--email', 'owner@example.com', '--password', 'bootstrap-pass', '--workspace', 'Again'], env);
    expect(duplicate.code).toBe(1);
    expect(duplicate.stderr.trim()).toBe('mailroom: a user with email owner@example.com already exists (email_taken)');

    const badRole = await runCli(['admin', 'add-member', '--workspace', 'ws_x', '--email', 'dev@example.com', '--role', 'king'], env);
    expect(badRole.code).toBe(1);
    expect(badRole.stderr).toContain('role must be one of owner, admin, member');

    const shortPassword = await runCli(['admin', 'create-user', '--email', 'x@example.com', '--password', 'short'], env);
    expect(shortPassword.code).toBe(1);
    expect(shortPassword.stderr).not.toMatch(/\n\s+at /);

    const badConfig = await runCli(['migrate'], { ...env, MAILROOM_HTTP_PORT: 'eighty' });
    expect(badConfig.code).toBe(78);
    expect(badConfig.stderr).toContain('MAILROOM_HTTP_PORT="eighty"');
    expect(badConfig.stderr).not.toMatch(/\n\s+at /);

    const badRoleFlag = await runCli(['serve', '--role', 'mailman'], env);
    expect(badRoleFlag.code).not.toBe(0);
    expect(badRoleFlag.stderr).toContain("unknown role 'mailman'");
  });
});
