import { beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, errorOf, memberSession, session, type Tenant } from './helpers/harness.js';
import type { MailHarness } from './helpers/mail.js';
import { dsn } from './helpers/reports.js';
import type { SmtpPeer } from './helpers/smtp-peer.js';
import { mailWorld } from './helpers/world.js';

interface Check {
  record_name: string;
  record_type: string;
  expected: string;
  found: string[] | null;
  status: string;
  reason: string;
}
interface Domain {
  domain_id: string;
  domain: string;
  status: string;
  return_path_host: string | null;
  return_path_verified_at: string | null;
  return_path_records: { mx: { record_name: string; record_type: string; record_value: string }; spf: { record_name: string; record_type: string; record_value: string } } | null;
  verification?: { record_value: string };
}
interface Checked extends Domain {
  checks: { verification: Check; dkim: Check; spf: Check; return_path_mx?: Check; return_path_spf?: Check };
  summary: string;
}

/** The hosted bounce domain (the first of MAILROOM_HOSTED_DOMAINS) and the inbound host (MAILROOM_SMTP_HOSTNAME) of the test service. */
const HOSTED = 'mailroom.localhost';
const INBOUND = 'mx.mailroom.test';
const HOST = 'bounces.brand.example';
const SPF = `v=spf1 include:${HOSTED} ~all`;

