import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliUser, listen, runInTerminal, type CliUser } from './helpers/cli-client.js';
import { TEST_DIALECT } from './helpers/database.js';
import { createTenant, startHarness, type Harness, type Tenant } from './helpers/harness.js';

// The CLI as a child process against the in-process app on a loopback port (as in cli-client.test.ts).
describe(`mailroom CLI client: keys, members, password (${TEST_DIALECT})`, () => {
  let h: Harness;
  let url: string;
  let acme: Tenant;
  let owner: CliUser;
  let member: CliUser;
  const memberEmail = 'member@example.com';

  beforeAll(async () => {
    h = await startHarness();
    h.clock.set(Date.now());
    url = await listen(h.app);
    acme = await createTenant(h, 'Acme');
    await h.services.tenancy.admin.createUser({ email: memberEmail, password: 'member-password' });
    await h.services.tenancy.admin.addMember({ workspace: acme.workspaceId, email: memberEmail, role: 'member' });
    owner = cliUser(url);
    member = cliUser(url);
    expect((await owner.login(acme.ownerEmail, acme.password)).code).toBe(0);
    expect((await member.login(memberEmail, 'member-password')).code).toBe(0);
  });
  afterAll(async () => h.close());

  const mailboxesStatus = async (key: string) => (await fetch(`${url}/mailboxes`, { headers: { authorization: `Bearer ${key}` } })).status;

  it('creates, lists and revokes API keys; only create prints the key', async () => {
    const refused = await member.run(['keys']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe('error: 403 forbidden_role: API keys need the owner or admin role\n');

    const created = await owner.run(['keys', 'create', '--name', 'CI deploys']);
    expect(created.stderr).toBe('');
    const id = /^created (key_[0-9a-z]{26}) \(CI deploys\)\n/.exec(created.stdout)?.[1] ?? '';
    expect(id).not.toBe('');
    const key = /\n {2}(mrk_\S+)\n/.exec(created.stdout)?.[1] ?? '';
    expect(key).not.toBe('');
    expect(created.stdout).toContain('This is the only time the key is shown');
    expect(await mailboxesStatus(key)).toBe(200);

    const list = await owner.run(['keys']);
    expect(list.stdout.split('\n')[0]).toMatch(/^ID +NAME +CREATED +LAST USED +STATE$/);
    expect(list.stdout).toMatch(new RegExp(`${id} +CI deploys +.+ active\\n`));
    expect(list.stdout).not.toContain('mrk_');
    const json = await owner.json<{ api_keys: Record<string, unknown>[] }>(['api-keys', 'list']);
    expect(json.api_keys[0]).toMatchObject({ key_id: id, name: 'CI deploys', revoked_at: null });
    expect(JSON.stringify(json)).not.toContain('mrk_');

    expect((await owner.run(['keys', 'revoke', id])).stdout).toBe(`revoked ${id}\n`);
    expect(await mailboxesStatus(key)).toBe(401);
    expect((await owner.run(['keys'])).stdout).toMatch(new RegExp(`${id} +CI deploys +.+ revoked .+\\n`));
    expect((await owner.run(['keys', 'revoke', 'key_nonsense'])).stderr).toBe('error: 404 api_key_not_found: no API key key_nonsense in this workspace\n');
  });

  it('lists, adds (creating the user), changes and removes members', async () => {
    const list = await member.run(['members']);
    expect(list.code).toBe(0);
    expect(list.stdout.split('\n')[0]).toMatch(/^USER +EMAIL +ROLE +JOINED$/);
    expect(list.stdout).toMatch(new RegExp(`${acme.ownerId} +${acme.ownerEmail} +owner `));

    const created = await owner.run(['members', 'add', 'new@example.com', '--role', 'admin', '--password-stdin'], { input: 'new-user-password\n' });
    expect(created.stderr).toBe('');
    expect(created.stdout).toMatch(/^created the user and added new@example\.com \(usr_[0-9a-z]{26}\) as admin\n$/);
    const newcomer = cliUser(url);
    expect((await newcomer.login('new@example.com', 'new-user-password')).code).toBe(0);

    await h.services.tenancy.admin.createUser({ email: 'existing@example.com', password: 'existing-password' });
    expect((await owner.run(['members', 'add', 'existing@example.com'])).stdout).toMatch(/^added existing@example\.com \(usr_\w+\) as member\n$/);
    expect((await member.run(['members', 'add', 'x@example.com'])).stderr).toBe('error: 403 forbidden_role: members need the owner or admin role\n');
    expect((await owner.run(['members', 'add', 'nobody@example.com'])).stderr).toMatch(/^error: 404 user_not_found: .+\n$/);

    expect((await owner.run(['members', 'role', 'new@example.com', 'member'])).stdout).toBe('new@example.com is now member\n');
    expect((await newcomer.run(['members', 'role', acme.ownerEmail, 'admin'])).stderr).toBe('error: 403 forbidden_role: members need the owner or admin role\n');
    expect((await owner.run(['members', 'role', acme.ownerEmail, 'admin'])).stderr).toBe('error: 409 last_owner: this is the last owner of the workspace: make another member owner first\n');
    expect((await owner.run(['members', 'role', 'new@example.com', 'boss'])).stderr).toBe('error: the role must be one of owner, admin, member\n');
    expect((await owner.run(['members', 'role', 'stranger@example.com', 'admin'])).stderr).toBe('error: stranger@example.com is not a member of this workspace (mailroom members lists them)\n');

    expect((await owner.run(['members', 'remove', 'new@example.com'])).stdout).toBe('removed new@example.com from the workspace\n');
    const after = await owner.json<{ members: { email: string }[] }>(['members']);
    expect(after.members.map((m) => m.email)).toEqual([acme.ownerEmail, memberEmail, 'existing@example.com']);
  });

  it('changes the password on a terminal (asked twice) or from stdin, and logs out the other sessions', async () => {
    const user = cliUser(url);
    const env = user.env;
    expect((await user.login(memberEmail, 'member-password')).code).toBe(0);
    const differ = await runInTerminal(['password'], env, [
      { waitFor: 'Current password: ', send: 'member-password\r' },
      { waitFor: 'New password: ', send: 'first-new-password\r' },
      { waitFor: 'New password again: ', send: 'other-new-password\r' },
    ]);
    expect(differ.code).toBe(1);
    expect(differ.output).toContain('the two passwords differ; nothing was changed');

    const changed = await runInTerminal(['password'], env, [
      { waitFor: 'Current password: ', send: 'member-password\r' },
      { waitFor: 'New password: ', send: 'first-new-password\r' },
      { waitFor: 'New password again: ', send: 'first-new-password\r' },
    ]);
    expect(changed.code).toBe(0);
    expect(changed.output).toContain('Password changed. 1 other session was logged out; this one stays.');
    expect(changed.output).not.toContain('first-new-password');
    // `member` logged in first and is the other session; this user's session still works.
    expect((await member.run(['whoami'])).stderr).toMatch(/^error: 401 invalid_session: .+ — run mailroom login\n$/);
    expect((await user.run(['whoami'])).code).toBe(0);

    const wrong = await user.run(['password', '--password-stdin'], { input: 'member-password\nsecond-new-password\n' });
    expect(wrong.stderr).toBe('error: 403 wrong_password: the current password is wrong\n');
    const piped = await user.json<{ ok: boolean; sessions_ended: number }>(['password', '--password-stdin'], { input: 'first-new-password\nsecond-new-password\n' });
    expect(piped).toEqual({ ok: true, sessions_ended: 0 });
    expect((await cliUser(url).login(memberEmail, 'first-new-password')).code).toBe(1);
    expect((await member.login(memberEmail, 'second-new-password')).code).toBe(0);
    expect((await user.run(['password', '--password-stdin'], { input: 'only one line\n' })).stderr).toBe(
      'error: give the current password on the first line of standard input and the new one on the second\n',
    );
  });
});
