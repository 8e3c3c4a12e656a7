import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { generateSecret, secretProblem, signatureHeader } from './signing.js';

const key = (bytes: number, fill = 1) => `whsec_${Buffer.alloc(bytes, fill).toString('base64')}`;

describe('webhook secrets', () => {
  it.each([
    [key(24), null],
    [key(64), null],
    [key(32), null],
    ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', null], // the Standard Webhooks example key
    [key(23), "the secret's key must be 24–64 bytes once decoded (it is 23)"],
    [key(65), "the secret's key must be 24–64 bytes once decoded (it is 65)"],
    ['MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'the secret must start with whsec_'],
    ['WHSEC_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'the secret must start with whsec_'],
    ['whsec_', "the secret's key must be 24–64 bytes once decoded (it is 0)"],
    ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS', 'the secret must be whsec_ followed by standard base64'],
    ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS-', 'the secret must be whsec_ followed by standard base64'],
    ['whsec_MfKQ9r8GKYqr TwjUPD8ILPZIo2LaLaSw', 'the secret must be whsec_ followed by standard base64'],
  ])('%s → %s', (secret, problem) => {
    expect(secretProblem(secret)).toBe(problem);
  });

  it('generates whsec_ + base64 of 24 random bytes, different each time', () => {
    const a = generateSecret();
    expect(secretProblem(a)).toBeNull();
    expect(Buffer.from(a.slice(6), 'base64')).toHaveLength(24);
    expect(generateSecret()).not.toBe(a);
  });
});

describe('webhook-signature', () => {
  const body = '{"event_id":"evt_1","data":{"ünï":"code"}}';
  const timestamp = Math.floor(Date.now() / 1000);

  it('is what the standardwebhooks package computes and verifies', () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const header = signatureHeader([secret], 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}');
    // The Standard Webhooks specification's own example.
    expect(header).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
    const headers = { 'webhook-id': 'evt_1', 'webhook-timestamp': String(timestamp), 'webhook-signature': signatureHeader([secret], 'evt_1', timestamp, body) };
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  });

  it('lists one signature per secret, space-separated; a receiver holding any of them verifies', () => {
    const secrets = [key(24, 1), key(32, 2), key(64, 3)];
    const header = signatureHeader(secrets, 'evt_1', timestamp, body);
    expect(header.split(' ')).toHaveLength(3);
    const headers = { 'webhook-id': 'evt_1', 'webhook-timestamp': String(timestamp), 'webhook-signature': header };
    for (const secret of secrets) expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(key(24, 9)).verify(body, headers)).toThrow();
    expect(signatureHeader([], 'evt_1', timestamp, body)).toBe('');
  });
});
