import { execFile } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, errorOf, memberSession, session, type Tenant } from './helpers/harness.js';
import type { MailHarness } from './helpers/mail.js';
import type { ReceivedMail, SmtpPeer } from './helpers/smtp-peer.js';
import { dkimpyPython } from './helpers/dkimpy.js';
import { mailWorld } from './helpers/world.js';

/** dkimpy's verdict on each message, the key records answered from the test's own table. */
const VERIFY = String.raw`
import base64, json, sys, dkim
job = json.load(sys.stdin)
def dnsfunc(name, timeout=5):
    txt = job['records'].get(name.decode().rstrip('.').lower())
    return txt.encode() if txt is not None else None
json.dump([{'dkim': bool(dkim.verify(base64.b64decode(b64), dnsfunc=dnsfunc))} for b64 in job['messages']], sys.stdout)
`;

function verifyWithDkimpy(python: string, records: Record<string, string>, messages: Buffer[]): Promise<Array<{ dkim: boolean }>> {
  return new Promise((resolve, reject) => {
    const child = execFile(python, ['-c', VERIFY], { maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`dkimpy: ${stderr || error.message}`));
      else resolve(JSON.parse(stdout) as Array<{ dkim: boolean }>);
    });
    child.stdin!.end(JSON.stringify({ records, messages: messages.map((m) => m.toString('base64')) }));
  });
}

const python = dkimpyPython();
const PUBLIC_URL = 'https://mail.example.test';

/** The header block of a message, unfolded. */
const headerBlock = (raw: Buffer) => raw.toString('latin1').split('\r\n\r\n')[0]!.replace(/\r\n[ \t]+/g, ' ');
const field = (raw: Buffer, name: string) => [...headerBlock(raw).matchAll(new RegExp(`^${name}: ?(.*)$`, 'gim'))].map((m) => m[1]!);
/** The h= tag of the DKIM-Signature, lower-case names. */
const signedFields = (raw: Buffer) =>
  (/\bh=([^;]+)/.exec(field(raw, 'DKIM-Signature')[0] ?? '')?.[1] ?? '')
    .replace(/\s+/g, '')
    .toLowerCase()
    .split(':');

/**
 * One-click unsubscribe (RFC 8058) through the real service: sends delivered over SMTP to a real peer, their DKIM
 * signatures verified by dkimpy, the link used over HTTP and the mailto address over inbound SMTP.
 */
