// The CLI's app-password commands against an in-process service (the harness's app on a loopback port).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliUser, listen, type CliUser } from './helpers/cli-client.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, startHarness, type Harness, type Tenant } from './helpers/harness.js';

const MAILBOX = 'cli-writer@mailroom.localhost';

describe(`mailroom CLI client: app passwords (${TEST_DIALECT})`, () => {
  let h: Harness;
  let acme: Tenant;
  let owner: CliUser;

  beforeAll(async () => {
    h = await startHarness({ MAILROOM_SUBMISSION_PORT: '1587', MAILROOM_ALLOW_PLAINTEXT_AUTH: 'loopback' });
    h.clock.set(Date.now());
    const url = await listen(h.app);
    acme = await createTenant(h, 'Acme');
    expect((await h.app.inject({ method: 'POST', url: `/mailboxes?address=${MAILBOX}`, headers: bearer(acme.apiKey) })).statusCode).toBe(201);
    owner = cliUser(url);
    expect((await owner.login(acme.ownerEmail, acme.password)).code).toBe(0);
  });
  afterAll(async () => h.close());

  it('creates one (the password printed once), lists it with the servers, and revokes it', async () => {
    const created = await owner.run(['app-passwords', 'create', '--name', 'Phone', '--mailbox', MAILBOX]);
    expect(created.code, created.stderr).toBe(0);
    const password = /\b([a-z2-9]{4}(?:-[a-z2-9]{4}){3})\b/.exec(created.stdout)?.[1];
    expect(password).toBeDefined();
    expect(created.stdout).toMatch(/^created app_\w+ \(Phone\) for cli-writer@mailroom\.localhost$/m);
    expect(await h.services.appPasswords.service.verify(MAILBOX, password!, '127.0.0.1')).toMatchObject({ ok: true });

    const list = await owner.run(['app-passwords']);
    expect(list.stdout).toMatch(/^ID\s+NAME\s+MAILBOX\s+CREATED\s+LAST USED$/m);
    expect(list.stdout).toContain(MAILBOX);
    expect(list.stdout).toContain(`SMTP: ${h.config.smtpHostname}:1587 (STARTTLS)`);
    expect(list.stdout).not.toContain(password!);
    const json = await owner.json<{ app_passwords: Array<{ app_password_id: string }> }>(['app-passwords', 'list']);
    const id = json.app_passwords[0]!.app_password_id;

    const revoked = await owner.run(['app-passwords', 'revoke', id]);
    expect(revoked.stdout).toBe(`revoked ${id}\n`);
    expect(await h.services.appPasswords.service.verify(MAILBOX, password!, '127.0.0.1')).toMatchObject({ ok: false });
    const again = await owner.run(['app-passwords', 'revoke', id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('app_password_not_found');
  });
});
