import { generateKeyPairSync } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { authenticate } from 'mailauth';
import nodemailer from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BufferBlob } from '../src/lib/buffer-blob.js';
import { createDnsResolver } from '../src/lib/dns.js';
import { createLogger } from '../src/lib/logger.js';
import { createInProcessAnalyzer, type MessageAnalyzer } from '../src/modules/messages/analysis.js';
import { createThreadedAnalyzer } from '../src/modules/messages/analysis-pool.js';
import { authenticationInput, createMailauthAuthenticator } from '../src/modules/messages/authentication.js';
import { startDnsServer, type TestDnsServer } from './helpers/dns-server.js';
import { capturingLogger } from './helpers/webhooks.js';

const FIXTURES = new URL('./fixtures/eml/', import.meta.url);
const CONTEXT = { ip: '192.0.2.10', helo: 'mx.sender.test', sender: 'alice@sender.test' };

describe('BufferBlob', () => {
  it('holds exactly the bytes of its parts (strings, views on larger buffers, ArrayBuffers, other blobs)', async () => {
    const backing = Buffer.from('xxHELLOxx');
    const view = new Uint8Array(backing.buffer, backing.byteOffset + 2, 5);
    const inner = new BufferBlob(['ü'], { type: 'text/plain' });
    const blob = new BufferBlob(['a', view, new Uint8Array([0x21]).buffer, inner]);
    expect(blob.size).toBe(1 + 5 + 1 + 2);
    expect(blob.type).toBe('');
    expect(inner.type).toBe('text/plain');
    expect(await blob.text()).toBe('aHELLO!ü');
    // arrayBuffer() is only these bytes, not the pool slab a small Buffer lives in.
    const array = await blob.arrayBuffer();
    expect(array.byteLength).toBe(9);
    expect(Buffer.from(array).toString('utf8')).toBe('aHELLO!ü');
    expect(Buffer.from(await blob.bytes()).equals(Buffer.from('aHELLO!ü'))).toBe(true);
    expect(new BufferBlob().size).toBe(0);
  });
});

/**
 * The analysis threads must give exactly what the calling thread gives: the same parse (there with
 * BufferBlob in place of Node's Blob) and the same SPF/DKIM/DMARC, asked of the configured DNS server.
 */
describe('message analysis on worker threads', () => {
  let dns: TestDnsServer;
  let threaded: MessageAnalyzer;
  let inProcess: MessageAnalyzer;
  /** The pool logs every task it hands back to the calling thread: none may be logged, or the threads did not analyse. */
  const logged = capturingLogger();
  const key = generateKeyPairSync('rsa', { modulusLength: 2048 });

  beforeAll(async () => {
    dns = await startDnsServer();
    dns.set('sel._domainkey.sender.test', { TXT: [`v=DKIM1; k=rsa; p=${key.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`] });
    dns.set('sender.test', { TXT: ['v=spf1 ip4:192.0.2.0/24 -all'] });
    dns.set('_dmarc.sender.test', { TXT: ['v=DMARC1; p=reject'] });
    const authenticator = createMailauthAuthenticator({ resolve: createDnsResolver([dns.address]), hostname: 'mx.mailroom.test' });
    inProcess = createInProcessAnalyzer(authenticator);
    threaded = createThreadedAnalyzer({ threads: 2, dnsServers: [dns.address], hostname: 'mx.mailroom.test', fallback: authenticator, logger: logged.logger });
  });
  afterAll(async () => {
    await threaded.close();
    await dns.close();
  });

  const files = readdirSync(FIXTURES).filter((file) => file.endsWith('.eml'));

  it('parses every corpus message exactly as the calling thread does', async () => {
    expect(files.length).toBeGreaterThanOrEqual(20);
    const raws = files.map((file) => readFileSync(new URL(file, FIXTURES)));
    // All at once: several tasks per thread, answers matched to their messages.
    const [there, here] = await Promise.all([Promise.all(raws.map((raw) => threaded.analyze(raw, CONTEXT))), Promise.all(raws.map((raw) => inProcess.analyze(raw, CONTEXT)))]);
    for (const [i, file] of files.entries()) {
      expect(there[i], file).toEqual(here[i]);
      for (const attachment of there[i]!.parsed.attachments) expect(Buffer.isBuffer(attachment.content), file).toBe(true);
    }
    expect(logged.lines).toEqual([]);
  });

  it('authenticates through the configured DNS in the thread: a signed, aligned message passes, a forged one is quarantined', async () => {
    const mail = { from: 'alice@sender.test', to: 'bob@mailroom.test', subject: 'signed', text: 'hello from a worker thread' };
    const signed = (await nodemailer
      .createTransport({ streamTransport: true, buffer: true, newline: 'windows', dkim: { domainName: 'sender.test', keySelector: 'sel', privateKey: key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() } })
      .sendMail(mail)).message as Buffer;
    const good = await threaded.analyze(signed, CONTEXT);
    expect(good.auth.summary).toEqual({ spf: 'pass', dkim: 'pass', dmarc: 'pass' });
    expect(good.auth.quarantine).toBe(false);
    // The verdict's header lines lead the header list, as they lead the stored source.
    expect(good.parsed.headers.slice(0, 2).map((h) => h.name.toLowerCase()).sort()).toEqual(['authentication-results', 'received-spf']);
    expect(good.parsed.headers.find((h) => h.name.toLowerCase() === 'authentication-results')!.value).toMatch(/dkim=pass/);
    expect(good.parsed.text).toContain('hello from a worker thread');

    const forged = await threaded.analyze(Buffer.from(signed.toString('utf8').replace('hello from a worker thread', 'hello from a forger')), { ...CONTEXT, ip: '203.0.113.5' });
    expect(forged.auth.summary).toEqual({ spf: 'fail', dkim: 'fail', dmarc: 'fail' });
    expect(forged.auth.quarantine).toBe(true);
    expect(forged).toEqual(await inProcess.analyze(Buffer.from(signed.toString('utf8').replace('hello from a worker thread', 'hello from a forger')), { ...CONTEXT, ip: '203.0.113.5' }));
    expect(dns.queries.some((q) => q.name === 'sel._domainkey.sender.test')).toBe(true);
    expect(logged.lines).toEqual([]);
  });

  it('analyzes in the calling thread once closed', async () => {
    const own = createThreadedAnalyzer({
      threads: 1,
      dnsServers: [dns.address],
      hostname: 'mx.mailroom.test',
      fallback: createMailauthAuthenticator({ resolve: createDnsResolver([dns.address]), hostname: 'mx.mailroom.test' }),
      logger: createLogger('silent'),
    });
    const raw = readFileSync(new URL(files[0]!, FIXTURES));
    const before = await own.analyze(raw, CONTEXT);
    await own.close();
    expect(await own.analyze(raw, CONTEXT)).toEqual(before);
  });
});

