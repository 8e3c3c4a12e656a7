import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import selfsigned from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.js';
import { createDb } from '../src/db/database.js';
import { createLogger } from '../src/lib/logger.js';
import { startService, type RunningService } from '../src/main.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from './helpers/database.js';
import { startDnsServer, type TestDnsServer } from './helpers/dns-server.js';
import { freePort } from './helpers/ports.js';
import { TEST_SERVICE_ENV } from './helpers/service-env.js';
import { startTlsCertificate, type SeenCertificate } from './helpers/starttls.js';

/**
 * ACME against Pebble, Let's Encrypt's test CA (Debian package `pebble`), on loopback only: Pebble asks a test DNS
 * server for the host name (127.0.0.1) and fetches the HTTP-01 answer from the service's HTTP listener.
 */
const PEBBLE = '/usr/bin/pebble';
const HAVE_PEBBLE = existsSync(PEBBLE);
if (!HAVE_PEBBLE) console.warn(`test/acme.test.ts skipped: ${PEBBLE} is missing (apt-get install -y pebble)`);

const HOST = 'mail.acme-test.example';

/** GET over HTTPS trusting `ca` only. */
function fetchText(url: string, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    get(url, { ca }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve(body));
    }).on('error', reject);
  });
}

async function until<T>(look: () => Promise<T>, ok: (value: T) => boolean, withinMs: number): Promise<T> {
  const deadline = Date.now() + withinMs;
  let value = await look();
  while (!ok(value) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200));
    value = await look();
  }
  return value;
}

describe.skipIf(!HAVE_PEBBLE)(`ACME certificates from Pebble (${TEST_DIALECT})`, () => {
  let dir: string;
  let database: TestDatabase;
  let dns: TestDnsServer;
  let pebble: ChildProcess;
  let pebbleLog = '';
  let pebbleCa: string;
  let directoryUrl: string;
  let managementUrl: string;
  let httpPort: number;
  const services: RunningService[] = [];
  let serviceLog = '';
  const logger = () => createLogger('info', 'mailroom', { write: (line: string) => void (serviceLog += line) });
  const logs = () => `${serviceLog}\n--- pebble ---\n${pebbleLog}`;

  const env = (extra: Record<string, string>) =>
    loadConfig({
      ...TEST_SERVICE_ENV,
      ...database.secretEnv,
      MAILROOM_DATABASE_URL: database.url,
      MAILROOM_SMTP_PORT: '0',
      MAILROOM_ACME_DIRECTORY_URL: directoryUrl,
      MAILROOM_ACME_DOMAINS: HOST,
      MAILROOM_ACME_EMAIL: 'postmaster@acme-test.example',
      MAILROOM_ACME_CA_FILE: join(dir, 'pebble-https.crt'),
      MAILROOM_TLS_CHECK_MS: '500',
      ...extra,
    });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailroom-acme-'));
    database = await createTestDatabase();
    dns = await startDnsServer();
    dns.set(HOST, { A: ['127.0.0.1'] });
    // Pebble's own HTTPS certificate (its directory), which the service trusts through MAILROOM_ACME_CA_FILE.
    const https = await selfsigned.generate([{ name: 'commonName', value: 'localhost' }], { notAfterDate: new Date(Date.now() + 86_400_000), keySize: 2048 });
    pebbleCa = https.cert;
    writeFileSync(join(dir, 'pebble-https.crt'), https.cert);
    writeFileSync(join(dir, 'pebble-https.key'), https.private);
    const [listen, management, tlsPort] = [await freePort(), await freePort(), await freePort()];
    httpPort = await freePort();
    directoryUrl = `https://127.0.0.1:${listen}/dir`;
    managementUrl = `https://127.0.0.1:${management}`;
    const config = {
      pebble: {
        listenAddress: `127.0.0.1:${listen}`,
        managementListenAddress: `127.0.0.1:${management}`,
        certificate: join(dir, 'pebble-https.crt'),
        privateKey: join(dir, 'pebble-https.key'),
        httpPort, // HTTP-01 is asked of the service's HTTP listener
        tlsPort,
        ocspResponderURL: '',
        externalAccountBindingRequired: false,
      },
    };
    writeFileSync(join(dir, 'pebble.json'), JSON.stringify(config));
    pebble = spawn(PEBBLE, ['-config', join(dir, 'pebble.json'), '-dnsserver', dns.address], {
      env: { PATH: process.env.PATH ?? '', PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    pebble.stdout?.on('data', (d: Buffer) => (pebbleLog += d.toString()));
    pebble.stderr?.on('data', (d: Buffer) => (pebbleLog += d.toString()));
    const directory = await until(
      () => fetchText(directoryUrl, pebbleCa).catch(() => ''),
      (text) => text.includes('newOrder'),
      15_000,
    );
    expect(directory, pebbleLog).toContain('newOrder');
  }, 30_000);

  afterAll(async () => {
    for (const s of services.reverse()) await s.stop();
    pebble?.kill();
    await dns?.close();
    await database?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  let first: SeenCertificate | null = null;

  it('obtains a certificate for the host name and serves it on STARTTLS; the key is sealed in the database', async () => {
    const one = await startService(env({ MAILROOM_HTTP_PORT: String(httpPort) }), ['api', 'smtp'], logger());
    services.push(one);
    first = await until(() => startTlsCertificate(one.smtpPort ?? 0, HOST), (seen) => seen?.subjectAltName.includes(HOST) === true, 60_000);
    expect(first?.subjectAltName, logs()).toContain(`DNS:${HOST}`);
    const intermediate = new X509Certificate(await fetchText(`${managementUrl}/intermediates/0`, pebbleCa));
    expect(first?.issuerCn).toBe(/CN=([^\n]+)/.exec(intermediate.subject)?.[1]);
    expect(first?.issuerCn).toMatch(/^Pebble Intermediate CA/);

    const handle = createDb(database.url);
    const { db } = handle;
    try {
      const row = await db.selectFrom('tls_certificates').selectAll().where('name', '=', 'acme').executeTakeFirstOrThrow();
      expect(row.key_sealed).toMatch(/^v1:/);
      expect(row.key_sealed).not.toContain('PRIVATE KEY');
      const account = await db.selectFrom('acme_accounts').selectAll().executeTakeFirstOrThrow();
      expect(account.key_sealed).toMatch(/^v1:/);
      // The order's challenges are gone once it is done.
      expect(await db.selectFrom('acme_challenges').selectAll().execute()).toEqual([]);
    } finally {
      await handle.destroy();
    }
  }, 90_000);

  it('a renewal ordered by another process is answered by the first one and picked up by its listener', async () => {
    expect(first).not.toBeNull();
    // Renew-before longer than Pebble's validity: the second process finds the certificate due at once.
    // Pebble asks the first process's HTTP listener; the challenge is in the database, so it answers.
    const two = await startService(env({ MAILROOM_HTTP_PORT: '0', MAILROOM_ACME_RENEW_DAYS: '36500' }), ['api'], logger());
    services.push(two);
    const one = services[0]!;
    const renewed = await until(() => startTlsCertificate(one.smtpPort ?? 0, HOST), (seen) => seen !== null && seen.serialNumber !== first?.serialNumber, 60_000);
    expect(renewed?.serialNumber, logs()).not.toBe(first?.serialNumber);
    expect(renewed?.subjectAltName).toContain(`DNS:${HOST}`);
    expect(renewed?.issuerCn).toMatch(/^Pebble Intermediate CA/);
  }, 90_000);
});
