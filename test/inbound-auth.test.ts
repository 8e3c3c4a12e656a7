import { generateKeyPairSync } from 'node:crypto';
import nodemailer from 'nodemailer';
import type Mail from 'nodemailer/lib/mailer/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';

interface Stored {
  message_id: string;
  folder: string;
  auth: { spf: string; dkim: string; dmarc: string };
  headers: Array<{ name: string; value: string }>;
  text: string | null;
}

/** An RSA key pair and the DKIM TXT record that publishes its public half (RFC 6376 section 3.6.1). */
function dkimKey(): { privateKey: string; record: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    record: `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`,
  };
}

describe(`SPF, DKIM and DMARC of inbound mail through real DNS (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let acme: Tenant;
  const MAILBOX = 'auth@mailroom.localhost';
  const key = dkimKey();

  const storedId = (response: string) => /Stored as (msg_\w+)/.exec(response)![1]!;
  const message = async (id: string): Promise<Stored> => {
    const res = await h.app.inject({ method: 'GET', url: `/messages/${id}`, headers: bearer(acme.apiKey) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<Stored>();
  };
  const raw = async (id: string): Promise<Buffer> => {
    const res = await h.app.inject({ method: 'GET', url: `/messages/${id}/raw`, headers: bearer(acme.apiKey) });
    expect(res.statusCode).toBe(200);
    return res.rawPayload;
  };
  /** Send through SMTP and answer the stored message. */
  const deliver = async (mail: Mail.Options, dkim?: { domainName: string; keySelector: string; privateKey: string }): Promise<Stored> => {
    const info = await h.send({ to: MAILBOX, text: 'hello', ...mail }, dkim ? { dkim } : {});
    return message(storedId(info.response));
  };
  /** The exact bytes nodemailer would send, DKIM-signed, without sending them. */
  const signed = async (mail: Mail.Options, dkim: { domainName: string; keySelector: string; privateKey: string }): Promise<string> => {
    const info = await nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows', dkim }).sendMail(mail);
    return (info.message as Buffer).toString('utf8');
  };
  const header = (m: Stored, name: string) => m.headers.filter((x) => x.name.toLowerCase() === name.toLowerCase()).map((x) => x.value);

  beforeAll(async () => {
    h = await startMailHarness();
    acme = await createTenant(h, 'Acme');
    expect((await h.app.inject({ method: 'POST', url: `/mailboxes?address=${MAILBOX}`, headers: bearer(acme.apiKey) })).statusCode).toBe(201);
  });
  afterAll(async () => h.close());

  it('SPF: pass, fail, softfail, neutral and none from the sender domain\'s TXT record', async () => {
    const cases: Array<[string, string | null, string]> = [
      ['spf-pass.test', 'v=spf1 ip4:127.0.0.1 -all', 'pass'],
      ['spf-cidr.test', 'v=spf1 ip4:127.0.0.0/8 -all', 'pass'],
      ['spf-fail.test', 'v=spf1 -all', 'fail'],
      ['spf-other-ip.test', 'v=spf1 ip4:192.0.2.1 -all', 'fail'],
      ['spf-soft.test', 'v=spf1 ~all', 'softfail'],
      ['spf-neutral.test', 'v=spf1 ?all', 'neutral'],
      ['spf-none.test', null, 'none'],
    ];
    for (const [domain, record, expected] of cases) {
      if (record !== null) h.dns.set(domain, { TXT: [record] });
      const m = await deliver({ from: `alice@${domain}`, subject: `spf ${domain}` });
      expect(m.auth, domain).toEqual({ spf: expected, dkim: 'none', dmarc: 'none' });
      // Without a DMARC policy, an SPF failure alone does not make mail spam.
      expect(m.folder, domain).toBe('inbox');
      expect(header(m, 'Received-SPF')[0], domain).toMatch(new RegExp(`^${expected} `));
      expect(header(m, 'Authentication-Results')[0], domain).toContain(`spf=${expected} `);
    }
    // The DNS server really was asked for the sender domain's TXT record.
    expect(h.dns.queries.some((q) => q.name === 'spf-pass.test' && q.type === 16)).toBe(true);
  });

  it('DKIM: a signature verified with the key published at <selector>._domainkey.<domain> passes', async () => {
    h.dns.set('sel1._domainkey.dkim-pass.test', { TXT: [key.record] });
    h.dns.set('dkim-pass.test', { TXT: ['v=spf1 ip4:127.0.0.1 -all'] });
    const m = await deliver({ from: 'bob@dkim-pass.test', subject: 'signed' }, { domainName: 'dkim-pass.test', keySelector: 'sel1', privateKey: key.privateKey });
    expect(m.auth).toEqual({ spf: 'pass', dkim: 'pass', dmarc: 'none' });
    expect(header(m, 'Authentication-Results')[0]).toMatch(/dkim=pass header\.i=@dkim-pass\.test header\.s=sel1/);
    expect(header(m, 'DKIM-Signature')).toHaveLength(1);
    expect(h.dns.queries.some((q) => q.name === 'sel1._domainkey.dkim-pass.test')).toBe(true);
  });

  it('DKIM: a body or a signed header changed after signing fails, and so does a key that does not match', async () => {
    h.dns.set('sel1._domainkey.tamper.test', { TXT: [key.record] });
    const dkim = { domainName: 'tamper.test', keySelector: 'sel1', privateKey: key.privateKey };
    const mail = { from: 'carol@tamper.test', to: MAILBOX, subject: 'Pay invoice 17', text: 'Pay 100 EUR to account A.\r\n' };
    const envelope = { from: 'carol@tamper.test', to: [MAILBOX] };

    // Untouched, the same bytes pass: the changes below are what fails.
    const original = await signed(mail, dkim);
    expect(original).toContain('Pay 100 EUR to account A.');
    expect((await message(storedId((await h.sendRaw(original, envelope)).response))).auth.dkim).toBe('pass');

    const body = original.replace('Pay 100 EUR to account A.', 'Pay 900 EUR to account B.');
    expect(body).not.toBe(original);
    const bodyTampered = await message(storedId((await h.sendRaw(body, envelope)).response));
    expect(bodyTampered.text).toContain('Pay 900 EUR to account B.');
    expect(bodyTampered.auth.dkim).toBe('fail');
    // The stored Authentication-Results says what the verdict says (mailauth alone would write `neutral`).
    expect(header(bodyTampered, 'Authentication-Results')[0]).toMatch(/dkim=fail \(body hash did not verify\)/);

    const subject = original.replace('Subject: Pay invoice 17', 'Subject: Pay invoice 18');
    expect(subject).not.toBe(original);
    expect((await message(storedId((await h.sendRaw(subject, envelope)).response))).auth.dkim).toBe('fail');

    // Signed with a key other than the published one.
    h.dns.set('sel2._domainkey.tamper.test', { TXT: [dkimKey().record] });
    const wrongKey = await deliver({ from: 'carol@tamper.test', subject: 'wrong key' }, { ...dkim, keySelector: 'sel2' });
    expect(wrongKey.auth.dkim).toBe('fail');

    // A selector with no published key at all is no pass either.
    const noKey = await deliver({ from: 'carol@tamper.test', subject: 'no key' }, { ...dkim, keySelector: 'missing' });
    expect(noKey.auth.dkim).not.toBe('pass');
    expect(noKey.auth.dkim).not.toBe('none');
  });

  it('DMARC p=reject with failing SPF and no DKIM fails, and the mail lands in spam', async () => {
    h.dns.set('dmarc-fail.test', { TXT: ['v=spf1 -all'] });
    h.dns.set('_dmarc.dmarc-fail.test', { TXT: ['v=DMARC1; p=reject'] });
    const m = await deliver({ from: 'mallory@dmarc-fail.test', subject: 'Urgent: verify your account' });
    expect(m.auth).toEqual({ spf: 'fail', dkim: 'none', dmarc: 'fail' });
    expect(m.folder).toBe('spam');
    expect(header(m, 'Authentication-Results')[0]).toMatch(/dmarc=fail .*header\.from=dmarc-fail\.test/);

    // It is counted in spam and nowhere else.
    const inbox = await h.app.inject({ method: 'GET', url: `/inbox?mailbox=${MAILBOX}`, headers: bearer(acme.apiKey) });
    expect(inbox.json<{ messages: Array<{ message_id: string }> }>().messages.map((x) => x.message_id)).not.toContain(m.message_id);
    const spam = await h.app.inject({ method: 'GET', url: `/inbox?mailbox=${MAILBOX}&folder=spam`, headers: bearer(acme.apiKey) });
    expect(spam.json()).toMatchObject({ total: 1, messages: [{ message_id: m.message_id, folder: 'spam', read: false }] });
    const stats = await h.app.inject({ method: 'GET', url: '/stats', headers: bearer(acme.apiKey) });
    expect(stats.json<{ folders: Record<string, { total: number; unread: number }> }>().folders.spam).toEqual({ total: 1, unread: 1 });
  });

  it('a DMARC failure under p=none is reported but the mail stays in the inbox', async () => {
    h.dns.set('monitor-only.test', { TXT: ['v=spf1 -all'] });
    h.dns.set('_dmarc.monitor-only.test', { TXT: ['v=DMARC1; p=none'] });
    const m = await deliver({ from: 'eve@monitor-only.test', subject: 'monitoring only' });
    expect(m.auth).toEqual({ spf: 'fail', dkim: 'none', dmarc: 'fail' });
    expect(m.folder).toBe('inbox');
  });

  it('DMARC passes on an aligned DKIM signature even when SPF fails, and such mail stays in the inbox', async () => {
    h.dns.set('aligned.test', { TXT: ['v=spf1 -all'] });
    h.dns.set('_dmarc.aligned.test', { TXT: ['v=DMARC1; p=reject'] });
    h.dns.set('sel1._domainkey.aligned.test', { TXT: [key.record] });
    const m = await deliver({ from: 'dave@aligned.test', subject: 'aligned' }, { domainName: 'aligned.test', keySelector: 'sel1', privateKey: key.privateKey });
    expect(m.auth).toEqual({ spf: 'fail', dkim: 'pass', dmarc: 'pass' });
    expect(m.folder).toBe('inbox');

    // Signed by a domain that is not the From domain: DKIM passes, DMARC (no SPF either) fails.
    h.dns.set('sel1._domainkey.third-party.test', { TXT: [key.record] });
    const unaligned = await deliver({ from: 'dave@aligned.test', subject: 'unaligned' }, { domainName: 'third-party.test', keySelector: 'sel1', privateKey: key.privateKey });
    expect(unaligned.auth).toEqual({ spf: 'fail', dkim: 'pass', dmarc: 'fail' });
    expect(unaligned.folder).toBe('spam');
  });

  it('puts Authentication-Results in front of the raw source and first in the header list', async () => {
    h.dns.set('results.test', { TXT: ['v=spf1 ip4:127.0.0.1 -all'] });
    h.dns.set('_dmarc.results.test', { TXT: ['v=DMARC1; p=none'] });
    h.dns.set('sel1._domainkey.results.test', { TXT: [key.record] });
    const dkim = { domainName: 'results.test', keySelector: 'sel1', privateKey: key.privateKey };
    const original = await signed({ from: 'erin@results.test', to: MAILBOX, subject: 'With results', text: 'body\r\n' }, dkim);
    const id = storedId((await h.sendRaw(original, { from: 'erin@results.test', to: [MAILBOX] })).response);

    const m = await message(id);
    expect(m.auth).toEqual({ spf: 'pass', dkim: 'pass', dmarc: 'pass' });
    expect(m.headers.slice(0, 2).map((x) => x.name)).toEqual(['Received-SPF', 'Authentication-Results']);
    const results = m.headers[1]!.value;
    expect(results).toMatch(/^mx\.mailroom\.test; /);
    for (const part of ['dkim=pass header.i=@results.test', 'spf=pass', 'smtp.mailfrom=erin@results.test', 'dmarc=pass', 'header.from=results.test']) expect(results).toContain(part);
    // Unfolded into one line in the header list; exactly one of each added header.
    expect(results).not.toMatch(/[\r\n]/);
    expect(header(m, 'Authentication-Results')).toHaveLength(1);
    expect(header(m, 'Received-SPF')).toHaveLength(1);
    expect(header(m, 'Subject')).toEqual(['With results']);

    const source = await raw(id);
    const text = source.toString('utf8');
    expect(text).toMatch(/^Received-SPF: pass \(mx\.mailroom\.test: [^\r\n]*\r\n(?:[ \t][^\r\n]*\r\n)*Authentication-Results: mx\.mailroom\.test;/);
    expect(text.match(/^Authentication-Results:/gim)).toHaveLength(1);
    // The sender's bytes follow unchanged, so the stored source still verifies.
    expect(source.subarray(source.length - Buffer.byteLength(original)).toString('utf8')).toBe(original);
    expect(text.slice(0, text.length - original.length)).toMatch(/\r\n$/);
  });
});
