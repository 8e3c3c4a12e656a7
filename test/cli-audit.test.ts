import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliUser, listen, type CliUser } from './helpers/cli-client.js';
import { TEST_DIALECT } from './helpers/database.js';
import { createTenant, startHarness, type Harness, type Tenant } from './helpers/harness.js';

interface Entry {
  audit_id: string;
  action: string;
  actor: { kind: string; id: string | null; email: string | null };
  target: { kind: string; id: string } | null;
}

// The CLI as a child process against the in-process app on a loopback port (as in cli-client.test.ts).
describe(`mailroom audit-log (${TEST_DIALECT})`, () => {
  let h: Harness;
  let acme: Tenant;
  let other: Tenant;
  let owner: CliUser;
  let member: CliUser;
  let outsider: CliUser;

  beforeAll(async () => {
    h = await startHarness();
    h.clock.set(Date.now());
    const url = await listen(h.app);
    acme = await createTenant(h, 'Acme');
    other = await createTenant(h, 'Other');
    await h.services.tenancy.admin.createUser({ email: 'member@example.com', password: 'member-password' });
    await h.services.tenancy.admin.addMember({ workspace: acme.workspaceId, email: 'member@example.com', role: 'member' });
    owner = cliUser(url);
    member = cliUser(url);
    outsider = cliUser(url);
    expect((await owner.login(acme.ownerEmail, acme.password)).code).toBe(0);
    expect((await member.login('member@example.com', 'member-password')).code).toBe(0);
    expect((await outsider.login(other.ownerEmail, other.password)).code).toBe(0);
    expect((await owner.run(['keys', 'create', '--name', 'CI deploys'])).code).toBe(0);
  });
  afterAll(async () => h.close());

  it('prints the log newest first as a table, with a hint for the next page', async () => {
    const shown = await owner.run(['audit-log', '--limit', '2']);
    expect(shown.stderr).toBe('');
    const lines = shown.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^WHEN +ACTION +ACTOR +IP +TARGET +DETAILS$/);
    expect(lines[1]).toMatch(new RegExp(`^just now +api_key\\.created +${acme.ownerEmail.replace(/[.]/g, '\\.')} +127\\.0\\.0\\.1 +api_key key_\\w+ +name="CI deploys"$`));
    expect(lines[2]).toMatch(/^just now +member\.added +operator +- +user usr_\w+ +email=member@example\.com role=member user_created=false$/);
    expect(lines[3]).toMatch(/^older entries: mailroom audit-log --before aud_\w{26}$/);
    const before = /--before (aud_\w+)/.exec(lines[3]!)![1]!;
    const older = await owner.json<{ entries: Entry[]; next_before?: string }>(['audit-log', '--before', before]);
    expect(older.entries.map((e) => e.action)).toEqual(['api_key.created', 'member.added', 'workspace.created']);
    expect(older.next_before).toBeUndefined();
  });

  it('filters by action and actor, as JSON', async () => {
    const keys = await owner.json<{ entries: Entry[] }>(['audit-log', '--action', 'api_key.']);
    expect(keys.entries.map((e) => [e.action, e.actor.kind])).toEqual([['api_key.created', 'user'], ['api_key.created', 'operator']]);
    const byOperator = await owner.json<{ entries: Entry[] }>(['audit-log', '--actor', 'operator', '--action', 'member.added']);
    expect(byOperator.entries.map((e) => e.target?.id)).toEqual([expect.stringMatching(/^usr_/), acme.ownerId]);
    expect((await owner.run(['audit-log', '--action', 'nothing.here'])).stdout).toBe('no audit entries\n');
  });

  it("refuses a member, and shows another workspace's owner only their own log", async () => {
    const refused = await member.run(['audit-log']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe('error: 403 forbidden_role: the audit log needs the owner or admin role\n');
    const theirs = await outsider.json<{ entries: Entry[] }>(['audit-log']);
    expect(theirs.entries.map((e) => e.action)).toEqual(['api_key.created', 'member.added', 'workspace.created']);
    expect(JSON.stringify(theirs)).not.toContain(acme.workspaceId);
    expect(JSON.stringify(theirs)).not.toContain(acme.ownerId);
  });
});
