import { createSocket, type Socket } from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDnsResolver } from '../src/lib/dns.js';
import { createMailauthAuthenticator, headerBlockTooLarge, MAX_AUTH_HEADER_BYTES, MAX_AUTH_HEADER_LINES } from '../src/modules/messages/authentication.js';

/** The authentication budget: bounded input to mailauth, and a time limit on the checks. */
describe('authentication budget', () => {
  /** A DNS server on loopback that takes every query and never answers. */
  let silent: Socket;
  let address: string;
  beforeAll(async () => {
    silent = createSocket('udp4');
    await new Promise<void>((resolve) => silent.bind(0, '127.0.0.1', resolve));
    address = `127.0.0.1:${(silent.address()).port}`;
  });
  afterAll(() => silent.close());

  const context = { ip: '192.0.2.7', helo: 'client.test', sender: 'someone@sender.test' };
  const message = (head: string) => Buffer.from(`From: someone@sender.test\r\nTo: desk@mailroom.localhost\r\n${head}Subject: hi\r\n\r\nbody\r\n`);

  it.each([
    ['lines', message(' x\r\n'.repeat(MAX_AUTH_HEADER_LINES)), `header block over ${MAX_AUTH_HEADER_LINES} lines`],
    ['bytes', message(`X-Big: ${'a'.repeat(MAX_AUTH_HEADER_BYTES)}\r\n`), `header block over ${MAX_AUTH_HEADER_BYTES} bytes`],
    ['no end of header', Buffer.from(`X-Big: ${'a'.repeat(MAX_AUTH_HEADER_BYTES)}`), `header block over ${MAX_AUTH_HEADER_BYTES} bytes`],
  ])('does not hand mailauth a header block past its bound in %s', async (_what, raw, why) => {
    expect(headerBlockTooLarge(raw)).toBe(why);
    const auth = await createMailauthAuthenticator({ resolve: createDnsResolver([address]), hostname: 'mx.mailroom.test' }).check(raw, context);
    expect(auth).toMatchObject({ summary: { spf: 'none', dkim: 'none', dmarc: 'none' }, quarantine: true, cutShort: `not checked: ${why}` });
    expect(auth.headerLines).toMatch(/^Authentication-Results: mx\.mailroom\.test;\r\n dkim=none \(not checked/);
  });

  it('passes an ordinary header block', () => {
    expect(headerBlockTooLarge(message('Received: from a\r\n by b\r\n'))).toBeNull();
  });

  it('records temperror when the checks pass their time limit (DNS that never answers)', async () => {
    const authenticator = createMailauthAuthenticator({ resolve: createDnsResolver([address]), hostname: 'mx.mailroom.test', timeLimitMs: 300 });
    const auth = await authenticator.check(message(''), context);
    expect(auth).toMatchObject({ summary: { spf: 'temperror', dkim: 'temperror', dmarc: 'temperror' }, quarantine: true, cutShort: 'not finished within 300 ms' });
  });
});