describe.skipIf(python === null)(`one-click unsubscribe (${TEST_DIALECT})${python === null ? ' — skipped: python3-dkim is not installed' : ''}`, { timeout: 60_000 }, () => {
  const world = mailWorld({ env: { MAILROOM_PUBLIC_URL: `${PUBLIC_URL}/` } });
  let h: MailHarness;
  let peer: SmtpPeer;
  let acme: Tenant;
  let owner: string;
  const records: Record<string, string> = {};

  beforeAll(async () => {
    ({ h, peer } = world);
    records['mailroom._domainkey.mailroom.localhost'] = `v=DKIM1; k=rsa; p=${(await h.services.domains.hostedKey()).publicKey}`;
    acme = await world.tenant('Acme', ['letters@mailroom.localhost']);
    owner = (await memberSession(h, acme.workspaceId, 'owner')).token;
  });

  const send = async (payload: Record<string, unknown>) => {
    const res = await h.app.inject({ method: 'POST', url: '/send', headers: bearer(acme.apiKey), payload: { from_mailbox: 'letters@mailroom.localhost', subject: 'News', body: 'Hello', ...payload } });
    expect(res.statusCode, res.body).toBe(202);
    return res.json<{ message_id: string }>().message_id;
  };
  const captured = async (recipient: string): Promise<ReceivedMail> => {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const mail = peer.accepted.find((m) => m.recipients.includes(recipient));
      if (mail) return mail;
      if (Date.now() > deadline) throw new Error(`nothing delivered to ${recipient}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  /** The token of a delivered copy's List-Unsubscribe link, checked against its mailto address. */
  const tokenOf = (mail: ReceivedMail) => {
    const [value] = field(mail.raw, 'List-Unsubscribe');
    const match = /^<https:\/\/mail\.example\.test\/u\/([^>]+)>, <mailto:unsubscribe\+([^@>]+)@mailroom\.localhost>$/.exec(value ?? '');
    expect(match, value).not.toBeNull();
    expect(match![2]).toBe(match![1]);
    return match![1]!;
  };
  const suppression = async (address: string) => {
    const res = await h.app.inject({ method: 'GET', url: `/app/api/suppressions/${encodeURIComponent(address)}`, headers: session(owner) });
    return res.statusCode === 404 ? null : res.json<{ reason: string; message_id: string; detail: string }>();
  };
  const unsubscribedEvents = (recipient: string) => world.events('message.unsubscribed').filter((e) => e.data.recipient === recipient);

  it("gives each recipient's copy its own List-Unsubscribe fields, in the DKIM signature that dkimpy verifies", async () => {
    const id = await send({ to: ['ann@peer.test', 'bob@peer.test'], unsubscribe: true });
    const mails = [await captured('ann@peer.test'), await captured('bob@peer.test')];
    const tokens = mails.map(tokenOf);
    expect(tokens[0]).toMatch(new RegExp(`^${id}\\.0-[0-9a-f]{16}$`));
    expect(tokens[1]).toMatch(new RegExp(`^${id}\\.1-[0-9a-f]{16}$`));
    for (const mail of mails) {
      expect(mail.recipients).toHaveLength(1);
      expect(field(mail.raw, 'List-Unsubscribe-Post')).toEqual(['List-Unsubscribe=One-Click']);
      expect(signedFields(mail.raw)).toEqual(expect.arrayContaining(['list-unsubscribe', 'list-unsubscribe-post', 'from']));
    }
    const verdicts = await verifyWithDkimpy(python!, records, mails.map((m) => m.raw));
    expect(verdicts.map((v) => v.dkim)).toEqual([true, true]);
    // Changing a signed field breaks the signature: the fields are covered, not merely present.
    const tampered = Buffer.from(mails[0]!.raw.toString('latin1').replace(tokens[0]!, tokens[1]!), 'latin1');
    expect((await verifyWithDkimpy(python!, records, [tampered]))[0]!.dkim).toBe(false);
  });

  it('a send without the option and a transactional send carry none; a transactional send asking for it is a 400', async () => {
    await send({ to: 'plain@peer.test' });
    expect(field((await captured('plain@peer.test')).raw, 'List-Unsubscribe')).toEqual([]);
    // The transactional API: a verified domain, a service token, one send.
    const created = (await h.app.inject({ method: 'POST', url: '/app/api/sending-domains', headers: session(owner), payload: { domain: 'acme.test' } })).json<{ domain_id: string; verification: { record_name: string; record_value: string } }>();
    h.dns.set(created.verification.record_name, { TXT: [created.verification.record_value] });
    expect((await h.app.inject({ method: 'POST', url: `/app/api/sending-domains/${created.domain_id}/verify`, headers: session(owner) })).json()).toMatchObject({ status: 'verified' });
    await world.mailbox(acme, 'auth@acme.test');
    const token = (await h.app.inject({ method: 'POST', url: '/app/api/service-tokens', headers: session(owner), payload: { name: 'codes', domain_id: created.domain_id, mailbox: 'auth@acme.test' } })).json<{ token: string }>().token;
    const transactional = (key: string, extra: Record<string, unknown>) =>
      h.app.inject({ method: 'POST', url: '/v1/transactional/messages', headers: { ...bearer(token), 'idempotency-key': key }, payload: { from_mailbox: 'auth@acme.test', to: 'code@peer.test', subject: 'Code', body: '123456', ...extra } });
    const refused = errorOf(await transactional('k1', { unsubscribe: true }));
    expect(refused).toMatchObject({ status: 400, error: 'invalid_request' });
    expect(refused.detail).toContain('unsubscribe');
    expect((await transactional('k2', {})).statusCode).toBe(202);
    expect(field((await captured('code@peer.test')).raw, 'List-Unsubscribe')).toEqual([]);
  });

  it('POST to the link unsubscribes once (suppression `unsubscribed`, one message.unsubscribed); GET shows a form and changes nothing', async () => {
    const id = await send({ to: 'carol@peer.test', unsubscribe: true });
    const token = tokenOf(await captured('carol@peer.test'));
    const page = await h.app.inject({ method: 'GET', url: `/u/${token}`, headers: { accept: 'text/html' } });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.body).toMatch(/<form method="post">/);
    expect(page.body).toContain('carol@peer.test');
    expect(await suppression('carol@peer.test')).toBeNull();
    expect(unsubscribedEvents('carol@peer.test')).toHaveLength(0);

    // As a mail provider sends it (RFC 8058 section 3.1): no credential, no cookie, a form body.
    const post = () =>
      h.app.inject({ method: 'POST', url: `/u/${token}`, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'List-Unsubscribe=One-Click' });
    const first = await post();
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json()).toEqual({ ok: true, unsubscribed: true });
    expect(await suppression('carol@peer.test')).toMatchObject({ reason: 'unsubscribed', message_id: id, detail: 'one-click' });
    expect((await post()).statusCode).toBe(200);
    // Any body at all, even broken JSON, still answers 200.
    expect((await h.app.inject({ method: 'POST', url: `/u/${token}`, headers: { 'content-type': 'application/json' }, payload: '{not json' })).statusCode).toBe(200);
    const events = unsubscribedEvents('carol@peer.test');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ workspace_id: acme.workspaceId, data: { message_id: id, recipient: 'carol@peer.test', mailbox: 'letters@mailroom.localhost' } });
    const listed = await h.app.inject({ method: 'GET', url: '/app/api/suppressions?reason=unsubscribed', headers: session(owner) });
    expect(listed.json<{ suppressions: Array<{ address: string }> }>().suppressions.map((s) => s.address)).toContain('carol@peer.test');
    // A later send to the address leaves it out.
    const again = await h.app.inject({ method: 'POST', url: '/send', headers: bearer(acme.apiKey), payload: { from_mailbox: 'letters@mailroom.localhost', to: 'carol@peer.test', subject: 'x', body: 'y' } });
    expect(errorOf(again)).toMatchObject({ status: 422, error: 'recipient_suppressed' });
  });

  it('a forged, altered or unknown token is a 404 on GET and POST, and unsubscribes nobody', async () => {
    const id = await send({ to: 'dave@peer.test', unsubscribe: true });
    const token = tokenOf(await captured('dave@peer.test'));
    const tag = token.slice(token.lastIndexOf('-') + 1);
    const flipped = `${tag.slice(0, -1)}${tag.endsWith('0') ? '1' : '0'}`;
    const verp = h.services.returnPaths.address(id, 0);
    const forged = [
      token.replace(`-${tag}`, `-${flipped}`),
      token.replace(`${id}.0-`, `${id}.1-`),
      token.replace(id, 'msg_01jd0000000000000000000000'),
      // The return path's tag opens no unsubscribe.
      `${id}.0-${/-([0-9a-f]{12})@/.exec(verp)![1]!}0000`,
      `${token}0`,
      'x'.repeat(400),
      '%00',
    ];
    for (const bad of forged) {
      for (const method of ['GET', 'POST'] as const) {
        const res = await h.app.inject({ method, url: `/u/${bad}`, ...(method === 'POST' ? { headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'List-Unsubscribe=One-Click' } : {}) });
        expect(res.statusCode, `${method} ${bad}`).toBe(404);
      }
    }
    expect(await suppression('dave@peer.test')).toBeNull();
    expect(unsubscribedEvents('dave@peer.test')).toHaveLength(0);
  });

  it('mail to the mailto address, over inbound SMTP, unsubscribes its recipient; a forged one is refused at RCPT', async () => {
    const id = await send({ to: ['erin@peer.test', 'frank@peer.test'], unsubscribe: true });
    const token = tokenOf(await captured('frank@peer.test'));
    await captured('erin@peer.test');
    const address = `unsubscribe+${token}@mailroom.localhost`;
    const before = await world.messageCount();
    const info = await h.sendRaw(`From: frank@peer.test\r\nTo: ${address}\r\nSubject: unsubscribe\r\n\r\nunsubscribe\r\n`, { from: 'frank@peer.test', to: [address] });
    expect(info.response).toMatch(/^250 /);
    expect(await suppression('frank@peer.test')).toMatchObject({ reason: 'unsubscribed', message_id: id, detail: 'mailto' });
    // Only the recipient the address was issued for; nothing is stored as mail.
    expect(await suppression('erin@peer.test')).toBeNull();
    expect(await world.messageCount()).toBe(before);
    expect(unsubscribedEvents('frank@peer.test')).toEqual([expect.objectContaining({ data: { message_id: id, recipient: 'frank@peer.test', mailbox: 'letters@mailroom.localhost' } })]);
    const forged = address.replace(`${id}.1-`, `${id}.0-`);
    await expect(h.sendRaw('Subject: x\r\n\r\nx\r\n', { from: 'frank@peer.test', to: [forged] })).rejects.toMatchObject({ responseCode: 550 });
    expect(await suppression('erin@peer.test')).toBeNull();
  });

  it('unsubscribe+… is reserved in hosted domains', async () => {
    const res = await h.app.inject({ method: 'POST', url: '/mailboxes?address=unsubscribe%2Bme@mailroom.localhost', headers: bearer(acme.apiKey) });
    expect(errorOf(res)).toMatchObject({ status: 400, error: 'address_reserved' });
  });
});
