import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, errorOf, memberSession, session, startHarness, type Harness, type Tenant } from './helpers/harness.js';

interface Signature {
  mailbox: string;
  html: string;
  updated_at: string;
}
interface Contact {
  address: string;
  name: string | null;
}

const SUPPORT = 'helpdesk@mailroom.localhost';
const SALES = 'orders@mailroom.localhost';
const THEIRS = 'theirs@mailroom.localhost';

describe(`composing aids: signatures and address completion (${TEST_DIALECT})`, () => {
  let h: Harness;
  let acme: Tenant;
  let other: Tenant;
  let member: string;
  let outsider: string;

  beforeAll(async () => {
    h = await startHarness();
    acme = await createTenant(h, 'Acme');
    other = await createTenant(h, 'Other');
    for (const address of [SUPPORT, SALES]) await h.app.inject({ method: 'POST', url: `/mailboxes?address=${address}`, headers: bearer(acme.apiKey) });
    await h.app.inject({ method: 'POST', url: `/mailboxes?address=${THEIRS}`, headers: bearer(other.apiKey) });
    member = (await memberSession(h, acme.workspaceId, 'member')).token;
    outsider = (await memberSession(h, other.workspaceId, 'member')).token;
  });
  afterAll(async () => h.close());

  const call = (method: 'GET' | 'PUT', url: string, token: string, payload?: unknown) =>
    h.app.inject({ method, url: `/app/api${url}`, headers: session(token), ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }) });
  const send = async (tenant: Tenant, payload: Record<string, unknown>) => {
    const res = await h.app.inject({ method: 'POST', url: '/send', headers: bearer(tenant.apiKey), payload: { subject: 'Hi', body: 'Hello', ...payload } });
    expect(res.statusCode, res.body).toBe(202);
  };
  const contacts = async (q: string, token = member): Promise<string[]> => {
    const res = await call('GET', `/contacts?q=${encodeURIComponent(q)}`, token);
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ contacts: Contact[] }>().contacts.map((c) => c.address);
  };

  it('sets, lists, replaces and removes a mailbox signature, per workspace', async () => {
    expect((await call('GET', '/signatures', member)).json()).toEqual({ signatures: [] });
    const set = await call('PUT', `/signatures/${SUPPORT.toUpperCase()}`, member, { html: '<p>Acme Support<br>+1 555 0100</p>' });
    expect(set.statusCode, set.body).toBe(200);
    expect(set.json()).toEqual({ mailbox: SUPPORT, html: '<p>Acme Support<br>+1 555 0100</p>', updated_at: new Date(h.clock.now()).toISOString() });
    await call('PUT', `/signatures/${SALES}`, member, { html: '<p>Sales</p>' });
    const list = (await call('GET', '/signatures', member)).json<{ signatures: Signature[] }>().signatures;
    expect(list.map((s) => [s.mailbox, s.html])).toEqual([[SUPPORT, '<p>Acme Support<br>+1 555 0100</p>'], [SALES, '<p>Sales</p>']]);
    // The other workspace sees none of them and cannot set one on acme's mailbox.
    expect((await call('GET', '/signatures', outsider)).json()).toEqual({ signatures: [] });
    expect(errorOf(await call('PUT', `/signatures/${SUPPORT}`, outsider, { html: '<p>x</p>' }))).toMatchObject({ status: 404, error: 'mailbox_not_found' });
    expect((await call('GET', '/signatures', member)).json<{ signatures: Signature[] }>().signatures[0]?.html).toBe('<p>Acme Support<br>+1 555 0100</p>');
    const removed = await call('PUT', `/signatures/${SALES}`, member, { html: '  ' });
    expect(removed.json<Signature>().html).toBe('');
    expect((await call('GET', '/signatures', member)).json<{ signatures: Signature[] }>().signatures.map((s) => s.mailbox)).toEqual([SUPPORT]);
  });

  it('refuses a bad signature request with a 4xx', async () => {
    expect(errorOf(await call('PUT', `/signatures/${SUPPORT}`, member, {}))).toMatchObject({ status: 400, error: 'invalid_request', detail: "body is missing the required field 'html'" });
    expect(errorOf(await call('PUT', `/signatures/${SUPPORT}`, member, { html: 'x'.repeat(10_001) }))).toMatchObject({ status: 400, error: 'invalid_request' });
    expect(errorOf(await call('PUT', `/signatures/${SUPPORT}`, member, { html: 'x', text: 'y' }))).toMatchObject({ status: 400, error: 'invalid_request' });
    expect(errorOf(await call('PUT', '/signatures/nobody@mailroom.localhost', member, { html: 'x' }))).toMatchObject({ status: 404, error: 'mailbox_not_found' });
    expect(errorOf(await call('PUT', '/signatures/not-an-address', member, { html: 'x' }))).toMatchObject({ status: 404, error: 'mailbox_not_found' });
    expect((await h.app.inject({ method: 'GET', url: '/app/api/signatures' })).statusCode).toBe(401);
  });

  it("completes addresses the workspace mailed with, and never another workspace's", async () => {
    await send(acme, { from_mailbox: SUPPORT, to: 'Alice Liddell <alice@example.com>', cc: 'ali.baba@example.org' });
    await send(acme, { from_mailbox: SALES, to: 'zed@example.net' });
    await send(other, { from_mailbox: THEIRS, to: 'alicia.other@example.com, bob@example.com' });
    expect(await contacts('ali')).toEqual(['alice@example.com', 'ali.baba@example.org']);
    expect(await contacts('ALI')).toEqual(['alice@example.com', 'ali.baba@example.org']);
    // A word of the local part starts it too.
    expect(await contacts('baba')).toEqual(['ali.baba@example.org']);
    expect(await contacts('z')).toEqual(['zed@example.net']);
    // The other workspace's recipients, and acme's own mailboxes, are never offered.
    expect(await contacts('bob')).toEqual([]);
    expect(await contacts('alicia')).toEqual([]);
    expect(await contacts('helpdesk')).toEqual([]);
    expect(await contacts('ali', outsider)).toEqual(['alicia.other@example.com']);
    const limited = await call('GET', '/contacts?q=ali&limit=1', member);
    expect(limited.json<{ contacts: Contact[] }>().contacts).toHaveLength(1);
  });

  it('refuses a bad completion request with a 4xx', async () => {
    expect(errorOf(await call('GET', '/contacts', member))).toMatchObject({ status: 400, error: 'invalid_request' });
    expect(errorOf(await call('GET', '/contacts?q=', member))).toMatchObject({ status: 400, error: 'invalid_request' });
    expect(errorOf(await call('GET', '/contacts?q=a&limit=21', member))).toMatchObject({ status: 400, error: 'invalid_request' });
    expect(errorOf(await call('GET', '/contacts?q=a&colour=red', member))).toMatchObject({ status: 400, error: 'invalid_request' });
  });
});