describe(`aligned return paths: a sending domain's own return-path host (${TEST_DIALECT})`, () => {
  const world = mailWorld();
  let h: MailHarness;
  let peer: SmtpPeer;
  let acme: Tenant;
  let owner: string;
  let brand: Domain;

  beforeAll(async () => {
    ({ h, peer } = world);
    acme = await world.tenant('Acme');
    owner = (await memberSession(h, acme.workspaceId, 'owner')).token;
    const res = await h.app.inject({ method: 'POST', url: '/app/api/sending-domains', headers: session(owner), payload: { domain: 'brand.example', return_path_host: 'Bounces.Brand.Example.' } });
    expect(res.statusCode, res.body).toBe(201);
    brand = res.json<Domain>();
    h.dns.set('_mailroom-verification.brand.example', { TXT: [brand.verification!.record_value] });
    expect((await verify(brand)).status).toBe('verified');
    await world.mailbox(acme, 'hello@brand.example');
  });

  const call = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown, token = owner) =>
    h.app.inject({ method, url, headers: session(token), ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }) });
  async function verify(d: Pick<Domain, 'domain_id'>): Promise<Checked> {
    const res = await call('POST', `/app/api/sending-domains/${d.domain_id}/verify`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json<Checked>();
  }
  /** Send from brand.example to `to`, wait until the peer has it, and answer the message and its MAIL FROM. */
  async function sendFromBrand(to: string): Promise<{ id: string; mailFrom: string }> {
    const res = await h.app.inject({ method: 'POST', url: '/send', headers: bearer(acme.apiKey), payload: { from_mailbox: 'hello@brand.example', to, subject: 'Hi', body: 'hello' } });
    expect(res.statusCode, res.body).toBe(202);
    const id = res.json<{ message_id: string }>().message_id;
    const deadline = Date.now() + 15_000;
    while ((await world.message(acme, id))?.status !== 'accepted') {
      if (Date.now() > deadline) throw new Error(`${id} not delivered`);
      await new Promise((r) => setTimeout(r, 25));
    }
    const mail = peer.accepted.find((m) => m.recipients.includes(to));
    if (!mail) throw new Error(`the peer has nothing for ${to}`);
    return { id, mailFrom: mail.mailFrom };
  }
  const publishReturnPath = () => h.dns.set(HOST, { MX: [{ exchange: INBOUND, priority: 10 }], TXT: [SPF] });

  it('is a subdomain of the sending domain, set at create or by PATCH, shown in the view and null when unset', async () => {
    expect(brand).toMatchObject({
      return_path_host: HOST,
      return_path_verified_at: null,
      return_path_records: { mx: { record_name: HOST, record_type: 'MX', record_value: `10 ${INBOUND}` }, spf: { record_name: HOST, record_type: 'TXT', record_value: SPF } },
    });
    for (const bad of ['bounces.elsewhere.example', 'other.example', 'xbrand.example', 'no host', 'plain.example']) {
      const domain = bad === 'other.example' ? 'x.other.example' : 'plain.example';
      const res = await call('POST', '/app/api/sending-domains', { domain, return_path_host: bad });
      expect(res.statusCode, bad).toBe(400);
      expect(errorOf(res).error).toBe('invalid_return_path_host');
    }
    const plain = (await call('POST', '/app/api/sending-domains', { domain: 'plain.example' })).json<Domain>();
    expect(plain).toMatchObject({ return_path_host: null, return_path_verified_at: null, return_path_records: null });
    const wrong = await call('PATCH', `/app/api/sending-domains/${plain.domain_id}`, { return_path_host: 'bounces.brand.example' });
    expect(errorOf(wrong)).toMatchObject({ status: 400, error: 'invalid_return_path_host' });
    expect(errorOf(wrong).detail).toMatch(/subdomain of plain\.example/);
    const set = await call('PATCH', `/app/api/sending-domains/${plain.domain_id}`, { return_path_host: 'rp.plain.example' });
    expect(set.json<Domain>()).toMatchObject({ return_path_host: 'rp.plain.example', return_path_verified_at: null });
    expect((await call('GET', `/app/api/sending-domains/${plain.domain_id}`)).json<Domain>().return_path_host).toBe('rp.plain.example');
    const cleared = await call('PATCH', `/app/api/sending-domains/${plain.domain_id}`, { return_path_host: null });
    expect(cleared.json<Domain>()).toMatchObject({ return_path_host: null, return_path_records: null });
    // Another workspace's domain is not there; a member may not change one.
    const other = (await memberSession(h, (await world.tenant('Other')).workspaceId, 'owner')).token;
    expect((await call('PATCH', `/app/api/sending-domains/${plain.domain_id}`, { return_path_host: 'rp.plain.example' }, other)).statusCode).toBe(404);
    const member = await world.member(acme, 'member');
    expect((await call('PATCH', `/app/api/sending-domains/${plain.domain_id}`, { return_path_host: 'rp.plain.example' }, member)).statusCode).toBe(403);
    expect((await call('PATCH', `/app/api/sending-domains/${plain.domain_id}`, {})).statusCode).toBe(400);
  });

  it('verify checks the MX and SPF at the host; MAIL FROM moves there once both are right, and back when they break', async () => {
    const before = await sendFromBrand('before@peer.test');
    expect(before.mailFrom).toBe(h.services.returnPaths.address(before.id, 0));
    expect(before.mailFrom).toMatch(new RegExp(`^bounces\\+${before.id}\\.0-[0-9a-f]{12}@mailroom\\.localhost$`));

    const missing = await verify(brand);
    expect(missing.checks.return_path_mx).toMatchObject({ record_name: HOST, record_type: 'MX', expected: `10 ${INBOUND}`, found: null, status: 'missing' });
    expect(missing.checks.return_path_spf).toMatchObject({ record_name: HOST, record_type: 'TXT', expected: SPF, found: null, status: 'missing' });
    expect(missing.checks.spf.reason).toContain(`envelope sender at its return-path host ${HOST} once that is verified`);
    expect(missing.return_path_verified_at).toBeNull();
    expect(missing.summary).toMatch(/its return path bounces\.brand\.example is not verified \(MX: missing, SPF: missing\)/);

    h.dns.set(HOST, { MX: [{ exchange: 'mx.elsewhere.example', priority: 10 }], TXT: ['v=spf1 ip4:192.0.2.1 -all'] });
    const wrong = await verify(brand);
    expect(wrong.checks.return_path_mx).toMatchObject({ found: ['10 mx.elsewhere.example'], status: 'mismatch' });
    expect(wrong.checks.return_path_spf).toMatchObject({ found: ['v=spf1 ip4:192.0.2.1 -all'], status: 'mismatch' });
    expect(wrong.return_path_verified_at).toBeNull();

    publishReturnPath();
    const ok = await verify(brand);
    expect(ok.checks.return_path_mx).toMatchObject({ found: [`10 ${INBOUND}`], status: 'ok' });
    expect(ok.checks.return_path_spf).toMatchObject({ found: [SPF], status: 'ok' });
    expect(ok.return_path_verified_at).toEqual(expect.any(String));
    expect(ok.summary).toMatch(/its return path bounces\.brand\.example is verified$/);

    const after = await sendFromBrand('after@peer.test');
    expect(after.mailFrom).toBe(h.services.returnPaths.address(after.id, 0, HOST));
    expect(after.mailFrom).toMatch(new RegExp(`^bounces\\+${after.id}\\.0-[0-9a-f]{12}@bounces\\.brand\\.example$`));
    // The same keyed tag as at the hosted domain: only the host differs.
    expect(after.mailFrom.split('@')[0]).toBe(h.services.returnPaths.address(after.id, 0).split('@')[0]);

    // A DNS failure says nothing about the records: still verified.
    h.dns.set(HOST, { SERVFAIL: true });
    const failing = await verify(brand);
    expect(failing.checks.return_path_mx?.status).toBe('error');
    expect(failing.return_path_verified_at).toBe(ok.return_path_verified_at);

    // The MX gone: no longer verified, and mail goes out with the hosted return path again.
    h.dns.set(HOST, { TXT: [SPF] });
    expect((await verify(brand)).return_path_verified_at).toBeNull();
    const broken = await sendFromBrand('broken@peer.test');
    expect(broken.mailFrom).toBe(h.services.returnPaths.address(broken.id, 0));

    // Back, then a new host: unverified until its own records verify.
    publishReturnPath();
    expect((await verify(brand)).return_path_verified_at).not.toBeNull();
    const moved = (await call('PATCH', `/app/api/sending-domains/${brand.domain_id}`, { return_path_host: 'rp.brand.example' })).json<Domain>();
    expect(moved).toMatchObject({ return_path_host: 'rp.brand.example', return_path_verified_at: null });
    const unverified = await sendFromBrand('moved@peer.test');
    expect(unverified.mailFrom).toBe(h.services.returnPaths.address(unverified.id, 0));
    const back = await call('PATCH', `/app/api/sending-domains/${brand.domain_id}`, { return_path_host: HOST });
    expect(back.json<Domain>().return_path_verified_at).toBeNull();
    expect((await verify(brand)).return_path_verified_at).not.toBeNull();
  });

  it('a DSN sent over SMTP to the return path at the verified host marks the recipient bounced, as at the hosted domain', async () => {
    publishReturnPath();
    expect((await verify(brand)).return_path_verified_at).not.toBeNull();
    const { id, mailFrom } = await sendFromBrand('lost@peer.test');
    expect(mailFrom.endsWith(`@${HOST}`)).toBe(true);
    const info = await h.sendRaw(dsn(mailFrom, 'lost@peer.test'), { from: '', to: [mailFrom] });
    expect(info.response).toMatch(/^250 /);
    const bounced = world.events('message.bounced').filter((e) => e.data.message_id === id);
    expect(bounced).toHaveLength(1);
    expect(bounced[0]).toMatchObject({ workspace_id: acme.workspaceId, data: { recipient: 'lost@peer.test', status_code: '5.1.1' } });
    expect(await world.suppressed(acme, 'lost@peer.test')).toBe(true);

    // A wrong tag at the host is refused as at the hosted domain; the same address at a host nobody verified is no
    // address of ours, as before.
    const tag = /-([0-9a-f]{12})@/.exec(mailFrom)![1]!;
    const forged = mailFrom.replace(`-${tag}@`, `-${tag.endsWith('0') ? `${tag.slice(0, 11)}1` : `${tag.slice(0, 11)}0`}@`);
    await expect(h.sendRaw(dsn(forged, 'lost@peer.test'), { from: '', to: [forged] })).rejects.toMatchObject({ responseCode: 550 });
    for (const elsewhere of [mailFrom.replace(`@${HOST}`, '@rp.brand.example'), mailFrom.replace(`@${HOST}`, '@bounces.unknown.example')]) {
      await expect(h.sendRaw(dsn(elsewhere, 'lost@peer.test'), { from: '', to: [elsewhere] }), elsewhere).rejects.toMatchObject({ responseCode: 550 });
    }
    expect(world.events('message.bounced').filter((e) => e.data.message_id === id)).toHaveLength(1);
  });
});
