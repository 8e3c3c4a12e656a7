import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import selfsigned from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.js';
import { createLogger } from '../src/lib/logger.js';
import { startService, type RunningService } from '../src/main.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from './helpers/database.js';
import { TEST_SERVICE_ENV } from './helpers/service-env.js';

type Answer = { typ?: string; data?: unknown; error?: string; welcome?: string; capabilities?: string[] };
const CLIENT = join(import.meta.dirname, 'imap', 'client.py');

function imaplib(port: number, ssl: boolean, steps: unknown[][]): Promise<Answer[]> {
  return new Promise((resolve, reject) => {
    const child = execFile('python3', [CLIENT], { timeout: 30_000 }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout) as Answer[])));
    child.stdin!.end(JSON.stringify({ host: '127.0.0.1', port, ssl, steps }));
  });
}

describe(`IMAP listeners of serve --role imap: STARTTLS, IMAPS, stop (${TEST_DIALECT})`, () => {
  let database: TestDatabase;
  let dir: string;
  let running: RunningService | null = null;

  beforeAll(async () => {
    database = await createTestDatabase();
    dir = mkdtempSync(join(tmpdir(), 'mailroom-imap-'));
    const pems = await selfsigned.generate([{ name: 'commonName', value: 'imap.mailroom.test' }], { notAfterDate: new Date(Date.now() + 86_400_000), keySize: 2048 });
    writeFileSync(join(dir, 'key.pem'), pems.private);
    writeFileSync(join(dir, 'cert.pem'), pems.cert);
    const config = loadConfig({
      ...TEST_SERVICE_ENV,
      ...database.secretEnv,
      MAILROOM_DATABASE_URL: database.url,
      MAILROOM_SMTP_HOST: '127.0.0.1',
      MAILROOM_IMAP_PORT: '0',
      MAILROOM_IMAPS_PORT: '0',
      MAILROOM_TLS_KEY: join(dir, 'key.pem'),
      MAILROOM_TLS_CERT: join(dir, 'cert.pem'),
    });
    running = await startService(config, ['imap'], createLogger('silent'));
  });
  afterAll(async () => {
    await running?.stop();
    rmSync(dir, { recursive: true, force: true });
    await database?.drop();
  });

  it('offers STARTTLS with LOGINDISABLED before it, and AUTH=PLAIN after; IMAPS speaks TLS from the first byte', async () => {
    const [hello, tls, bad] = await imaplib(running!.imapPort!, false, [['starttls'], ['login', 'nobody@mailroom.localhost', 'not-a-password']]);
    expect(hello!.capabilities).toEqual(expect.arrayContaining(['STARTTLS', 'LOGINDISABLED']));
    expect(tls!.typ).toBe('OK');
    expect(tls!.data).toContain('AUTH=PLAIN');
    expect(tls!.data).not.toContain('LOGINDISABLED');
    expect(bad!.error).toContain('[AUTHENTICATIONFAILED]');
    const [secure, refused] = await imaplib(running!.imapsPort!, true, [['login', 'nobody@mailroom.localhost', 'not-a-password']]);
    expect(secure!.capabilities).toContain('AUTH=PLAIN');
    expect(secure!.capabilities).not.toContain('STARTTLS');
    expect(refused!.error).toContain('[AUTHENTICATIONFAILED]');
  });

  it('says BYE to open sessions when the service stops', async () => {
    const socket = connect(running!.imapPort!, '127.0.0.1');
    let seen = '';
    const greeted = new Promise<void>((resolve) => socket.on('data', (d: Buffer) => ((seen += d.toString('latin1')), seen.includes('ready') && resolve())));
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    await greeted;
    expect(seen).toMatch(/^\* OK \[CAPABILITY IMAP4rev1 [^\]]*\] Mailroom ready\.\r\n$/);
    const stopping = running!.stop();
    running = null;
    await closed;
    await stopping;
    expect(seen).toContain('* BYE Server shutting down.');
  });
});
