import { generateKeyPairSync } from 'node:crypto';
import selfsigned from 'selfsigned';
import { beforeAll, describe, expect, it } from 'vitest';
import { CertificateError, createCertificateHolder, parseCertificatePair, type CertificatePem } from './tls-certificates.js';

const logged: Array<{ level: string; message: string }> = [];
const log = {
  info: (_d: object, message: string) => void logged.push({ level: 'info', message }),
  error: (_d: object, message: string) => void logged.push({ level: 'error', message }),
};

let a: CertificatePem;
let b: CertificatePem;
beforeAll(async () => {
  const make = async (name: string) => {
    const pems = await selfsigned.generate([{ name: 'commonName', value: name }], { notAfterDate: new Date(Date.now() + 86_400_000), keySize: 2048 });
    return { key: pems.private, cert: pems.cert };
  };
  a = await make('a.test');
  b = await make('b.test');
});

describe('parseCertificatePair', () => {
  it('reads what is worth logging of a matching pair', () => {
    const loaded = parseCertificatePair(a, 'a-files');
    expect(loaded.subject).toBe('CN=a.test');
    expect(loaded.subjectAltName).toContain('DNS:a.test');
    expect(loaded.notAfter.getTime()).toBeGreaterThan(Date.now());
    expect(loaded.origin).toBe('a-files');
  });

  it.each([
    ['a key of another certificate', () => ({ key: b.key, cert: a.cert }), /does not belong to the certificate/],
    ['a certificate that does not parse', () => ({ key: a.key, cert: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n' }), /certificate does not parse/],
    ['a key that does not parse', () => ({ key: 'not a key', cert: a.cert }), /private key does not parse/],
    ['an empty certificate file', () => ({ key: a.key, cert: '' }), /certificate does not parse/],
    ['a key of another type', () => ({ key: generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), cert: a.cert }), /does not belong|does not parse/],
  ])('refuses %s', (_name, pair, reason) => {
    expect(() => parseCertificatePair(pair(), 'x')).toThrow(CertificateError);
    expect(() => parseCertificatePair(pair(), 'x')).toThrow(reason);
  });
});

describe('certificate holder', () => {
  it('hands followers each new pair, keeps the old one when offered a bad one, and stops following when told', () => {
    const holder = createCertificateHolder(log);
    expect(holder.current()).toBeNull();
    const seen: string[] = [];
    const stop = holder.follow((pem) => seen.push(pem.cert));
    expect(holder.offer(a, 'a')).toBe(true);
    expect(holder.offer({ key: a.key, cert: b.cert }, 'mixed')).toBe(false);
    expect(holder.current()?.subject).toBe('CN=a.test');
    expect(logged.at(-1)).toEqual({ level: 'error', message: 'TLS certificate not loaded; the previous one stays in use' });
    expect(holder.offer(b, 'b')).toBe(true);
    stop();
    holder.offer(a, 'a');
    expect(seen).toEqual([a.cert, b.cert]);
    let context: unknown = null;
    holder.SNICallback('a.test', (err, ctx) => (context = err ?? ctx));
    expect(context).toBe(holder.secureContext());
  });
});