/**
 * Without a signature field mailauth is given only the header block (authenticationInput): its verdict
 * must be exactly the one it gives for the whole message, and anything signed must go whole.
 */
describe('what mailauth is given', () => {
  let dns: TestDnsServer;
  const key = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const privateKey = key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

  beforeAll(async () => {
    dns = await startDnsServer();
    dns.set('sel._domainkey.sender.test', { TXT: [`v=DKIM1; k=rsa; p=${key.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`] });
    dns.set('sender.test', { TXT: ['v=spf1 ip4:192.0.2.0/24 -all'] });
    dns.set('_dmarc.sender.test', { TXT: ['v=DMARC1; p=quarantine'] });
  });
  afterAll(() => dns.close());

  const verdict = async (input: Buffer) => {
    const result = await authenticate(input, { ...CONTEXT, mta: 'mx.mailroom.test', resolver: createDnsResolver([dns.address]) as never, disableArc: true, disableBimi: true });
    return JSON.parse(JSON.stringify(result)) as unknown;
  };

  it('the header block alone gives every unsigned corpus message the verdict of the whole message', async () => {
    let shortened = 0;
    for (const file of readdirSync(FIXTURES).filter((f) => f.endsWith('.eml'))) {
      const raw = readFileSync(new URL(file, FIXTURES));
      const input = authenticationInput(raw);
      if (input !== raw) {
        shortened++;
        expect(raw.subarray(0, input.length).equals(input), file).toBe(true);
        expect(input.toString('latin1'), file).toMatch(/\n\r?\n$/);
        expect(input.toString('latin1'), file).not.toMatch(/^(dkim-signature|arc-)/im);
      }
      expect(await verdict(input), file).toEqual(await verdict(raw));
    }
    expect(shortened).toBeGreaterThanOrEqual(15);
  });

  it('cuts at the first empty line, with CRLF or bare LF, and keeps a message with no end of header whole', () => {
    expect(authenticationInput(Buffer.from('From: a@sender.test\r\nSubject: x\r\n\r\nbody\r\n\r\nmore')).toString()).toBe('From: a@sender.test\r\nSubject: x\r\n\r\n');
    expect(authenticationInput(Buffer.from('From: a@sender.test\nSubject: x\n\nbody\n')).toString()).toBe('From: a@sender.test\nSubject: x\n\n');
    expect(authenticationInput(Buffer.from('\r\n\r\nbody')).toString()).toBe('\r\n\r\n');
    const headerOnly = Buffer.from('From: a@sender.test\r\nSubject: x\r\n');
    expect(authenticationInput(headerOnly)).toBe(headerOnly);
  });

  it('passes a message with a DKIM signature or an ARC set whole, and its verdict still sees the body', async () => {
    const mail = { from: 'alice@sender.test', to: 'bob@mailroom.test', subject: 'signed', text: 'the body that is signed' };
    const signed = (await nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows', dkim: { domainName: 'sender.test', keySelector: 'sel', privateKey } }).sendMail(mail)).message as Buffer;
    expect(authenticationInput(signed)).toBe(signed);
    const lowerCase = Buffer.from(signed.toString('latin1').replace('DKIM-Signature:', 'dkim-signature:'), 'latin1');
    expect(authenticationInput(lowerCase)).toBe(lowerCase);
    const arc = Buffer.from('ARC-Seal: i=1; a=rsa-sha256; cv=none; d=sender.test; s=sel; b=x\r\nFrom: a@sender.test\r\n\r\nbody\r\n');
    expect(authenticationInput(arc)).toBe(arc);
    // A signature field folded into another field's value is not a field: that message is cut.
    const folded = Buffer.from('From: a@sender.test\r\nX-Note: see\r\n DKIM-Signature: none\r\n\r\nbody\r\n');
    expect(authenticationInput(folded).toString()).toBe('From: a@sender.test\r\nX-Note: see\r\n DKIM-Signature: none\r\n\r\n');

    const authenticator = createMailauthAuthenticator({ resolve: createDnsResolver([dns.address]), hostname: 'mx.mailroom.test' });
    expect((await authenticator.check(signed, CONTEXT)).summary).toEqual({ spf: 'pass', dkim: 'pass', dmarc: 'pass' });
    const tampered = Buffer.from(signed.toString('latin1').replace('the body that is signed', 'the body that was changed'), 'latin1');
    expect((await authenticator.check(tampered, CONTEXT)).summary.dkim).toBe('fail');
  });
});
