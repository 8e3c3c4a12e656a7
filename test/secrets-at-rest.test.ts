import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import SQLite from 'better-sqlite3';
import { authenticate } from 'mailauth';
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.js';
import { createDnsResolver } from '../src/lib/dns.js';
import { generateDkimKeyPair } from '../src/modules/domains/dkim-keys.js';
import { createServices } from '../src/main.js';
import { parseSecretKey } from '../src/lib/secret-box.js';
import { loadSecretKey } from '../src/modules/secrets/secret-key.js';
import { signingSecrets } from '../src/modules/webhooks/webhook.service.js';
import { runCli } from './helpers/cli.js';
import { createTestDatabase, TEST_DIALECT } from './helpers/database.js';
import { bearer, memberSession, session, type Tenant } from './helpers/harness.js';
import type { MailHarness } from './helpers/mail.js';
import type { SmtpPeer } from './helpers/smtp-peer.js';
import { startReceiver, type WebhookReceiver } from './helpers/webhook-receiver.js';
import { SECRET_A, SECRET_B } from './helpers/webhooks.js';
import { mailWorld } from './helpers/world.js';

/** Another valid key than the one the database was started with. */
const OTHER_KEY = Buffer.alloc(32, 7).toString('base64');

/**
 * A plain SQL client on the test database, beside the service's own handle: what a database dump shows.
 * Every statement here is fixed text with parameters (no Kysely, no service code).
 */
