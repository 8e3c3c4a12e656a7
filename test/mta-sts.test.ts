import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIALECT } from './helpers/database.js';
import type { HarnessServiceOptions } from './helpers/harness.js';
import { senderWorld, type SentItem } from './helpers/outbound.js';
import type { PeerOptions } from './helpers/smtp-peer.js';
import { createTestCa, selfSignedCertificate } from './helpers/test-ca.js';

/** Recipient domains, each with its MX `mx1.<domain>` on the peer; what their policy says is set per test. */
const DOMAINS = ['enforced.test', 'unlisted.test', 'untrusted.test', 'testing.test', 'nopolicy.test', 'broken.test'];
const attempted = (item: SentItem) => item.attempts.length > 0;
const policy = (mode: string, mx: string[]) => `version: STSv1\r\nmode: ${mode}\r\n${mx.map((m) => `mx: ${m}\r\n`).join('')}max_age: 86400\r\n`;

describe(`MX delivery honours MTA-STS and records each attempt's TLS (${TEST_DIALECT})`, () => {
  // Filled in before the world starts (its beforeAll runs after this file's first one).
  const peer: PeerOptions = {};
  const services: HarnessServiceOptions = {};
  /** Policy bodies by host (`mta-sts.<domain>`); a host without one answers 404. */
  const policies = new Map<string, string>();
  const fetched: string[] = [];
  let policyServer: Server | undefined;

  beforeAll(async () => {
    const ca = await createTestCa();
    // Only mx1.enforced.test presents a certificate of the trusted CA; every other MX name gets a self-signed one.
    peer.tls = await selfSignedCertificate(['mx1.untrusted.test']);
    peer.sni = { 'mx1.enforced.test': await ca.issue(['mx1.enforced.test']) };
    policyServer = createServer(await ca.issue(DOMAINS.map((d) => `mta-sts.${d}`)), (req, res) => {
      const host = (req.headers.host ?? '').replace(/:\d+$/, '');
      fetched.push(`${host}${req.url ?? ''}`);
      const body = policies.get(host);
      res.writeHead(body === undefined ? 404 : 200, { 'content-type': 'text/plain' }).end(body ?? 'not here');
    });
    await new Promise<void>((resolve) => policyServer!.listen(0, '127.0.0.1', () => resolve()));
    services.outboundTls = { ca: ca.cert, mtaStsPort: (policyServer.address() as AddressInfo).port };
  });
  afterAll(() => new Promise<void>((resolve) => (policyServer ? policyServer.close(() => resolve()) : resolve())));

  const sender = senderWorld({ peer, services, mx: DOMAINS });
  const { world } = sender;
  /** Publish the domain's policy: its TXT record, its policy host's address, and the body the server gives. */
  const publish = (domain: string, body: string | null) => {
    world.dns(`_mta-sts.${domain}`, { TXT: ['v=STSv1; id=20261130T000000;'] });
    world.dns(`mta-sts.${domain}`, { A: ['127.0.0.1'] });
    if (body !== null) policies.set(`mta-sts.${domain}`, body);
  };
  const receivedFor = (address: string) => world.peer.accepted.filter((m) => m.recipients.includes(address));

  it('enforce, MX listed, certificate from a trusted CA: delivered over verified TLS, and the attempt says so', async () => {
    publish('enforced.test', policy('enforce', ['mx1.enforced.test', '*.backup.test']));
    const item = await sender.sendAndWait('alice@enforced.test');
    expect(item.status, JSON.stringify(item)).toBe('accepted');
    expect(fetched).toContain('mta-sts.enforced.test/.well-known/mta-sts.txt');
    expect(receivedFor('alice@enforced.test')).toEqual([expect.objectContaining({ secure: true })]);
    const attempt = item.attempts.at(-1)!;
    expect(attempt).toMatchObject({ outcome: 'sent', mta_sts: 'enforce', tls: { verified: true } });
    expect(attempt.tls!.version).toMatch(/^TLSv1\.[23]$/);
    expect(attempt.tls!.cipher).toMatch(/^TLS_/);
    // Cached until its max_age: the next message to the domain does not fetch it again, and is held to it too.
    const again = await sender.sendAndWait('alice2@enforced.test');
    expect(again.attempts.at(-1)).toMatchObject({ outcome: 'sent', mta_sts: 'enforce', tls: { verified: true } });
    expect(fetched.filter((f) => f.startsWith('mta-sts.enforced.test/'))).toHaveLength(1);
  });

  it('enforce, MX not listed in the policy: deferred naming MTA-STS, nothing sent', async () => {
    publish('unlisted.test', policy('enforce', ['mx.elsewhere.test']));
    const before = world.peer.connections;
    const item = await sender.sendAndWait('bob@unlisted.test', attempted);
    expect(item.status).toBe('queued');
    expect(item.recipients[0]!.status).toBe('pending');
    expect(item.last_error).toMatch(/^MTA-STS policy of unlisted\.test \(enforce\) lists none of its mail hosts \(mx1\.unlisted\.test\)/);
    expect(item.attempts[0]).toMatchObject({ outcome: 'no_route', mx: null, mta_sts: 'enforce', tls: null });
    expect(world.peer.connections).toBe(before);
  });

  it('enforce, MX listed but its certificate is not from a trusted CA: deferred naming MTA-STS, no mail sent', async () => {
    publish('untrusted.test', policy('enforce', ['mx1.untrusted.test']));
    const item = await sender.sendAndWait('carol@untrusted.test', attempted);
    expect(item.status).toBe('queued');
    expect(item.recipients[0]!.status).toBe('pending');
    expect(item.last_error).toMatch(/^MTA-STS policy \(enforce\) requires verified TLS with mx1\.untrusted\.test, which failed: .*(self[- ]signed|certificate)/i);
    expect(item.attempts[0]).toMatchObject({ outcome: 'deferred', mta_sts: 'enforce' });
    expect(world.peer.received.filter((m) => m.recipients.includes('carol@untrusted.test'))).toEqual([]);
  });

  it('testing: delivered as usual over an unverified certificate, with the mode noted', async () => {
    publish('testing.test', policy('testing', ['mx.elsewhere.test']));
    const item = await sender.sendAndWait('dave@testing.test');
    expect(item.status).toBe('accepted');
    expect(item.attempts.at(-1)).toMatchObject({ outcome: 'sent', mta_sts: 'testing', tls: { verified: false } });
  });

  it('no policy: delivered with opportunistic TLS as before, the certificate recorded as not verified', async () => {
    const item = await sender.sendAndWait('erin@nopolicy.test');
    expect(item.status).toBe('accepted');
    expect(receivedFor('erin@nopolicy.test')).toEqual([expect.objectContaining({ secure: true })]);
    const attempt = item.attempts.at(-1)!;
    expect(attempt).toMatchObject({ outcome: 'sent', mta_sts: null, tls: { verified: false } });
    expect(attempt.tls!.version).toMatch(/^TLSv1\.[23]$/);
  });

  it('a TXT record whose policy cannot be fetched (404) is no policy: delivered as usual', async () => {
    publish('broken.test', null);
    const item = await sender.sendAndWait('frank@broken.test');
    expect(item.status).toBe('accepted');
    expect(fetched).toContain('mta-sts.broken.test/.well-known/mta-sts.txt');
    expect(item.attempts.at(-1)).toMatchObject({ outcome: 'sent', mta_sts: null });
  });
});
