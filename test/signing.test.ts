import { generateKeyPairSync } from 'node:crypto';
import { authenticate } from 'mailauth';
import nodemailer from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDnsResolver } from '../src/lib/dns.js';
import { createLogger } from '../src/lib/logger.js';
import type { SigningKey } from '../src/modules/domains/domain.service.js';
import { createInProcessSigner, createThreadedSigner, type MessageSigner } from '../src/modules/sending/signing-pool.js';
import { startDnsServer, type TestDnsServer } from './helpers/dns-server.js';
import { capturingLogger } from './helpers/webhooks.js';

/** Built with nodemailer's composer, as the send path composes. */
async function compose(i: number): Promise<Buffer> {
  // CRLF lines, as the send path writes them (a bare CR or LF is made CRLF before signing: dkim-sign.ts).
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
  const info = await transport.sendMail({
    from: 'News <news@signer.test>',
    to: `user${i}@example.test`,
    subject: `Signed ${i} — ünïcode`,
    text: `Hello ${i}\n`.repeat(200 + i),
    html: i % 2 === 0 ? `<p>Hello <b>${i}</b></p>` : undefined,
  });
  return info.message as Buffer;
}

/**
 * DKIM signatures made on the signing threads must be the ones the calling thread makes, and verify
 * independently (mailauth, against the key published on a loopback DNS server).
 */
describe('DKIM signing on worker threads', () => {
  let dns: TestDnsServer;
  let threaded: MessageSigner;
  /** The pool logs every task it hands back to the calling thread: none may be logged, or the threads did not sign. */
  const logged = capturingLogger();
  const inProcess = createInProcessSigner();
  const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const key: SigningKey = { domain: 'signer.test', selector: 'mr1', privateKey: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };

  beforeAll(async () => {
    dns = await startDnsServer();
    dns.set('mr1._domainkey.signer.test', { TXT: [`v=DKIM1; k=rsa; p=${pair.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`] });
    threaded = createThreadedSigner({ threads: 2, logger: logged.logger });
  });
  afterAll(async () => {
    await threaded.close();
    await dns.close();
  });

  const verify = async (signed: Buffer) => {
    const verdict = await authenticate(signed, { ip: '192.0.2.1', helo: 'mx.signer.test', sender: 'news@signer.test', resolver: createDnsResolver([dns.address]) as never, disableArc: true, disableBimi: true });
    return verdict.dkim.results.map((r) => ({ domain: r.signingDomain, selector: r.selector, result: r.status.result }));
  };
  /** The signature's t= tag is the signing second; everything else is a function of the bytes and the key. */
  const withoutTime = (signed: Buffer) => signed.toString('latin1').replace(/\bt=\d+;/, 't=…;');

  it('signs concurrent messages exactly as the calling thread does, each verifying, the body untouched', async () => {
    const messages = await Promise.all(Array.from({ length: 12 }, (_, i) => compose(i)));
    const [fromThreads, fromHere] = await Promise.all([Promise.all(messages.map((m) => threaded.sign(m, key, 'w1'))), Promise.all(messages.map((m) => inProcess.sign(m, key, 'w1')))]);
    for (let i = 0; i < messages.length; i++) {
      const signed = fromThreads[i]!;
      expect(Buffer.isBuffer(signed)).toBe(true);
      expect(signed.toString('latin1').startsWith('DKIM-Signature: ')).toBe(true);
      // The signature goes in front; the message follows byte for byte.
      expect(signed.subarray(signed.length - messages[i]!.length).equals(messages[i]!)).toBe(true);
      expect(withoutTime(signed)).toBe(withoutTime(fromHere[i]!));
      expect(await verify(signed)).toEqual([{ domain: 'signer.test', selector: 'mr1', result: 'pass' }]);
    }
    expect(logged.lines).toEqual([]);
  });

  it('a tampered body fails verification (the check above can fail)', async () => {
    const signed = await threaded.sign(await compose(1), key, 'w1');
    const tampered = Buffer.from(signed.toString('latin1').replace('Hello 1', 'Hallo 1'), 'latin1');
    // mailauth reports a body-hash mismatch as neutral (RFC 6376 section 6.1.3 leaves the word to the verifier).
    expect(['fail', 'neutral']).toContain((await verify(tampered))[0]?.result);
  });

  it('signs a stored message with bare CR or LF as the SMTP client sends it: CRLF lines, verifying on the wire', async () => {
    const stored = Buffer.from((await compose(4)).toString('latin1').replace('Hello 4\r\n', 'Hello 4\rbare CR\nbare LF\r\n'), 'latin1');
    const signed = await threaded.sign(stored, key, 'w1');
    // nodemailer's SMTP client (DataStream) turns every bare CR and bare LF into CRLF.
    const onTheWire = Buffer.from(signed.toString('latin1').replace(/\r\n|\r|\n/g, '\r\n'), 'latin1');
    expect(onTheWire.equals(signed)).toBe(true);
    expect(await verify(onTheWire)).toEqual([{ domain: 'signer.test', selector: 'mr1', result: 'pass' }]);
  });

  it('after close() signs in the calling thread, with the same result', async () => {
    const signer = createThreadedSigner({ threads: 1, logger: createLogger('silent') });
    const message = await compose(3);
    const before = await signer.sign(message, key, 'w1');
    await signer.close();
    const after = await signer.sign(message, key, 'w1');
    expect(withoutTime(after)).toBe(withoutTime(before));
    expect(await verify(after)).toEqual([{ domain: 'signer.test', selector: 'mr1', result: 'pass' }]);
  });

  it('a key the thread cannot use is an error, not a hang', async () => {
    await expect(threaded.sign(await compose(2), { ...key, privateKey: 'not a key' }, 'w1')).rejects.toThrow();
  });

  it('shares the threads between workspaces: a second workspace is not signed behind the first one\'s queue', async () => {
    // One thread: two signings on it at once, one of them at most per workspace.
    const signer = createThreadedSigner({ threads: 1, logger: createLogger('silent') });
    try {
      const big = await compose(40);
      await signer.sign(big, key, 'warm-up');
      const done: string[] = [];
      const sign = (workspace: string) => signer.sign(big, key, workspace).then(() => done.push(workspace));
      // The first workspace queues 12 signings, then the second asks for 2.
      const first = Array.from({ length: 12 }, () => sign('first'));
      const second = [sign('second'), sign('second')];
      await Promise.all([...first, ...second]);
      // Taken round-robin, the second workspace's two are done among the first five, not after the first's twelve.
      expect(done.slice(0, 5).filter((w) => w === 'second')).toHaveLength(2);
      expect(done.filter((w) => w === 'first')).toHaveLength(12);
    } finally {
      await signer.close();
    }
  });
});