async function rawClient(url: string) {
  if (url.startsWith('sqlite:')) {
    const db = new SQLite(url.slice('sqlite:'.length));
    return {
      all: (text: string): Promise<unknown[]> => Promise.resolve(db.prepare(text).all()),
      run: (text: string, params: unknown[]): Promise<void> => Promise.resolve(void db.prepare(text).run(...params)),
      close: () => Promise.resolve(db.close()),
    };
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const numbered = (text: string) => {
    let n = 0;
    return text.replace(/\?/g, () => `$${(n += 1)}`);
  };
  return {
    all: async (text: string): Promise<unknown[]> => (await client.query<Record<string, unknown>>(text)).rows,
    run: async (text: string, params: unknown[]): Promise<void> => void (await client.query(numbered(text), params)),
    close: () => client.end(),
  };
}

describe(`secrets at rest (${TEST_DIALECT})`, () => {
  const world = mailWorld({ env: { MAILROOM_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8', MAILROOM_WEBHOOK_BACKOFF_BASE_MS: '100' }, mx: [], a: ['peer.test'] });
  let h: MailHarness;
  let peer: SmtpPeer;
  let receiver: WebhookReceiver;
  let acme: Tenant;
  let ownerToken: string;
  let raw: Awaited<ReturnType<typeof rawClient>>;
  /** Everything a dump of the secret-holding tables shows. */
  const dump = async () => JSON.stringify(await Promise.all(['sending_domains', 'service_keys', 'webhooks'].map((t) => raw.all(`select * from ${t}`))));

  beforeAll(async () => {
    ({ h, peer } = world);
    receiver = world.own(await startReceiver());
    acme = await world.tenant('Acme');
    ownerToken = (await memberSession(h, acme.workspaceId, 'owner')).token;
    raw = world.own(await rawClient(h.database.url));
  });

  /** Wait until Acme's message leaves queued and processing (as its API key sees it); its status then. */
  async function settle(id: string): Promise<string> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const status = (await world.message(acme, id))?.status;
      if (status === undefined) throw new Error(`message ${id} not found`);
      if (!['queued', 'processing'].includes(status)) return status;
      if (Date.now() > deadline) throw new Error(`outbound ${id} stuck at ${status}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  async function dkimOf(raw: Buffer, sender: string) {
    const verdict = await authenticate(raw, { ip: '127.0.0.1', helo: 'mx.mailroom.test', sender, resolver: createDnsResolver([h.dns.address]) as never, disableArc: true, disableBimi: true });
    return (verdict.dkim as { results: Array<{ status: { result: string }; signingDomain: string }> }).results.map((r) => ({ domain: r.signingDomain, result: r.status.result }));
  }

  it('stores no PEM and no whsec_ secret, and still signs mail and webhook deliveries', async () => {
    type Created = { domain_id: string; dkim: { record_name: string; record_value: string }; verification: { record_value: string } };
    const created = (await h.app.inject({ method: 'POST', url: '/app/api/sending-domains', headers: session(ownerToken), payload: { domain: 'brand.example' } })).json<Created>();
    h.dns.set('_mailroom-verification.brand.example', { TXT: [created.verification.record_value] });
    h.dns.set(created.dkim.record_name, { TXT: [created.dkim.record_value] });
    const verified = await h.app.inject({ method: 'POST', url: `/app/api/sending-domains/${created.domain_id}/verify`, headers: session(ownerToken) });
    expect(verified.json()).toMatchObject({ status: 'verified' });
    const hostedPublic = (await h.services.domains.hostedKey()).publicKey;
    h.dns.set('mailroom._domainkey.mailroom.localhost', { TXT: [`v=DKIM1; k=rsa; p=${hostedPublic}`] });
    const hook = await h.app.inject({ method: 'POST', url: '/app/api/webhooks', headers: session(ownerToken), payload: { url: `${receiver.url}/hook`, secret: SECRET_A, event_types: ['message.sent'] } });
    expect(hook.statusCode).toBe(201);
    const webhookId = hook.json<{ webhook_id: string }>().webhook_id;
    // Rotated: the replaced secret is kept (for 24 hours) too, and must be no more visible than the current one.
    expect((await h.app.inject({ method: 'PATCH', url: `/app/api/webhooks/${webhookId}`, headers: session(ownerToken), payload: { secret: SECRET_B } })).statusCode).toBe(200);

    const dumped = await dump();
    expect(dumped).toContain('brand.example');
    expect(dumped).toContain(webhookId);
    expect(dumped).not.toContain('PRIVATE KEY');
    const stored = [...(await raw.all('select dkim_private_key as k from sending_domains')), ...(await raw.all('select private_key as k from service_keys'))] as Array<{ k: string }>;
    expect(stored.length).toBe(2);
    for (const { k } of stored) expect(k).toMatch(/^v1:/);
    expect(dumped).not.toContain('whsec_');
    for (const secret of [SECRET_A, SECRET_B]) expect(dumped).not.toContain(secret.slice('whsec_'.length));
    expect(dumped).toMatch(/"v1:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+"/);

    for (const address of ['hello@brand.example', 'newsletter@mailroom.localhost']) {
      expect((await h.app.inject({ method: 'POST', url: `/mailboxes?address=${address}`, headers: bearer(acme.apiKey) })).statusCode).toBe(201);
    }
    const send = async (from: string, to: string) =>
      (await h.app.inject({ method: 'POST', url: '/send', headers: bearer(acme.apiKey), payload: { from_mailbox: from, to, subject: 'Hi', body: 'Hello' } })).json<{ message_id: string }>().message_id;
    const own = await send('hello@brand.example', 'own@peer.test');
    const hosted = await send('newsletter@mailroom.localhost', 'hosted@peer.test');
    expect(await settle(own)).toBe('accepted');
    expect(await settle(hosted)).toBe('accepted');
    const received = (recipient: string) => peer.accepted.find((m) => m.recipients.includes(recipient))!;
    expect(await dkimOf(received('own@peer.test').raw, received('own@peer.test').mailFrom)).toEqual([{ domain: 'brand.example', result: 'pass' }]);
    expect(await dkimOf(received('hosted@peer.test').raw, received('hosted@peer.test').mailFrom)).toEqual([{ domain: 'mailroom.localhost', result: 'pass' }]);

    // Each message.sent reached the endpoint signed with both secrets; a receiver holding either verifies it.
    const deliveries = await receiver.waitFor(2, 10_000, (r) => r.path === '/hook');
    for (const delivery of deliveries) {
      const content = `${String(delivery.headers['webhook-id'])}.${String(delivery.headers['webhook-timestamp'])}.${delivery.body}`;
      const signatures = String(delivery.headers['webhook-signature']).split(' ');
      // Standard Webhooks: HMAC-SHA256 keyed with the secret's decoded bytes (the harness clock is not now, so by hand).
      for (const secret of [SECRET_A, SECRET_B]) {
        expect(signatures).toContain(`v1,${createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64')).update(content).digest('base64')}`);
      }
    }
  });

  it('a ciphertext copied into another row does not open there', async () => {
    const second = await h.app.inject({ method: 'POST', url: '/app/api/webhooks', headers: session(ownerToken), payload: { url: `${receiver.url}/second`, secret: SECRET_A } });
    const first = await h.app.inject({ method: 'POST', url: '/app/api/webhooks', headers: session(ownerToken), payload: { url: `${receiver.url}/first`, secret: SECRET_B } });
    const rows = await h.services.database.db.selectFrom('webhooks').select(['id', 'secret', 'previous_secrets']).where('id', 'in', [second.json<{ webhook_id: string }>().webhook_id, first.json<{ webhook_id: string }>().webhook_id]).execute();
    const [a, b] = rows as [(typeof rows)[0], (typeof rows)[0]];
    expect(() => signingSecrets(h.services.secretBox, { ...a, secret: b.secret }, h.clock.now())).toThrow(/does not open/);
    // brand.example's key was opened to sign above (and is kept opened): in another row it still does not open.
    const brand = await h.services.database.db.selectFrom('sending_domains').select(['id', 'dkim_selector', 'dkim_private_key']).where('domain', '=', 'brand.example').executeTakeFirstOrThrow();
    expect((await h.services.domains.signingKey('brand.example', brand))?.privateKey).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    await expect(h.services.domains.signingKey('brand.example', { ...brand, id: 'dom_01jdother000000000000000000' })).rejects.toThrow(/does not open/);
  });

  it('encrypts, at start-up, the secrets a database stored in plaintext before', async () => {
    const keys = await generateDkimKeyPair();
    const now = h.clock.now();
    await raw.run(
      'insert into sending_domains (id, workspace_id, domain, status, verification_hash, dkim_selector, dkim_private_key, dkim_public_key, created_at, verified_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      ['dom_01jdold0000000000000000000', acme.workspaceId, 'old.example', 'verified', 'x', 'mrold', keys.privateKey, keys.publicKey, now, now],
    );
    await raw.run('insert into webhooks (id, workspace_id, url, event_types, active, secret, previous_secrets, created_at, updated_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?)', [
      'whk_01jdold0000000000000000000',
      acme.workspaceId,
      'https://hooks.example/old',
      '[]',
      1,
      SECRET_A,
      JSON.stringify([{ secret: SECRET_B, until: now + 3_600_000 }]),
      now,
      now,
    ]);
    expect(await dump()).toContain('PRIVATE KEY');

    // A second start on the same database, with the same key, as an upgraded `mailroom serve` would.
    const restarted = await createServices(h.config, { clock: h.clock });
    try {
      const dumped = await dump();
      expect(dumped).not.toContain('PRIVATE KEY');
      expect(dumped).not.toContain('whsec_');
      const domain = await restarted.database.db.selectFrom('sending_domains').select(['id', 'dkim_selector', 'dkim_private_key']).where('domain', '=', 'old.example').executeTakeFirstOrThrow();
      expect((await restarted.domains.signingKey('old.example', domain))?.privateKey).toBe(keys.privateKey);
      const hook = await restarted.database.db.selectFrom('webhooks').select(['id', 'secret', 'previous_secrets']).where('id', '=', 'whk_01jdold0000000000000000000').executeTakeFirstOrThrow();
      expect(signingSecrets(restarted.secretBox, hook, now)).toEqual([SECRET_A, SECRET_B]);
    } finally {
      await restarted.signer.close();
      await restarted.analyzer.close();
      await restarted.database.destroy();
    }
  });

  it('refuses to start (exit 78) with a key the stored secrets do not open with', async () => {
    const refused = await runCli(['serve'], { MAILROOM_DATABASE_URL: h.database.url, MAILROOM_SECRET_KEY: OTHER_KEY, MAILROOM_HTTP_PORT: '0', MAILROOM_SMTP_PORT: '0' });
    expect(refused.code).toBe(78);
    expect(refused.stderr).toMatch(/MAILROOM_SECRET_KEY: the secrets stored in this database were encrypted with another key/);
    expect(refused.stderr).not.toContain(OTHER_KEY);
    // The same refusal from the start function itself.
    await expect(createServices(loadConfig({ MAILROOM_DATABASE_URL: h.database.url, MAILROOM_SECRET_KEY: OTHER_KEY, MAILROOM_LOG_LEVEL: 'silent' }))).rejects.toThrow(/encrypted with another key/);
  });

  it.runIf(TEST_DIALECT === 'sqlite')('with SQLite and no key, makes secret.key (mode 0600) beside the database and keeps using it', () => {
    const file = join(dirname(h.database.url.slice('sqlite:'.length)), 'secret.key');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(loadSecretKey({ secretKey: null, databaseUrl: h.database.url })).toEqual(parseSecretKey(readFileSync(file, 'utf8')));
    // A new installation: the database's directory does not exist yet.
    const dir = mkdtempSync(join(tmpdir(), 'mailroom-key-'));
    try {
      const url = `sqlite:${join(dir, 'data', 'mailroom.db')}`;
      const key = loadSecretKey({ secretKey: null, databaseUrl: url });
      expect(key).toHaveLength(32);
      expect(statSync(join(dir, 'data', 'secret.key')).mode & 0o777).toBe(0o600);
      expect(loadSecretKey({ secretKey: null, databaseUrl: url })).toEqual(key);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.runIf(TEST_DIALECT === 'postgres')('with PostgreSQL and no key, refuses to start (exit 78)', async () => {
    const database = await createTestDatabase();
    try {
      const refused = await runCli(['serve'], { MAILROOM_DATABASE_URL: database.url, MAILROOM_HTTP_PORT: '0', MAILROOM_SMTP_PORT: '0' });
      expect(refused.code).toBe(78);
      expect(refused.stderr).toMatch(/MAILROOM_SECRET_KEY is required with PostgreSQL/);
    } finally {
      await database.drop();
    }
  });
});
