import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, errorOf, memberSession, session, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';
import { recordEvents, type RecordedEvents } from './helpers/world.js';

interface Created {
  domain_id: string;
  domain: string;
  status: string;
  dkim: { selector: string; record_name: string; record_type: string; record_value: string };
  verification: { record_name: string; record_type: string; record_value: string };
}

describe(`sending domains (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  /** Events the service emits, recorded through its events service. */
  let recorded: RecordedEvents;
  let acme: Tenant;
  let other: Tenant;
  let owner: string;
  let admin: string;
  let member: string;
  let otherOwner: string;

  beforeAll(async () => {
    h = await startMailHarness();
    recorded = recordEvents(h.services);
    acme = await createTenant(h, 'Acme');
    other = await createTenant(h, 'Other');
    owner = (await memberSession(h, acme.workspaceId, 'owner')).token;
    admin = (await memberSession(h, acme.workspaceId, 'admin')).token;
    member = (await memberSession(h, acme.workspaceId, 'member')).token;
    otherOwner = (await memberSession(h, other.workspaceId, 'owner')).token;
  });
  afterAll(async () => h.close());

  const create = (token: string, domain: string) => h.app.inject({ method: 'POST', url: '/app/api/sending-domains', headers: session(token), payload: { domain } });

  it('creates a domain with its DKIM record and shows the verification token only once, stored hashed', async () => {
    const res = await create(owner, 'Example.COM');
    expect(res.statusCode).toBe(201);
    const body = res.json<Created>();
    expect(body).toMatchObject({ domain: 'example.com', status: 'pending', verified_at: null });
    expect(body.domain_id).toMatch(/^dom_/);
    expect(body.verification.record_name).toBe('_mailroom-verification.example.com');
    expect(body.verification.record_value).toMatch(/^mailroom-verification=[\w-]{20,}$/);
    expect(body.dkim.record_name).toBe(`${body.dkim.selector}._domainkey.example.com`);
    expect(body.dkim.record_value).toMatch(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]{300,}$/);

    const token = body.verification.record_value.split('=')[1]!;
    const list = await h.app.inject({ method: 'GET', url: '/app/api/sending-domains', headers: session(admin) });
    expect(list.statusCode).toBe(200);
    expect(list.body).not.toContain(token);
    expect(list.body).not.toContain('verification');
    const one = await h.app.inject({ method: 'GET', url: `/app/api/sending-domains/${body.domain_id}`, headers: session(admin) });
    expect(one.body).not.toContain(token);
    const rows = await h.services.database.db.selectFrom('sending_domains').select('verification_hash').execute();
    for (const row of rows) expect(row.verification_hash).not.toContain(token);

    expect(errorOf(await create(owner, 'example.com'))).toMatchObject({ status: 409, error: 'domain_exists' });
    for (const bad of ['not a domain', 'localhost', '-x.example', 'mailroom.localhost']) {
      expect(errorOf(await create(owner, bad)), bad).toMatchObject({ status: 400, error: 'invalid_domain' });
    }
  });

  it('refuses members and other tenants', async () => {
    expect(errorOf(await create(member, 'member.example'))).toMatchObject({ status: 403, error: 'forbidden_role' });
    expect(errorOf(await h.app.inject({ method: 'GET', url: '/app/api/sending-domains', headers: session(member) }))).toMatchObject({ status: 403, error: 'forbidden_role' });
    const created = (await create(owner, 'private.example')).json<Created>();
    for (const [method, url] of [
      ['GET', `/app/api/sending-domains/${created.domain_id}`],
      ['POST', `/app/api/sending-domains/${created.domain_id}/verify`],
    ] as const) {
      expect(errorOf(await h.app.inject({ method, url, headers: session(otherOwner) }))).toMatchObject({ status: 404, error: 'domain_not_found' });
      expect(errorOf(await h.app.inject({ method, url, headers: session(member) }))).toMatchObject({ status: 403 });
      expect((await h.app.inject({ method, url })).statusCode).toBe(401);
    }
    const otherList = await h.app.inject({ method: 'GET', url: '/app/api/sending-domains', headers: session(otherOwner) });
    expect(otherList.json()).toEqual({ sending_domains: [] });
    // An API key is no session.
    expect((await h.app.inject({ method: 'GET', url: '/app/api/sending-domains', headers: bearer(acme.apiKey) })).statusCode).toBe(401);
  });

  it('verifies over DNS only when the TXT record matches, emits domain.verified once, and opens the domain to mailboxes', async () => {
    const created = (await create(admin, 'verify-me.example')).json<Created>();
    const verify = () => h.app.inject({ method: 'POST', url: `/app/api/sending-domains/${created.domain_id}/verify`, headers: session(admin) });
    // No record yet, then a wrong one.
    expect((await verify()).json()).toMatchObject({ status: 'pending' });
    h.dns.set('_mailroom-verification.verify-me.example', { TXT: ['v=spf1 -all', 'mailroom-verification=wrong-token'] });
    expect((await verify()).json()).toMatchObject({ status: 'pending' });
    expect(errorOf(await h.app.inject({ method: 'POST', url: '/mailboxes?address=hello@verify-me.example', headers: bearer(acme.apiKey) }))).toMatchObject({ status: 400, error: 'domain_not_allowed' });

    h.dns.set('_mailroom-verification.verify-me.example', { TXT: ['v=spf1 -all', created.verification.record_value] });
    const verified = await verify();
    expect(verified.statusCode).toBe(200);
    expect(verified.json()).toMatchObject({ domain_id: created.domain_id, status: 'verified', verified_at: new Date(h.clock.now()).toISOString() });
    expect((await verify()).json()).toMatchObject({ status: 'verified' });

    const events = recorded.events('domain.verified');
    expect(events).toHaveLength(1);
    expect(events[0]!.workspace_id).toBe(acme.workspaceId);
    expect(events[0]).toMatchObject({ event_type: 'domain.verified', data: { domain_id: created.domain_id, domain: 'verify-me.example', status: 'verified' } });

    expect((await h.app.inject({ method: 'POST', url: '/mailboxes?address=hello@verify-me.example', headers: bearer(acme.apiKey) })).statusCode).toBe(201);
    // Another workspace does not gain the domain.
    expect(errorOf(await h.app.inject({ method: 'POST', url: '/mailboxes?address=x@verify-me.example', headers: bearer(other.apiKey) }))).toMatchObject({ status: 400, error: 'domain_not_allowed' });
  });
});
