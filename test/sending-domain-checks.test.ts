import { authenticate } from 'mailauth';
import { asWork } from '../src/db/tables.js';
import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { createDnsResolver } from '../src/lib/dns.js';
import { createMailboxStore } from '../src/modules/mail/mailbox.store.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, errorOf, memberSession, session, type Tenant } from './helpers/harness.js';
import type { MailHarness } from './helpers/mail.js';
import type { SmtpPeer } from './helpers/smtp-peer.js';
import { mailWorld } from './helpers/world.js';

interface DnsRecord {
  record_name: string;
  record_type: string;
  record_value: string;
}
interface Domain {
  domain_id: string;
  domain: string;
  status: string;
  dkim: DnsRecord & { selector: string };
  spf: DnsRecord;
  verification?: DnsRecord;
}
interface Check {
  record_name: string;
  record_type: string;
  expected: string;
  found: string[] | null;
  status: string;
  reason: string;
}
interface Checked extends Domain {
  checks: { verification: Check; dkim: Check; spf: Check };
  summary: string;
}

/** The return-path domain: the first of MAILROOM_HOSTED_DOMAINS in the test service. */
const RETURN_PATH = 'mailroom.localhost';

describe(`sending domains tell what is wrong, are deleted and show their records again (${TEST_DIALECT})`, () => {
  const world = mailWorld();
  let h: MailHarness;
  let peer: SmtpPeer;
  let acme: Tenant;
  let owner: string;
  let otherOwner: string;

  beforeAll(async () => {
    ({ h, peer } = world);
    acme = await world.tenant('Acme');
    owner = (await memberSession(h, acme.workspaceId, 'owner')).token;
    otherOwner = (await memberSession(h, (await world.tenant('Other')).workspaceId, 'owner')).token;
  });

  const call = (method: 'GET' | 'POST' | 'DELETE', url: string, token = owner) => h.app.inject({ method, url, headers: session(token) });
  const create = async (domain: string): Promise<Domain> => {
    const res = await h.app.inject({ method: 'POST', url: '/app/api/sending-domains', headers: session(owner), payload: { domain } });
    expect(res.statusCode, res.body).toBe(201);
    return res.json<Domain>();
  };
  const verify = async (d: Domain): Promise<Checked> => {
    const res = await call('POST', `/app/api/sending-domains/${d.domain_id}/verify`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json<Checked>();
  };
  const publish = (name: string, ...txt: string[]) => h.dns.set(name, { TXT: txt });

  it('answers every record with found, expected, status and reason: missing, then mismatch, then ok', async () => {
    const d = await create('checks.example');
    expect(d.spf).toEqual({ record_name: 'checks.example', record_type: 'TXT', record_value: `v=spf1 include:${RETURN_PATH} ~all` });

    const nothing = await verify(d);
    expect(nothing.status).toBe('pending');
    expect(nothing.checks.verification).toMatchObject({
      record_name: '_mailroom-verification.checks.example',
      record_type: 'TXT',
      found: null,
      status: 'missing',
      reason: 'no TXT record at _mailroom-verification.checks.example yet: publish it (a new record can take a while to show in DNS)',
    });
    expect(nothing.checks.verification.expected).toMatch(/^mailroom-verification=</);
    expect(nothing.checks.dkim).toMatchObject({ record_name: d.dkim.record_name, expected: d.dkim.record_value, found: null, status: 'missing' });
    expect(nothing.checks.spf).toMatchObject({ record_name: 'checks.example', expected: d.spf.record_value, found: null, status: 'missing' });
    expect(nothing.checks.spf.reason).toContain(`Not required: Mailroom's envelope sender is bounces+…@${RETURN_PATH}`);
    expect(nothing.summary).toBe('checks.example is pending: the verification record is not published yet; DKIM: missing');

    // Wrong values everywhere: another token, another key, an SPF record without the return-path domain.
    publish('_mailroom-verification.checks.example', 'mailroom-verification=not-the-token');
    publish(d.dkim.record_name, 'v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAother');
    publish('checks.example', 'v=spf1 include:_spf.elsewhere.example -all', 'some-site-verification=1');
    const wrong = await verify(d);
    expect(wrong.status).toBe('pending');
    expect(wrong.checks.verification).toMatchObject({ found: ['mailroom-verification=not-the-token'], status: 'mismatch' });
    expect(wrong.checks.verification.reason).toMatch(/holds another token/);
    expect(wrong.checks.dkim).toMatchObject({ found: ['v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAother'], status: 'mismatch' });
    expect(wrong.checks.dkim.reason).toMatch(/another public key/);
    expect(wrong.checks.spf).toMatchObject({ found: ['v=spf1 include:_spf.elsewhere.example -all'], status: 'mismatch' });
    expect(wrong.checks.spf.reason).toMatch(`does not include ${RETURN_PATH}`);
    expect(wrong.summary).toBe("checks.example is pending: the verification record does not hold this domain's token; DKIM: mismatch");

    // A broken DNS server for the DKIM name is an error, not "missing".
    h.dns.set(d.dkim.record_name, { SERVFAIL: true });
    expect((await verify(d)).checks.dkim).toMatchObject({ found: null, status: 'error' });

    publish('_mailroom-verification.checks.example', 'v=spf1 -all', d.verification!.record_value);
    publish(d.dkim.record_name, d.dkim.record_value);
    publish('checks.example', `v=spf1 include:${RETURN_PATH} ~all`);
    const ok = await verify(d);
    expect(ok.status).toBe('verified');
    expect(ok.checks.verification).toMatchObject({ found: ['v=spf1 -all', d.verification!.record_value], status: 'ok', reason: "the record holds this domain's token: the domain is verified" });
    expect(ok.checks.dkim).toMatchObject({ found: [d.dkim.record_value], status: 'ok' });
    expect(ok.checks.spf).toMatchObject({ found: [`v=spf1 include:${RETURN_PATH} ~all`], status: 'ok' });
    expect(ok.summary).toBe('checks.example is verified and its DKIM record is published');

    // Verified stays verified; the verification record is not looked up any more.
    h.dns.zones.delete('_mailroom-verification.checks.example');
    const later = await verify(d);
    expect(later).toMatchObject({ status: 'verified', checks: { verification: { status: 'ok', found: null } } });
    expect(later.checks.verification.reason).toMatch(/^verified 20.*may be removed$/);
  });

  it('says a verified domain still lacks its DKIM record, and signs its mail all the same', async () => {
    const d = await create('nodkim.example');
    publish('_mailroom-verification.nodkim.example', d.verification!.record_value);
    const checked = await verify(d);
    expect(checked.status).toBe('verified');
    expect(checked.checks.dkim).toMatchObject({ status: 'missing', found: null });
    expect(checked.checks.dkim.reason).toMatch(/^no TXT record at \S+\._domainkey\.nodkim\.example: mail from nodkim\.example is signed with this key all the same/);
    expect(checked.summary).toMatch(/^nodkim\.example is verified, but its DKIM record is missing: mail from it is signed/);

    expect((await h.app.inject({ method: 'POST', url: '/mailboxes?address=hi@nodkim.example', headers: bearer(acme.apiKey) })).statusCode).toBe(201);
    const sent = await h.app.inject({ method: 'POST', url: '/send', headers: bearer(acme.apiKey), payload: { from_mailbox: 'hi@nodkim.example', to: 'x@peer.test', subject: 's', body: 'b' } });
    expect(sent.statusCode, sent.body).toBe(202);
    await expect.poll(() => peer.accepted.find((m) => m.recipients.includes('x@peer.test')), { timeout: 10_000 }).toBeDefined();
    const mail = peer.accepted.find((m) => m.recipients.includes('x@peer.test'))!;
    const dkimOf = async () => {
      const resolver = createDnsResolver([h.dns.address]) as never;
      const verdict = await authenticate(mail.raw, { ip: '127.0.0.1', helo: 'mx.mailroom.test', sender: mail.mailFrom, resolver, disableArc: true, disableBimi: true });
      return (verdict.dkim as { results: Array<{ status: { result: string }; signingDomain: string }> }).results.map((r) => [r.signingDomain, r.status.result]);
    };
    // Signed with the domain's key; without the record no receiver can check it, and with it, the same mail passes.
    const [[domain, result]] = (await dkimOf()) as [[string, string]];
    expect(domain).toBe('nodkim.example');
    expect(result).not.toBe('pass');
    publish(d.dkim.record_name, d.dkim.record_value);
    expect(await dkimOf()).toEqual([['nodkim.example', 'pass']]);
    expect((await verify(d)).checks.dkim.status).toBe('ok');
  });

  it('shows a pending domain its records again with a new token: the old one stops verifying, the new one verifies', async () => {
    const d = await create('again.example');
    const shown = await call('GET', `/app/api/sending-domains/${d.domain_id}`);
    expect(shown.json<Domain>()).toMatchObject({ dkim: d.dkim, spf: d.spf });
    expect(shown.json<Domain>().verification).toBeUndefined();

    const res = await call('POST', `/app/api/sending-domains/${d.domain_id}/records`);
    expect(res.statusCode, res.body).toBe(200);
    const again = res.json<Domain>();
    expect(again).toMatchObject({ domain_id: d.domain_id, status: 'pending', dkim: d.dkim, spf: d.spf, verification: { record_name: '_mailroom-verification.again.example', record_type: 'TXT' } });
    expect(again.verification!.record_value).toMatch(/^mailroom-verification=[\w-]{20,}$/);
    expect(again.verification!.record_value).not.toBe(d.verification!.record_value);

    publish('_mailroom-verification.again.example', d.verification!.record_value);
    expect(await verify(d)).toMatchObject({ status: 'pending', checks: { verification: { status: 'mismatch' } } });
    publish('_mailroom-verification.again.example', again.verification!.record_value);
    expect(await verify(d)).toMatchObject({ status: 'verified', checks: { verification: { status: 'ok' } } });

    // A verified domain needs no verification record: nothing to regenerate.
    expect(errorOf(await call('POST', `/app/api/sending-domains/${d.domain_id}/records`))).toMatchObject({ status: 409, error: 'domain_verified' });
  });

  it('refuses to delete a domain with mailboxes (naming them and their tokens), then deletes it once they are gone', async () => {
    const d = await create('leaving.example');
    publish('_mailroom-verification.leaving.example', d.verification!.record_value);
    expect((await verify(d)).status).toBe('verified');
    for (const address of ['a@leaving.example', 'b@leaving.example', 'd@mailroom.localhost']) {
      await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(acme.apiKey), payload: { address } });
    }
    const token = await h.app.inject({ method: 'POST', url: '/app/api/service-tokens', headers: session(owner), payload: { name: 'codes', domain_id: d.domain_id, mailbox: 'a@leaving.example' } });
    expect(token.statusCode, token.body).toBe(201);
    const tokenId = token.json<{ token_id: string }>().token_id;

    const refused = await call('DELETE', `/app/api/sending-domains/${d.domain_id}`);
    expect(errorOf(refused)).toEqual({
      status: 409,
      error: 'domain_in_use',
      detail: 'leaving.example still has 2 mailboxes (a@leaving.example, b@leaving.example) and 1 service token; delete the mailboxes first (their service tokens go with them)',
    });
    expect(refused.json<{ dependents: unknown }>().dependents).toEqual({
      mailbox_count: 2,
      mailboxes: ['a@leaving.example', 'b@leaving.example'],
      service_token_count: 1,
      service_tokens: [{ token_id: tokenId, name: 'codes' }],
    });
    expect((await call('GET', `/app/api/sending-domains/${d.domain_id}`)).statusCode).toBe(200);

    for (const address of ['a@leaving.example', 'b@leaving.example']) {
      expect((await h.app.inject({ method: 'DELETE', url: `/mailboxes/${address}`, headers: bearer(acme.apiKey) })).statusCode).toBe(200);
    }
    const deleted = await call('DELETE', `/app/api/sending-domains/${d.domain_id}`);
    expect(deleted.statusCode, deleted.body).toBe(200);
    expect(deleted.json()).toEqual({ ok: true, domain_id: d.domain_id, domain: 'leaving.example' });
    expect(errorOf(await call('GET', `/app/api/sending-domains/${d.domain_id}`))).toMatchObject({ status: 404, error: 'domain_not_found' });
    expect(errorOf(await call('DELETE', `/app/api/sending-domains/${d.domain_id}`))).toMatchObject({ status: 404, error: 'domain_not_found' });
    // The token went with its mailbox: neither listed nor found.
    expect((await call('GET', `/app/api/service-tokens/${tokenId}`)).statusCode).toBe(404);
    expect((await call('GET', '/app/api/service-tokens')).body).not.toContain(tokenId);
    // Gone means no mailbox there any more, and the name can be added (and verified) anew.
    expect(errorOf(await h.app.inject({ method: 'POST', url: '/mailboxes?address=e@leaving.example', headers: bearer(acme.apiKey) }))).toMatchObject({ status: 400, error: 'domain_not_allowed' });
    expect((await create('leaving.example')).status).toBe('pending');
  });

  it('makes a delete wait for a mailbox being made in the domain, and then refuse', async () => {
    const d = await create('racing.example');
    publish('_mailroom-verification.racing.example', d.verification!.record_value);
    expect((await verify(d)).status).toBe('verified');
    const db = h.services.database.db;
    let release = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let held = () => {};
    const holding = new Promise<void>((resolve) => (held = resolve));
    // A mailbox being made, as the mailbox service does it: the domain held, then the row, in one transaction.
    const making = db.transaction().execute(async (trx) => {
      expect(await h.services.domains.isAllowedDomain(acme.workspaceId, 'racing.example', asWork(trx), true)).toBe(true);
      held();
      await gate;
      const now = Date.now();
      await createMailboxStore().createMailbox(asWork(trx), { id: 'mbx_racing', workspace_id: acme.workspaceId, address: 'late@racing.example', description: '', created_at: now, updated_at: now });
    });
    await holding;
    const deleting = call('DELETE', `/app/api/sending-domains/${d.domain_id}`);
    if (TEST_DIALECT === 'postgres') {
      // The delete is blocked on the domain's row (without the hold it would already have answered 200).
      await expect
        .poll(async () => (await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`.execute(db)).rows[0]!.n, { timeout: 5000 })
        .toBe(1);
    }
    release();
    await making;
    expect(errorOf(await deleting)).toMatchObject({ status: 409, error: 'domain_in_use' });
  });

  it("answers another workspace's domain 404 on every route, and a member 403", async () => {
    const d = await create('mine-only.example');
    const member = (await memberSession(h, acme.workspaceId, 'member')).token;
    for (const [method, url] of [
      ['GET', `/app/api/sending-domains/${d.domain_id}`],
      ['DELETE', `/app/api/sending-domains/${d.domain_id}`],
      ['POST', `/app/api/sending-domains/${d.domain_id}/verify`],
      ['POST', `/app/api/sending-domains/${d.domain_id}/records`],
    ] as const) {
      expect(errorOf(await call(method, url, otherOwner)), `${method} ${url}`).toMatchObject({ status: 404, error: 'domain_not_found' });
      expect(errorOf(await call(method, url, member)), `${method} ${url}`).toMatchObject({ status: 403, error: 'forbidden_role' });
      expect((await h.app.inject({ method, url })).statusCode).toBe(401);
    }
    // Nothing the other workspace tried changed it.
    expect((await call('GET', `/app/api/sending-domains/${d.domain_id}`)).json<Domain>()).toMatchObject({ domain: 'mine-only.example', status: 'pending' });
    publish('_mailroom-verification.mine-only.example', d.verification!.record_value);
    expect((await verify(d)).status).toBe('verified');
  });
});
