import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIALECT } from './helpers/database.js';
import { createTenant, errorOf, memberSession } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';
import { webhookApi } from './helpers/webhooks.js';

/**
 * The webhook address rules at creation and update, through the API,
 * with host names answered by a real DNS server on loopback (MAILROOM_DNS_SERVERS). Each refusal is
 * 400 invalid_webhook_url and its detail names what was refused. The same rules run again before
 * every delivery attempt (webhooks-delivery.test.ts).
 */

/** [url, what the detail must contain] — every one refused. */
const REFUSED: Array<[string, string]> = [
  // Loopback in every spelling the URL parser turns into 127.0.0.1.
  ['http://127.0.0.1/', '127.0.0.1 is a loopback address'],
  ['http://2130706433/', '127.0.0.1 is a loopback address'],
  ['http://0177.0.0.1/', '127.0.0.1 is a loopback address'],
  ['http://0x7f.1/', '127.0.0.1 is a loopback address'],
  ['http://127.1/', '127.0.0.1 is a loopback address'],
  ['http://0x7f000001:8080/hook', '127.0.0.1 is a loopback address'],
  ['http://127.255.255.254/', 'loopback'],
  ['http://[::1]/', '::1 is a loopback address'],
  // IPv6 forms carrying IPv4.
  ['http://[::ffff:127.0.0.1]/', '::ffff:7f00:1 is a loopback address'],
  ['http://[::ffff:7f00:1]/', '::ffff:7f00:1 is a loopback address'],
  ['https://[::ffff:a9fe:a9fe]/', 'link-local'],
  ['http://[::ffff:10.0.0.1]/', 'private'],
  ['http://[::127.0.0.1]/', 'IPv4-compatible'],
  ['http://[::8.8.8.8]/', 'IPv4-compatible'],
  ['http://[64:ff9b::7f00:1]/', 'NAT64'],
  ['http://[64:ff9b::808:808]/', 'NAT64'],
  ['http://[64:ff9b:1::1]/', 'NAT64'],
  ['http://[2002:7f00:1::1]/', '6to4'],
  ['http://[2002::]/', '6to4'],
  ['http://[2001::1]/', 'Teredo'],
  ['http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', 'Teredo'],
  // Cloud metadata, private, shared and special-purpose IPv4.
  ['http://169.254.169.254/latest/meta-data/', '169.254.169.254 is a link-local address'],
  ['http://10.0.0.1/', 'private'],
  ['http://172.16.5.4/', 'private'],
  ['http://172.31.255.255/', 'private'],
  ['http://192.168.1.1/', 'private'],
  ['http://100.64.0.1/', 'carrier-grade NAT'],
  ['http://100.127.255.254/', 'carrier-grade NAT'],
  ['http://198.18.0.1/', 'benchmarking'],
  ['http://198.19.255.254/', 'benchmarking'],
  ['http://192.0.2.1/', 'documentation'],
  ['http://198.51.100.7/', 'documentation'],
  ['http://203.0.113.9/', 'documentation'],
  ['http://192.0.0.8/', 'IETF protocol assignment'],
  ['http://224.0.0.1/', 'multicast'],
  ['http://239.255.255.250/', 'multicast'],
  ['http://240.0.0.1/', 'reserved'],
  ['http://255.255.255.255/', 'broadcast'],
  ['http://0.0.0.0/', 'unspecified'],
  ['http://0/', '0.0.0.0 is an unspecified address'],
  ['http://0.1.2.3/', 'unspecified'],
  // Special-purpose IPv6.
  ['http://[::]/', 'unspecified'],
  ['http://[fd00::1]/', 'unique-local'],
  ['http://[fc00::1]/', 'unique-local'],
  ['http://[fe80::1]/', 'link-local'],
  ['http://[fec0::1]/', 'site-local'],
  ['http://[ff02::1]/', 'multicast'],
  ['http://[2001:db8::1]/', 'documentation'],
  ['http://[3fff::1]/', 'documentation'],
  ['http://[2001:2::1]/', 'benchmarking'],
  ['http://[100::1]/', 'discard'],
  ['http://[5f00::1]/', 'segment-routing'],
  ['http://[4000::1]/', 'not a global unicast address'],
  // Host names: every answer (A and AAAA) must pass.
  ['http://private.test/', 'private.test resolves to 10.0.0.5, a private address'],
  ['http://metadata.test/', 'metadata.test resolves to 169.254.169.254, a link-local address'],
  ['http://mixed.test/', 'mixed.test resolves to 192.168.7.7, a private address'],
  ['http://v6private.test/', 'v6private.test resolves to fd00::1, a unique-local address'],
  ['http://v6mapped.test/', 'v6mapped.test resolves to ::ffff:127.0.0.1, a loopback address'],
  ['http://v6nat64.test/', 'NAT64'],
  ['http://cgnat.test/', 'carrier-grade NAT'],
  ['http://Private.Test./', '10.0.0.5'],
  ['http://nowhere.test/', 'nowhere.test does not resolve to any address'],
  ['http://localhost:8080/', 'localhost resolves to 127.0.0.1, a loopback address'],
  ['http://api.localhost/', 'loopback'],
  // Form: scheme, credentials, shape.
  ['ftp://93.184.216.34/', 'the scheme must be http or https'],
  ['file:///etc/passwd', 'the scheme must be http or https'],
  ['gopher://93.184.216.34:70/', 'the scheme must be http or https'],
  ['javascript:alert(1)', 'the scheme must be http or https'],
  ['ws://93.184.216.34/', 'the scheme must be http or https'],
  ['http://user:pass@93.184.216.34/', 'credentials'],
  ['https://user@public.test/', 'credentials'],
  ['https://:secret@public.test/', 'credentials'],
  ['not a url', 'is not an absolute URL'],
  ['/relative/path', 'is not an absolute URL'],
  ['http://[::1/', 'is not an absolute URL'],
];

