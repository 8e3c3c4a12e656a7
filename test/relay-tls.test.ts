import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import selfsigned from 'selfsigned';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli, startServe } from './helpers/cli.js';
import { createTestDatabase, TEST_DIALECT } from './helpers/database.js';
import { startSender, type SentItem } from './helpers/outbound.js';
import { startSmtpPeer } from './helpers/smtp-peer.js';
import { closeAfterTest } from './helpers/world.js';

const USER = 'relay-user';
const PASS = 's3cret-relay-pass';
const attempted = (item: SentItem) => item.attempts.length > 0;

/** A TCP proxy in front of `port` that keeps every byte the client sent: what crossed the wire. */
async function recordingProxy(port: number): Promise<{ port: number; sent: () => string; close: () => Promise<void> }> {
  const chunks: Buffer[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    }
    client.on('data', (d: Buffer) => chunks.push(d));
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    port: (server.address() as { port: number }).port,
    sent: () => Buffer.concat(chunks).toString('latin1'),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A self-signed certificate for 127.0.0.1 (the relay URLs below name the relay by that address). */
const certificate = () =>
  selfsigned.generate([{ name: 'commonName', value: '127.0.0.1' }], {
    keySize: 2048,
    notAfterDate: new Date(Date.now() + 86_400_000),
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
  });

describe(`relay credentials never travel unprotected (${TEST_DIALECT})`, () => {
  let pems: { private: string; cert: string };
  /** A relay (an SMTP peer taking the one user) for one test: closed when the test finishes. */
  const relay = async (options: Parameters<typeof startSmtpPeer>[0]) => closeAfterTest(await startSmtpPeer({ auth: { user: USER, pass: PASS }, ...options }));
  beforeAll(async () => {
    pems = await certificate();
  });

  it('defers the mail and never sends AUTH to a relay that offers no TLS', async () => {
    const peer = await relay({});
    const proxy = closeAfterTest(await recordingProxy(peer.port));
    const sender = await startSender({ MAILROOM_SMTP_RELAY: `smtp://${USER}:${PASS}@127.0.0.1:${proxy.port}` });
    const item = await sender.sendAndWait('someone@elsewhere.test', attempted);
    // Deferred (decision 201): still queued, retried later, with the reason recorded.
    expect(item.status).toBe('queued');
    expect(item.recipients[0]!.status).toBe('pending');
    expect(item.last_error).toMatch(/^TLS with the relay failed, so its credentials were not sent/);
    expect(peer.auths).toEqual([]);
    expect(peer.accepted).toEqual([]);
    expect(proxy.sent()).toContain('STARTTLS');
    expect(proxy.sent()).not.toMatch(/AUTH/i);
    expect(proxy.sent()).not.toContain(Buffer.from(`\0${USER}\0${PASS}`).toString('base64'));
    expect(proxy.sent()).not.toContain(PASS);
  });

  it.each([
    ['STARTTLS', false, 'smtp'],
    ['implicit TLS', true, 'smtps'],
  ])('refuses a self-signed certificate over %s unless the URL says ?tls=insecure', async (_name, secure, scheme) => {
    const peer = await relay({ tls: { key: pems.private, cert: pems.cert }, secure });
    const strict = await startSender({ MAILROOM_SMTP_RELAY: `${scheme}://${USER}:${PASS}@127.0.0.1:${peer.port}` });
    const deferred = await strict.sendAndWait('someone@elsewhere.test', attempted);
    expect(deferred.status).toBe('queued');
    expect(deferred.last_error).toMatch(/^TLS with the relay failed, so its credentials were not sent: .*(self[- ]signed|certificate)/i);
    expect(peer.auths).toEqual([]);
    expect(peer.accepted).toEqual([]);
    // The strict service stops now: its deferred message must not reach the relay once the other service is there.
    await strict.close();
    const lab = await startSender({ MAILROOM_SMTP_RELAY: `${scheme}://${USER}:${PASS}@127.0.0.1:${peer.port}?tls=insecure` });
    const item = await lab.sendAndWait('someone@elsewhere.test');
    expect(item.status).toBe('accepted');
    expect(peer.auths).toEqual([USER]);
    expect(peer.accepted).toHaveLength(1);
    expect(peer.accepted[0]!.secure).toBe(true);
  });

  it('delivers over verified TLS to a relay whose certificate the process trusts (NODE_EXTRA_CA_CERTS)', async () => {
    // Node reads its CA store once, at start: a `mailroom serve` child is given the certificate to trust.
    const peer = await relay({ tls: { key: pems.private, cert: pems.cert } });
    const dir = mkdtempSync(join(tmpdir(), 'mailroom-relay-ca-'));
    const caFile = join(dir, 'ca.pem');
    writeFileSync(caFile, pems.cert);
    closeAfterTest({ close: () => rmSync(dir, { recursive: true, force: true }) });
    const database = await createTestDatabase();
    closeAfterTest({ close: () => database.drop() });
    const env = { MAILROOM_DATABASE_URL: database.url, ...database.secretEnv, MAILROOM_LOG_LEVEL: 'info', MAILROOM_RATE_LIMIT_PER_MINUTE: '0', MAILROOM_SMTP_RELAY: `smtp://${USER}:${PASS}@127.0.0.1:${peer.port}` };
    const boot = await runCli(['admin', 'bootstrap', '--email', 'relay@example.com', '--password', 'correct horse battery', '--workspace', 'Relay', '--json'], env);
    expect(boot.code, boot.stderr).toBe(0);
    const apiKey = (JSON.parse(boot.stdout) as { api_key: string }).api_key;
    const server = await startServe(['--role', 'api,worker'], { ...env, MAILROOM_HTTP_PORT: '0', NODE_EXTRA_CA_CERTS: caFile });
    closeAfterTest({
      close: async () => {
        server.child.kill('SIGTERM');
        await server.exited;
      },
    });
    const auth = { authorization: `Bearer ${apiKey}` };
    const headers = { ...auth, 'content-type': 'application/json' };
    expect((await fetch(`${server.url}/mailboxes?address=newsletter@mailroom.localhost`, { method: 'POST', headers: auth })).status).toBe(201);
    const sent = await fetch(`${server.url}/send`, { method: 'POST', headers, body: JSON.stringify({ from_mailbox: 'newsletter@mailroom.localhost', to: 'someone@elsewhere.test', subject: 'Hi', body: 'Hello' }) });
    expect(sent.status).toBe(202);
    const deadline = Date.now() + 15_000;
    while (peer.accepted.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(peer.accepted, server.logs()).toHaveLength(1);
    expect(peer.accepted[0]!.secure).toBe(true);
    expect(peer.auths).toEqual([USER]);
  });
});
