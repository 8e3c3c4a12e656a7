import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startServe } from './helpers/cli.js';
import { cliUser, listen, type CliUser } from './helpers/cli-client.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from './helpers/database.js';
import { startDnsServer, type TestDnsServer } from './helpers/dns-server.js';
import { createTenant, startHarness, type Harness } from './helpers/harness.js';
import { freePort } from './helpers/ports.js';

async function eventually<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 15_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe(`mailroom serve --sandbox and mailroom sandbox … (${TEST_DIALECT})`, () => {
  let database: TestDatabase;
  let upstream: TestDnsServer;
  let server: { child: ChildProcess; url: string; logs: () => string; exited: Promise<number | null> };
  let owner: CliUser;

  beforeAll(async () => {
    database = await createTestDatabase();
    upstream = await startDnsServer();
    const env = {
      MAILROOM_DATABASE_URL: database.url,
      ...database.secretEnv,
      MAILROOM_DNS_SERVERS: upstream.address,
      MAILROOM_HTTP_PORT: '0',
      MAILROOM_SMTP_PORT: String(await freePort()),
      // The sandbox's submission listener on a free port, not its 1587: other sandboxes may run beside this one.
      MAILROOM_SUBMISSION_PORT: '0',
      MAILROOM_IMAP_PORT: '0',
      MAILROOM_ALLOW_PLAINTEXT_AUTH: 'loopback',
      MAILROOM_LOG_LEVEL: 'info',
    };
    const boot = await runCli(['admin', 'bootstrap', '--email', 'owner@example.com', '--password', 'owner-password', '--workspace', 'Acme', '--json'], env);
    expect(boot.code, boot.stderr).toBe(0);
    server = await startServe(['--sandbox'], env);
    owner = cliUser(server.url);
    expect((await owner.login('owner@example.com', 'owner-password')).code).toBe(0);
  });
  afterAll(async () => {
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    await upstream.close();
    await database.drop();
  });

  it('says so at start and in `sandbox status`', async () => {
    const banner = await eventually(async () => (server.logs().includes('SANDBOX MODE') ? server.logs() : undefined), 'the banner');
    const dns = /sandbox DNS server at (127\.0\.0\.1:\d+)/.exec(banner)?.[1];
    expect(dns).toBeDefined();
    expect(banner).toContain('outbound mail is captured, not delivered');
    const status = await owner.run(['sandbox', 'status']);
    expect(status.stdout).toBe(`${server.url} is a sandbox; its DNS server is ${dns} (UDP and TCP)\n`);
    expect(await owner.json(['sandbox'])).toEqual({ sandbox: true, dns_server: dns });
  });

  it('publishes what `domains create` asked for in one go, and the domain verifies', async () => {
    const created = await owner.run(['domains', 'create', 'acme.example', '--json']);
    expect(created.code, created.stderr).toBe(0);
    const published = await owner.run(['sandbox', 'dns', 'publish'], { input: created.stdout });
    expect(published.code, published.stderr).toBe(0);
    const lines = published.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('published 3 records:');
    expect(lines[1]).toMatch(/^NAME\s+TYPE\s+VALUE$/);
    // In the order the answer gives them.
    expect(lines.slice(2).sort()).toEqual([
      expect.stringMatching(/^_mailroom-verification\.acme\.example\s+TXT\s+mailroom-verification=/) as unknown,
      expect.stringMatching(/^acme\.example\s+TXT\s+v=spf1 include:\S+ ~all$/) as unknown,
      expect.stringMatching(/^mr\d{6}\._domainkey\.acme\.example\s+TXT\s+v=DKIM1; k=rsa; p=/) as unknown,
    ]);
    // Every record the sandbox published checks out: verification, DKIM and the SPF advice.
    const verified = (await owner.run(['domains', 'verify', 'acme.example'])).stdout;
    expect(verified.split('\n')[0]).toBe('acme.example is verified and its DKIM record is published');
    for (const record of ['verification', 'dkim', 'spf \\(advice\\)']) expect(verified).toMatch(new RegExp(`^${record}\\s+ok\\s`, 'm'));

    const empty = await owner.run(['sandbox', 'dns', 'publish'], { input: '{"domain":"acme.example"}' });
    expect(empty.stderr).toContain('no DNS records found');
    expect(empty.code).toBe(1);
  });

  it('sets, adds, lists and deletes records', async () => {
    expect((await owner.run(['sandbox', 'dns', 'set', 'mx.acme.example', 'A', '192.0.2.10'])).stdout).toBe('published mx.acme.example A 192.0.2.10\n');
    expect((await owner.run(['sandbox', 'dns', 'set', 'mx.acme.example', 'a', '192.0.2.11', '--add'])).stdout).toBe('published mx.acme.example A 192.0.2.10\npublished mx.acme.example A 192.0.2.11\n');
    expect((await owner.run(['sandbox', 'dns', 'set', 'acme.example', 'TXT', 'v=spf1 -all'])).stdout).toBe('published acme.example TXT v=spf1 -all\n');
    const list = await owner.run(['sandbox', 'dns']);
    expect(list.stdout).toMatch(/^mx\.acme\.example\s+A\s+192\.0\.2\.11$/m);
    expect(list.stdout).toMatch(/^acme\.example\s+TXT\s+v=spf1 -all$/m);
    expect((await owner.run(['sandbox', 'dns', 'delete', 'mx.acme.example', 'A'])).stdout).toBe('deleted 2 records of mx.acme.example\n');
    const bad = await owner.run(['sandbox', 'dns', 'set', 'acme.example', 'MX', 'not-a-priority']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('400 invalid_dns_record: value:');
  });

  it('shows captured mail in the outbox, with its MIME and its exact bytes', async () => {
    expect((await owner.run(['mailboxes', 'create', 'newsletter@mailroom.localhost'])).code).toBe(0);
    const sent = await owner.run(['send', '--from', 'newsletter@mailroom.localhost', '--to', 'someone@far-away.example', '--subject', 'Sandbox hello', '--body', 'Kept, not sent.']);
    expect(sent.code, sent.stderr).toBe(0);
    const page = await eventually(async () => {
      const answer = await owner.json<{ captured_messages: Array<{ capture_id: string; subject: string }> }>(['sandbox', 'outbox']);
      return answer.captured_messages.length > 0 ? answer : undefined;
    }, 'a captured message');
    const id = page.captured_messages[0]!.capture_id;
    const table = (await owner.run(['sandbox', 'outbox'])).stdout.split('\n');
    expect(table[0]).toMatch(/^ID\s+TO\s+SUBJECT\s+STORED\s+CAPTURED$/);
    expect(table[1]).toMatch(new RegExp(`^${id}\\s+someone@far-away\\.example\\s+Sandbox hello\\s+\\S`));
    expect(table[2]).toBe('1 captured message');

    const shown = await owner.run(['sandbox', 'show', id]);
    expect(shown.stdout).toMatch(/^Captured\s+cap_/);
    expect(shown.stdout).toMatch(/^Recipients\s+someone@far-away\.example$/m);
    expect(shown.stdout).toContain('Subject: Sandbox hello');
    expect(shown.stdout).toContain('Kept, not sent.');
    const raw = await owner.run(['sandbox', 'raw', id]);
    expect(raw.stdout).toMatch(/^DKIM-Signature: /);
    expect(raw.stdout).toContain('\r\nSubject: Sandbox hello\r\n');

    const sentList = await owner.json<{ messages: Array<{ status: string; recipients: Array<{ mx: string; response: string }> }> }>(['sent']);
    expect(sentList.messages[0]).toMatchObject({ status: 'accepted', recipients: [{ mx: 'sandbox', response: expect.stringMatching(/^250 2\.0\.0 Captured by the Mailroom sandbox as cap_/) as unknown }] });

    expect((await owner.run(['sandbox', 'clear'])).stderr).toContain('pass --yes');
    expect((await owner.run(['sandbox', 'clear', '--yes'])).stdout).toBe('deleted 1 captured message\n');
    expect((await owner.run(['sandbox', 'outbox'])).stdout).toBe('no captured messages\n');
  });

  it('turns a catch-all on and off', async () => {
    expect((await owner.run(['mailboxes', 'create', 'everything@mailroom.localhost'])).code).toBe(0);
    expect((await owner.run(['sandbox', 'catch-all', 'set', 'everything@mailroom.localhost'])).stdout).toBe('mail to unknown addresses of mailroom.localhost now goes to everything@mailroom.localhost\n');
    expect((await owner.run(['sandbox', 'catch-all'])).stdout).toMatch(/^mailroom\.localhost\s+everything@mailroom\.localhost$/m);
    expect((await owner.run(['sandbox', 'catch-all', 'delete', 'mailroom.localhost'])).stdout).toBe('no catch-all for mailroom.localhost any more: mail to its unknown addresses is refused\n');
    expect((await owner.run(['sandbox', 'catch-all'])).stdout).toBe('no catch-all mailboxes: mailroom sandbox catch-all set <mailbox>\n');
  });
});

describe(`mailroom sandbox … against a server without --sandbox (${TEST_DIALECT})`, () => {
  let h: Harness;
  let user: CliUser;

  beforeAll(async () => {
    h = await startHarness();
    const tenant = await createTenant(h);
    user = cliUser(await listen(h.app));
    expect((await user.login(tenant.ownerEmail, tenant.password)).code).toBe(0);
  });
  afterAll(async () => h.close());

  it('says the server is no sandbox', async () => {
    for (const args of [['sandbox', 'status'], ['sandbox', 'outbox'], ['sandbox', 'dns', 'set', 'a.example', 'A', '192.0.2.1']]) {
      const result = await user.run(args);
      expect(result.code, args.join(' ')).toBe(1);
      expect(result.stderr).toContain('error: this server is not running in sandbox mode: start it with mailroom serve --sandbox (npm run sandbox)');
    }
  });
});
