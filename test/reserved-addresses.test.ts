import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, errorOf, memberSession, session, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';

/** Role addresses of hosted domains belong to the operator. */
describe(`reserved addresses (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let acme: Tenant;
  let memberToken: string;
  let ownerToken: string;

  beforeAll(async () => {
    h = await startMailHarness({ MAILROOM_HOSTED_DOMAINS: 'mailroom.localhost,hosted.example' });
    acme = await createTenant(h, 'Acme');
    memberToken = (await memberSession(h, acme.workspaceId, 'member')).token;
    ownerToken = (await memberSession(h, acme.workspaceId, 'owner')).token;
  });
  afterAll(async () => h.close());

  const viaKey = (address: string) => h.app.inject({ method: 'POST', url: `/mailboxes?address=${encodeURIComponent(address)}`, headers: bearer(acme.apiKey) });
  const viaSession = (address: string) => h.app.inject({ method: 'POST', url: '/app/api/mailboxes', headers: session(memberToken), payload: { address } });

  const reserved = [
    'postmaster@mailroom.localhost',
    'Abuse@Mailroom.Localhost',
    'hostmaster@hosted.example',
    'webmaster@mailroom.localhost',
    'admin@mailroom.localhost',
    'administrator@mailroom.localhost',
    'root@mailroom.localhost',
    'security@mailroom.localhost',
    'MAILER-DAEMON@mailroom.localhost',
    'noreply@mailroom.localhost',
    'no-reply@mailroom.localhost',
    'bounces@mailroom.localhost',
    'bounces+msg_01jd0000000000000000000000-0123456789ab@mailroom.localhost',
    // A subaddress tag, dots or hyphens do not make another address of a role.
    'postmaster+billing@mailroom.localhost',
    'post.master@mailroom.localhost',
    'no.reply@mailroom.localhost',
    'mailerdaemon@mailroom.localhost',
    // Underscores space a name out too, and `=` starts a tag as `+` does.
    'postmaster_@mailroom.localhost',
    'postmaster=x@mailroom.localhost',
    'mailer_daemon@mailroom.localhost',
    'no_reply@mailroom.localhost',
    // RFC 2142's role mailboxes.
    'www@mailroom.localhost',
    'info@mailroom.localhost',
    'sales@mailroom.localhost',
    'support@hosted.example',
    'marketing@mailroom.localhost',
    'noc@mailroom.localhost',
    'news@mailroom.localhost',
    'usenet@mailroom.localhost',
    'uucp@mailroom.localhost',
    'ftp@mailroom.localhost',
  ];

  it.each(reserved)('%s: 400 address_reserved on both surfaces', async (address) => {
    for (const res of [await viaKey(address), await viaSession(address)]) {
      expect(errorOf(res)).toMatchObject({ status: 400, error: 'address_reserved' });
      expect(errorOf(res).detail).toMatch(/reserved/);
    }
  });

  it('leaves names that only contain a role word alone', async () => {
    for (const address of ['postmasters@mailroom.localhost', 'admin-team@mailroom.localhost', 'rooted@mailroom.localhost', 'my.abuse.desk@mailroom.localhost']) {
      expect((await viaKey(address)).statusCode, address).toBe(201);
    }
  });

  it("allows them in the workspace's own verified sending domain", async () => {
    type Created = { domain_id: string; verification: { record_value: string } };
    const created = (await h.app.inject({ method: 'POST', url: '/app/api/sending-domains', headers: session(ownerToken), payload: { domain: 'acme.example' } })).json<Created>();
    h.dns.set('_mailroom-verification.acme.example', { TXT: [created.verification.record_value] });
    expect((await h.app.inject({ method: 'POST', url: `/app/api/sending-domains/${created.domain_id}/verify`, headers: session(ownerToken) })).json()).toMatchObject({ status: 'verified' });
    expect((await viaKey('postmaster@acme.example')).statusCode).toBe(201);
    expect((await viaSession('noreply@acme.example')).statusCode).toBe(201);
  });

  it('the operator creates postmaster@ of a hosted domain with the admin CLI, and mail to it is stored', async () => {
    const env = { MAILROOM_DATABASE_URL: h.database.url, ...h.database.secretEnv, MAILROOM_HOSTED_DOMAINS: 'mailroom.localhost,hosted.example', MAILROOM_LOG_LEVEL: 'silent' };
    const created = await runCli(['admin', 'create-mailbox', '--workspace', acme.workspaceId, '--address', 'Postmaster@Hosted.Example', '--json'], env);
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ address: 'postmaster@hosted.example', workspace_id: acme.workspaceId, message_count: 0 });

    const again = await runCli(['admin', 'create-mailbox', '--workspace', acme.workspaceId, '--address', 'postmaster@hosted.example'], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/address_taken/);
    const nowhere = await runCli(['admin', 'create-mailbox', '--workspace', 'ws_01jd0000000000000000000000', '--address', 'abuse@hosted.example'], env);
    expect(nowhere.code).toBe(1);
    expect(nowhere.stderr).toMatch(/workspace_not_found/);

    const info = await h.sendRaw(['From: someone@sender.test', 'To: postmaster@hosted.example', 'Subject: Your server', '', 'Hello postmaster.', ''].join('\r\n'), {
      from: 'someone@sender.test',
      to: ['postmaster@hosted.example'],
    });
    expect(info.response).toMatch(/^250 /);
    const got = await h.app.inject({ method: 'GET', url: '/mailboxes/postmaster@hosted.example', headers: bearer(acme.apiKey) });
    expect(got.json()).toMatchObject({ address: 'postmaster@hosted.example', message_count: 1 });
  });
});