/** Public destinations: accepted. */
const ACCEPTED: string[] = [
  'https://93.184.216.34/hook',
  'http://8.8.8.8:8080/x?y=1',
  'https://[2606:4700:4700::1111]/',
  'http://[::ffff:8.8.8.8]/',
  'https://public.test/webhooks',
  'https://public6.test/',
  'https://dual.test:8443/path',
];

describe(`webhook address rules at create and update (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let api: ReturnType<typeof webhookApi>;

  beforeAll(async () => {
    h = await startMailHarness();
    h.dns.set('private.test', { A: ['10.0.0.5'] });
    h.dns.set('metadata.test', { A: ['169.254.169.254'] });
    h.dns.set('mixed.test', { A: ['93.184.216.34', '192.168.7.7'] });
    h.dns.set('v6private.test', { A: ['93.184.216.34'], AAAA: ['fd00::1'] });
    // dns2 encodes only hexadecimal groups; this is ::ffff:127.0.0.1.
    h.dns.set('v6mapped.test', { AAAA: ['::ffff:7f00:1'] });
    h.dns.set('v6nat64.test', { AAAA: ['64:ff9b::a00:1'] });
    h.dns.set('cgnat.test', { A: ['100.100.100.100'] });
    h.dns.set('public.test', { A: ['93.184.216.34'] });
    h.dns.set('public6.test', { AAAA: ['2606:4700:4700::1111'] });
    h.dns.set('dual.test', { A: ['1.1.1.1'], AAAA: ['2606:4700:4700::1001'] });
    const tenant = await createTenant(h);
    api = webhookApi(h, (await memberSession(h, tenant.workspaceId, 'member')).token);
  });
  afterAll(async () => {
    await h.services.webhooks.close();
    await h.close();
  });

  it(`refuses ${REFUSED.length} URLs with 400 invalid_webhook_url naming the refused address`, async () => {
    expect(REFUSED.length).toBeGreaterThanOrEqual(40);
    const failures: string[] = [];
    for (const [url, detail] of REFUSED) {
      const res = await api.create({ url });
      if (res.statusCode !== 400) {
        failures.push(`${url}: ${res.statusCode} ${res.body}`);
        continue;
      }
      const error = errorOf(res);
      if (error.error !== 'invalid_webhook_url' || !error.detail.includes(detail)) failures.push(`${url}: ${error.error} '${error.detail}' lacks '${detail}'`);
    }
    expect(failures).toEqual([]);
    expect((await api.list()).json()).toEqual({ webhooks: [] });
  });

  it('accepts public destinations (IP literals and names whose every answer is public)', async () => {
    for (const url of ACCEPTED) {
      const res = await api.create({ url });
      expect(res.statusCode, `${url}: ${res.body}`).toBe(201);
    }
  });

  it('looks host names up through MAILROOM_DNS_SERVERS, A and AAAA, afresh each time', async () => {
    const before = h.dns.queries.filter((q) => q.name === 'public.test').length;
    await api.create({ url: 'https://public.test/again' });
    await api.create({ url: 'https://public.test/and-again' });
    const asked = h.dns.queries.filter((q) => q.name === 'public.test').slice(before);
    // Two checks, each asking A (1) and AAAA (28): no cache between them.
    expect(asked.map((q) => q.type).sort()).toEqual([1, 1, 28, 28]);
    // The answer changes: the next check sees it.
    h.dns.set('flip.test', { A: ['93.184.216.34'] });
    const created = await api.add({ url: 'https://flip.test/' });
    h.dns.set('flip.test', { A: ['10.9.9.9'] });
    expect(errorOf(await api.patch(created.webhook_id, { url: 'https://flip.test/other' }))).toMatchObject({ status: 400, error: 'invalid_webhook_url' });
    expect(errorOf(await api.create({ url: 'https://flip.test/' })).detail).toContain('10.9.9.9');
  });

  it('checks a changed URL at update and leaves the endpoint as it was when refused', async () => {
    const created = await api.add({ url: 'https://public.test/keep' });
    for (const [url, detail] of REFUSED.slice(0, 12)) {
      const res = errorOf(await api.patch(created.webhook_id, { url }));
      expect(res, url).toMatchObject({ status: 400, error: 'invalid_webhook_url' });
      expect(res.detail).toContain(detail);
    }
    expect((await api.get(created.webhook_id)).json<{ url: string }>().url).toBe('https://public.test/keep');
  });
});

describe(`MAILROOM_WEBHOOK_ALLOW_CIDRS is the only way around the address rules (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let api: ReturnType<typeof webhookApi>;

  beforeAll(async () => {
    h = await startMailHarness({ MAILROOM_WEBHOOK_ALLOW_CIDRS: '10.20.0.0/16,fd12::/16' });
    h.dns.set('intranet.test', { A: ['10.20.1.2'] });
    h.dns.set('half.test', { A: ['10.20.1.2', '10.30.1.2'] });
    const tenant = await createTenant(h);
    api = webhookApi(h, (await memberSession(h, tenant.workspaceId, 'admin')).token);
  });
  afterAll(async () => {
    await h.services.webhooks.close();
    await h.close();
  });

  it('exempts exactly the listed networks, in every form, and nothing else', async () => {
    for (const url of ['http://10.20.0.1/', 'http://[::ffff:10.20.3.4]/', 'http://intranet.test/', 'http://[fd12::1]/']) {
      expect((await api.create({ url })).statusCode, url).toBe(201);
    }
    for (const [url, detail] of [
      ['http://10.30.0.1/', '10.30.0.1 is a private address'],
      ['http://half.test/', 'half.test resolves to 10.30.1.2'],
      ['http://127.0.0.1/', 'loopback'],
      ['http://[fd13::1]/', 'unique-local'],
      // The form rules still apply to an exempted address.
      ['http://user:pw@10.20.0.1/', 'credentials'],
      ['ftp://10.20.0.1/', 'scheme'],
    ] as const) {
      const res = errorOf(await api.create({ url }));
      expect(res, url).toMatchObject({ status: 400, error: 'invalid_webhook_url' });
      expect(res.detail).toContain(detail);
    }
  });
});
