import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliUser, listen, type CliUser } from './helpers/cli-client.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';

const SUPPORT = 'helpdesk@mailroom.localhost';

// The CLI over the real session API (an in-process server on loopback); needs `npm run build` (it runs bin/mailroom.js).
describe(`mailroom CLI client: suppressions (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let acme: Tenant;
  let owner: CliUser;

  beforeAll(async () => {
    h = await startMailHarness();
    h.clock.set(Date.now());
    const url = await listen(h.app);
    acme = await createTenant(h, 'Acme');
    await h.app.inject({ method: 'POST', url: `/mailboxes?address=${SUPPORT}`, headers: bearer(acme.apiKey) });
    owner = cliUser(url);
    expect((await owner.login(acme.ownerEmail, acme.password)).code).toBe(0);
  });
  afterAll(async () => h.close());

  it('adds, lists, shows and removes suppressions; a send says which recipients it left out', async () => {
    const added = await owner.run(['suppressions', 'add', 'Gone@Example.com', '--detail', 'asked by phone']);
    expect(added.stderr).toBe('');
    expect(added.stdout).toBe('gone@example.com is suppressed (added by hand, just now)\n');
    const list = await owner.run(['suppressions']);
    expect(list.stdout.split('\n')[0]).toMatch(/^ADDRESS\s+REASON\s+STATUS\s+DETAIL\s+ADDED$/);
    expect(list.stdout).toMatch(/gone@example\.com\s+added by hand\s+asked by phone\s+just now/);
    expect((await owner.json<{ total: number }>(['suppressions', 'list', '--reason', 'complaint'])).total).toBe(0);
    const shown = await owner.run(['suppressions', 'show', 'gone@example.com']);
    expect(shown.stdout).toMatch(/^Address\s+gone@example\.com$/m);
    expect(shown.stdout).toMatch(/^Detail\s+asked by phone$/m);

    const sent = await owner.run(['send', '--from', SUPPORT, '--to', 'gone@example.com, kept@example.com', '--subject', 'Hi', '--body', 'x']);
    expect(sent.stdout).toMatch(/^msg_\w+ is queued .*\nnot sent to gone@example\.com: suppressed/);
    const refused = await owner.run(['send', '--from', SUPPORT, '--to', 'gone@example.com', '--subject', 'Hi', '--body', 'x']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('gone@example.com');

    expect((await owner.run(['suppressions', 'remove', 'gone@example.com'])).stdout).toBe('gone@example.com is no longer suppressed\n');
    const missing = await owner.run(['suppressions', 'show', 'gone@example.com']);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('not on this workspace');
    expect((await owner.run(['help', 'suppressions'])).stdout).toContain('mailroom suppressions remove customer@example.com');
  });
});
