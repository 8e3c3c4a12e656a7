// The CLI's service-token and webhook commands against the routes of docs/api.md; it runs like the other CLI
// tests: a real `mailroom serve`, the CLI as a child.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChildProcess } from 'node:child_process';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startServe } from './helpers/cli.js';
import { cliUser, type CliUser } from './helpers/cli-client.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from './helpers/database.js';
import { startDnsServer, type TestDnsServer } from './helpers/dns-server.js';
import { freePort } from './helpers/ports.js';

const BILLING = 'billing@acme.example';

function serve(server: Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
}

async function eventually<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 15_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe(`mailroom CLI client: service tokens and webhooks (${TEST_DIALECT})`, () => {
  let database: TestDatabase;
  let dns: TestDnsServer;
  let server: { child: ChildProcess; url: string; exited: Promise<number | null> };
  let owner: CliUser;
  let member: CliUser;
  let domainId: string;

  beforeAll(async () => {
    database = await createTestDatabase();
    dns = await startDnsServer();
    const env = {
      MAILROOM_DATABASE_URL: database.url,
      ...database.secretEnv,
      MAILROOM_DNS_SERVERS: dns.address,
      MAILROOM_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
      MAILROOM_WEBHOOK_BACKOFF_BASE_MS: '100',
      MAILROOM_HTTP_PORT: '0',
      MAILROOM_SMTP_PORT: String(await freePort()),
      MAILROOM_LOG_LEVEL: 'info',
    };
    const boot = await runCli(['admin', 'bootstrap', '--email', 'owner@example.com', '--password', 'owner-password', '--workspace', 'Acme', '--json'], env);
    const workspace = (JSON.parse(boot.stdout) as { workspace_id: string }).workspace_id;
    await runCli(['admin', 'create-user', '--email', 'member@example.com', '--password', 'member-password'], env);
    await runCli(['admin', 'add-member', '--workspace', workspace, '--email', 'member@example.com', '--role', 'member'], env);
    server = await startServe([], env);
    owner = cliUser(server.url);
    member = cliUser(server.url);
    expect((await owner.login('owner@example.com', 'owner-password')).code).toBe(0);
    expect((await member.login('member@example.com', 'member-password')).code).toBe(0);

    const created = await owner.run(['domains', 'create', 'acme.example']);
    domainId = /\((dom_[0-9a-z]{26})\)/.exec(created.stdout)?.[1] ?? '';
    dns.set('_mailroom-verification.acme.example', { TXT: [/value {2}(mailroom-verification=\S+)/.exec(created.stdout)?.[1] ?? ''] });
    expect((await owner.run(['domains', 'verify', domainId])).stdout).toContain('is verified');
    expect((await owner.run(['mailboxes', 'create', BILLING])).code).toBe(0);
  });

  afterAll(async () => {
    server.child.kill('SIGTERM');
    await server.exited;
    await dns.close();
    await database.drop();
  });

  /** What a service token gets on the transactional API: 404 for an unknown message once it is accepted, 401 when not. */
  const transactionalStatus = async (token: string) =>
    (await fetch(`${server.url}/v1/transactional/messages/msg_01nosuchmessage000000000000`, { headers: { authorization: `Bearer ${token}` } })).status;

  it('creates, lists, rotates and revokes service tokens; only create and rotate print the credential', async () => {
    const refused = await member.run(['tokens']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^error: 403 forbidden_role: .+\n$/);

    const created = await owner.run(['tokens', 'create', '--name', 'billing', '--domain', 'acme.example', '--mailbox', BILLING]);
    expect(created.stderr).toBe('');
    const id = /^created (tok_[0-9a-z]{26}) \(billing\): message:send from billing@acme\.example\n/.exec(created.stdout)?.[1] ?? '';
    expect(id).not.toBe('');
    const token = /\n {2}(mst_\S+)\n/.exec(created.stdout)?.[1] ?? '';
    expect(token).not.toBe('');
    expect(created.stdout).toContain('This is the only time the token is shown');
    expect(await transactionalStatus(token)).toBe(404);

    const list = await owner.run(['tokens']);
    expect(list.stdout).toContain(id);
    expect(list.stdout).not.toContain('mst_');
    const json = await owner.json<{ service_tokens: Record<string, unknown>[] }>(['service-tokens', 'list']);
    expect(json.service_tokens).toEqual([expect.objectContaining({ token_id: id, name: 'billing', scope: 'message:send', domain_id: domainId, mailbox: BILLING })]);
    expect(json.service_tokens[0]).not.toHaveProperty('token');

    const rotated = await owner.json<{ token_id: string; token: string }>(['tokens', 'rotate', id]);
    expect(rotated.token_id).toBe(id);
    expect(rotated.token).toMatch(/^mst_/);
    expect(rotated.token).not.toBe(token);
    expect(await transactionalStatus(token)).toBe(401);
    expect(await transactionalStatus(rotated.token)).toBe(404);

    expect((await owner.run(['tokens', 'revoke', id])).stdout).toBe(`revoked ${id}\n`);
    expect(await transactionalStatus(rotated.token)).toBe(401);
    expect((await owner.run(['tokens', 'revoke', id])).stderr).toMatch(/^error: 404 \w+: .+\n$/);

    const wrongMailbox = await owner.run(['tokens', 'create', '--name', 'x', '--domain', domainId, '--mailbox', 'someone@mailroom.localhost']);
    expect(wrongMailbox.code).toBe(1);
    expect(wrongMailbox.stderr).toMatch(/^error: 400 \w+: .+\n$/);
    const unknownDomain = await owner.run(['tokens', 'create', '--name', 'x', '--domain', 'other.example', '--mailbox', BILLING]);
    expect(unknownDomain.stderr).toBe('error: other.example is not a sending domain of this workspace (mailroom domains lists them)\n');
  });

  it('creates, edits, tests and deletes webhooks, and lists their deliveries', async () => {
    const received: { headers: IncomingHttpHeaders; body: string }[] = [];
    const receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        received.push({ headers: req.headers, body });
        res.writeHead(200).end('ok');
      });
    });
    const hookUrl = `${await serve(receiver)}/hook`;
    try {
      const created = await owner.run(['webhooks', 'create', '--url', hookUrl, '--event', 'message.received', '--generate-secret']);
      expect(created.stderr).toBe('');
      const id = /^created (whk_[0-9a-z]{26})\n/.exec(created.stdout)?.[1] ?? '';
      expect(id).not.toBe('');
      expect(created.stdout).toContain('Signing secret (shown only now; the server never shows it again):');
      const secret = /\n {2}(whsec_[A-Za-z0-9+/=]+)\n/.exec(created.stdout)?.[1] ?? '';
      expect(secret).not.toBe('');

      const shown = await owner.json<Record<string, unknown>>(['webhooks', 'show', id]);
      expect(shown).toMatchObject({ webhook_id: id, url: hookUrl, event_types: ['message.received'], active: true, has_secret: true });
      expect(JSON.stringify(shown)).not.toContain('whsec_');
      const list = await owner.run(['webhooks']);
      expect(list.stdout).toContain(id);
      expect(list.stdout).not.toContain('whsec_');

      const edited = await owner.json<{ event_types: string[] }>(['webhooks', 'edit', id, '--event', 'message.received,message.bounced']);
      expect(edited.event_types.sort()).toEqual(['message.bounced', 'message.received']);
      expect((await owner.json<{ active: boolean }>(['webhooks', 'edit', id, '--inactive'])).active).toBe(false);
      const inactive = await owner.run(['webhooks', 'test', id]);
      expect(inactive.code).toBe(1);
      expect(inactive.stderr).toMatch(/^error: 409 webhook_inactive: .+\n$/);
      expect((await owner.json<{ active: boolean }>(['webhooks', 'edit', id, '--active'])).active).toBe(true);
      expect((await owner.run(['webhooks', 'edit', id])).stderr).toBe('error: nothing to change: give --url, --event, --all-events, --secret, --generate-secret, --active or --inactive\n');

      const tested = await owner.run(['webhooks', 'test', id, '--event', 'message.bounced']);
      const eventId = /^queued test event (evt_[0-9a-z]{26}) \(message\.bounced\) for /.exec(tested.stdout)?.[1] ?? '';
      expect(eventId).not.toBe('');
      const delivery = await eventually(async () => received.find((r) => r.headers['webhook-id'] === eventId), 'the test event');
      // The receiver can check the signature with the secret the CLI printed.
      const payload = new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>) as { event_type: string; data: { test?: boolean } };
      expect(payload).toMatchObject({ event_type: 'message.bounced', data: { test: true } });

      const deliveries = await eventually(async () => {
        const page = await owner.json<{ deliveries: { event_id: string; success: boolean; status_code: number }[] }>(['webhooks', 'deliveries', id, '--limit', '10']);
        return page.deliveries.some((d) => d.event_id === eventId) ? page : undefined;
      }, 'the delivery record');
      expect(deliveries.deliveries[0]).toMatchObject({ event_id: eventId, success: true, status_code: 200 });
      const table = await owner.run(['webhooks', 'deliveries', id]);
      expect(table.stdout.split('\n')[0]).toMatch(/^WHEN +EVENT +EVENT ID +ATTEMPT +RESULT +HTTP +TIME +ERROR$/);
      expect(table.stdout).toMatch(new RegExp(`message\\.bounced +${eventId} +1 +ok +200 `));

      // Replay: the same event id and bytes again; recover: nothing missed (the test event was received).
      const replayed = await owner.run(['webhooks', 'replay', id, eventId]);
      expect(replayed.stdout).toBe(`queued ${eventId} again for ${id}; mailroom webhooks deliveries ${id} shows how it went\n`);
      const again = await eventually(async () => {
        const copies = received.filter((r) => r.headers['webhook-id'] === eventId);
        return copies.length === 2 ? copies : undefined;
      }, 'the replayed event');
      expect(again[1]!.body).toBe(again[0]!.body);
      expect(await owner.json(['webhooks', 'recover', id, '--since', '1h'])).toMatchObject({ ok: true, queued: 0 });
      expect((await owner.run(['webhooks', 'recover', id, '--since', '2026-13-01'])).stderr).toMatch(/^error: 400 invalid_since: .+\n$/);
      expect((await owner.run(['webhooks', 'recover', id])).stderr).toContain("required option '--since <time>' not specified");

      const rotated = await owner.run(['webhooks', 'edit', id, '--generate-secret']);
      expect(rotated.stdout).toMatch(/\n {2}whsec_[A-Za-z0-9+/=]+\n/);
      const refused = await owner.run(['webhooks', 'create', '--url', 'http://10.0.0.1/hook']);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/^error: 400 invalid_webhook_url: .+\n$/);
      const everything = await owner.json<{ event_types: string[] }>(['webhooks', 'edit', id, '--all-events']);
      expect(everything.event_types).toEqual([]);

      expect((await owner.run(['webhooks', 'delete', id])).stdout).toBe(`deleted ${id}\n`);
      expect((await owner.run(['webhooks', 'show', id])).stderr).toMatch(/^error: 404 \w+: .+\n$/);
    } finally {
      receiver.close();
    }
  });
});
