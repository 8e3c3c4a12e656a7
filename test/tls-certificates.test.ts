import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import selfsigned from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.js';
import { createLogger } from '../src/lib/logger.js';
import { startService, type RunningService } from '../src/main.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from './helpers/database.js';
import { TEST_SERVICE_ENV } from './helpers/service-env.js';
import { startTlsCertificate, type SeenCertificate } from './helpers/starttls.js';

/** A key and self-signed certificate for `name`. */
async function pair(name: string): Promise<{ key: string; cert: string }> {
  const pems = await selfsigned.generate([{ name: 'commonName', value: name }], { notAfterDate: new Date(Date.now() + 30 * 86_400_000), keySize: 2048 });
  return { key: pems.private, cert: pems.cert };
}

/** Replace a file the way certbot and Kubernetes do: write beside it, then rename over it. */
function replace(path: string, text: string): void {
  writeFileSync(`${path}.new`, text);
  renameSync(`${path}.new`, path);
}

async function eventually(look: () => Promise<SeenCertificate | null>, want: string, withinMs: number): Promise<SeenCertificate | null> {
  const until = Date.now() + withinMs;
  let seen = await look();
  while (seen?.subjectCn !== want && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 100));
    seen = await look();
  }
  return seen;
}

describe(`TLS certificate files reload without a restart (${TEST_DIALECT})`, () => {
  let database: TestDatabase;
  let dir: string;
  let running: RunningService;
  const files = { key: '', cert: '' };
  const look = () => startTlsCertificate(running.smtpPort ?? 0);

  beforeAll(async () => {
    database = await createTestDatabase();
    dir = mkdtempSync(join(tmpdir(), 'mailroom-tls-'));
    files.key = join(dir, 'key.pem');
    files.cert = join(dir, 'cert.pem');
    const a = await pair('a.mailroom.test');
    writeFileSync(files.key, a.key);
    writeFileSync(files.cert, a.cert);
    const config = loadConfig({
      ...TEST_SERVICE_ENV,
      ...database.secretEnv,
      MAILROOM_DATABASE_URL: database.url,
      MAILROOM_SMTP_PORT: '0',
      MAILROOM_HTTP_PORT: '0',
      // The general pair (no SMTP pair of its own); a periodic look well inside the test's wait.
      MAILROOM_TLS_KEY: files.key,
      MAILROOM_TLS_CERT: files.cert,
      MAILROOM_TLS_CHECK_MS: '1000',
    });
    running = await startService(config, ['smtp'], createLogger('silent'));
  });
  afterAll(async () => {
    await running?.stop();
    await database?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('serves A, then B once the files are replaced, and keeps B when a broken pair is written', async () => {
    expect((await look())?.subjectCn).toBe('a.mailroom.test');

    const b = await pair('b.mailroom.test');
    replace(files.key, b.key);
    replace(files.cert, b.cert);
    const seenB = await eventually(look, 'b.mailroom.test', 5000);
    expect(seenB?.subjectCn).toBe('b.mailroom.test');

    // A certificate that does not parse, then a valid certificate whose key is another's: B stays.
    replace(files.cert, '-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n');
    await new Promise((r) => setTimeout(r, 2500));
    expect((await look())?.fingerprint256).toBe(seenB?.fingerprint256);
    const c = await pair('c.mailroom.test');
    replace(files.cert, c.cert);
    await new Promise((r) => setTimeout(r, 2500));
    expect((await look())?.fingerprint256).toBe(seenB?.fingerprint256);

    // The matching key arrives: C is served.
    replace(files.key, c.key);
    expect((await eventually(look, 'c.mailroom.test', 5000))?.subjectCn).toBe('c.mailroom.test');
  });
});

describe('which pair a listener gets', () => {
  it("inbound SMTP's own pair wins over the general one; a bad pair stops the start with the variable's name", async () => {
    const database = await createTestDatabase();
    const dir = mkdtempSync(join(tmpdir(), 'mailroom-tls-'));
    try {
      const general = await pair('general.mailroom.test');
      const own = await pair('smtp.mailroom.test');
      for (const [name, text] of Object.entries({ 'g.key': general.key, 'g.crt': general.cert, 's.key': own.key, 's.crt': own.cert })) writeFileSync(join(dir, name), text);
      const env = { ...TEST_SERVICE_ENV, ...database.secretEnv, MAILROOM_DATABASE_URL: database.url, MAILROOM_SMTP_PORT: '0', MAILROOM_TLS_KEY: join(dir, 'g.key'), MAILROOM_TLS_CERT: join(dir, 'g.crt') };
      const both = await startService(loadConfig({ ...env, MAILROOM_SMTP_TLS_KEY: join(dir, 's.key'), MAILROOM_SMTP_TLS_CERT: join(dir, 's.crt') }), ['smtp'], createLogger('silent'));
      try {
        expect((await startTlsCertificate(both.smtpPort ?? 0))?.subjectCn).toBe('smtp.mailroom.test');
      } finally {
        await both.stop();
      }
      await expect(startService(loadConfig({ ...env, MAILROOM_TLS_KEY: join(dir, 's.key') }), ['smtp'], createLogger('silent'))).rejects.toThrow(
        /MAILROOM_TLS_KEY\/MAILROOM_TLS_CERT: the private key does not belong to the certificate/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await database.drop();
    }
  });

  it('the configuration refuses ACME beside the general files, and half a pair', () => {
    expect(() => loadConfig({ MAILROOM_TLS_KEY: '/etc/hostname' })).toThrow(/MAILROOM_TLS_KEY and MAILROOM_TLS_CERT must be set together/);
    expect(() => loadConfig({ MAILROOM_TLS_KEY: '/etc/hostname', MAILROOM_TLS_CERT: '/etc/hostname', MAILROOM_ACME_DIRECTORY_URL: 'https://127.0.0.1:14000/dir' })).toThrow(/name two sources/);
    expect(() => loadConfig({ MAILROOM_ACME_DIRECTORY_URL: 'http://ca.test/dir' })).toThrow(/MAILROOM_ACME_DIRECTORY_URL.*https/);
    expect(loadConfig({ MAILROOM_ACME_DIRECTORY_URL: 'https://ca.test/dir', MAILROOM_SMTP_HOSTNAME: 'mx.example.net' }).acme).toMatchObject({ domains: ['mx.example.net'], renewBeforeDays: 30 });
  });

  it('without ACME every challenge token is a 404 (no credential asked), and STARTTLS is not offered without a pair', async () => {
    const database = await createTestDatabase();
    const running = await startService(
      loadConfig({ ...TEST_SERVICE_ENV, ...database.secretEnv, MAILROOM_DATABASE_URL: database.url, MAILROOM_SMTP_PORT: '0', MAILROOM_HTTP_PORT: '0' }),
      ['api', 'smtp'],
      createLogger('silent'),
    );
    try {
      const res = await fetch(`${running.httpUrl}/.well-known/acme-challenge/abcDEF_123-x`);
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ error: 'challenge_not_found' });
      expect(await startTlsCertificate(running.smtpPort ?? 0)).toBeNull();
    } finally {
      await running.stop();
      await database.drop();
    }
  });
});
