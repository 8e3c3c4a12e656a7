import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from './helpers/database.js';

type Shown = { workspace_id: string; usage: Record<string, number>; quotas: Record<string, number | null>; sources: Record<string, string> };

describe(`mailroom admin quota (${TEST_DIALECT})`, () => {
  let database: TestDatabase;
  let env: Record<string, string>;
  let acme: string;
  let other: string;

  beforeAll(async () => {
    database = await createTestDatabase();
    env = { MAILROOM_DATABASE_URL: database.url, ...database.secretEnv, MAILROOM_LOG_LEVEL: 'silent', MAILROOM_QUOTA_SENT_PER_DAY: '1000' };
    const boot = async (name: string, email: string) => {
      const run = await runCli(['admin', 'bootstrap', '--email', email, '--password', 'bootstrap-pass', '--workspace', name, '--json'], env);
      expect(run.code, run.stderr).toBe(0);
      return (JSON.parse(run.stdout) as { workspace_id: string }).workspace_id;
    };
    acme = await boot('Acme', 'owner@acme.example');
    other = await boot('Other', 'owner@other.example');
  }, 60_000);
  afterAll(async () => database.drop());

  const show = async (workspace: string): Promise<Shown> => {
    const run = await runCli(['admin', 'quota', 'show', workspace, '--json'], env);
    expect(run.code, run.stderr).toBe(0);
    return JSON.parse(run.stdout) as Shown;
  };

  it('shows usage and the defaults, sets a quota of one workspace only, and takes the default back', async () => {
    const before = await show(acme);
    expect(before).toEqual({
      workspace_id: acme,
      usage: { mailboxes: 0, stored_bytes: 0, sent_last_hour: 0, sent_last_day: 0 },
      quotas: { mailboxes: null, stored_bytes: null, sent_per_hour: null, sent_per_day: 1000, api_requests_per_minute: null },
      sources: { mailboxes: 'default', stored_bytes: 'default', sent_per_hour: 'default', sent_per_day: 'default', api_requests_per_minute: 'default' },
    });

    const set = await runCli(['admin', 'quota', 'set', acme, 'sent_per_hour', '250', '--json'], env);
    expect(set.code, set.stderr).toBe(0);
    expect((JSON.parse(set.stdout) as Shown).quotas.sent_per_hour).toBe(250);
    expect((await runCli(['admin', 'quota', 'set', acme, 'sent_per_day', 'unlimited'], env)).code).toBe(0);
    const after = await show(acme);
    expect(after.quotas).toMatchObject({ sent_per_hour: 250, sent_per_day: null });
    expect(after.sources).toMatchObject({ sent_per_hour: 'workspace', sent_per_day: 'workspace', mailboxes: 'default' });
    expect((await show(other)).quotas).toMatchObject({ sent_per_hour: null, sent_per_day: 1000 });

    const human = await runCli(['admin', 'quota', 'show', acme], env);
    expect(human.stdout).toContain(`workspace  ${acme}`);
    expect(human.stdout).toMatch(/sent_per_hour\s+0\s+250\n/);
    expect(human.stdout).toMatch(/sent_per_day\s+0\s+unlimited\n/);
    expect(human.stdout).toMatch(/mailboxes\s+0\s+unlimited \(default\)\n/);

    expect((await runCli(['admin', 'quota', 'set', acme, 'sent_per_day', 'default'], env)).code).toBe(0);
    expect((await show(acme)).quotas.sent_per_day).toBe(1000);
  }, 60_000);

  it('refuses an unknown quota, a value that is no number and an unknown workspace, in one line', async () => {
    const unknown = await runCli(['admin', 'quota', 'set', acme, 'messages', '5'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^mailroom: no quota 'messages'; the quotas are .* \(unknown_quota\)\n$/);
    const bad = await runCli(['admin', 'quota', 'set', acme, 'stored_bytes', '10GB'], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('(invalid_quota_value)');
    const nobody = await runCli(['admin', 'quota', 'show', 'ws_nope'], env);
    expect(nobody.code).toBe(1);
    expect(nobody.stderr).toBe('mailroom: no workspace ws_nope (workspace_not_found)\n');
  }, 60_000);
});
