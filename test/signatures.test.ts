import { execFile } from 'node:child_process';
import { authenticate } from 'mailauth';
import { beforeAll, describe, expect, it } from 'vitest';
import { createDnsResolver } from '../src/lib/dns.js';
import { rfc5322Date } from '../src/modules/sending/schedule.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, memberSession, session, type Tenant } from './helpers/harness.js';
import type { MailHarness } from './helpers/mail.js';
import type { ReceivedMail, SmtpPeer } from './helpers/smtp-peer.js';
import { dkimpyPython, pyspfPython } from './helpers/dkimpy.js';
import { mailWorld } from './helpers/world.js';

/**
 * dkimpy's verdict on each message, the key records answered from the test's own table, and what Python's email
 * package (an independent MIME parser) reads in it: the decoded Subject and From name, the parts and file names.
 */
const VERIFY = String.raw`
import base64, json, sys, dkim, email, email.policy
job = json.load(sys.stdin)
def dnsfunc(name, timeout=5):
    txt = job['records'].get(name.decode().rstrip('.').lower())
    return txt.encode() if txt is not None else None
out = []
for b64 in job['messages']:
    raw = base64.b64decode(b64)
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    parts = [p for p in msg.walk()]
    out.append({
        'dkim': bool(dkim.verify(raw, dnsfunc=dnsfunc)),
        'subject': None if msg['Subject'] is None else str(msg['Subject']),
        'from_name': msg['From'].addresses[0].display_name if msg['From'] is not None else None,
        'types': [p.get_content_type() for p in parts],
        'texts': [p.get_content() for p in parts if p.get_content_maintype() == 'text'],
        'filenames': [p.get_filename() for p in parts if p.get_filename() is not None],
        'names': [email.utils.collapse_rfc2231_value(p.get_param('name', header='content-type')) for p in parts if p.get_param('name', header='content-type') is not None],
    })
json.dump(out, sys.stdout)
`;

interface PythonView {
  dkim: boolean;
  subject: string | null;
  from_name: string | null;
  types: string[];
  texts: string[];
  filenames: string[];
  names: string[];
}

function verifyWithDkimpy(python: string, records: Record<string, string>, messages: Buffer[]): Promise<PythonView[]> {
  return new Promise((resolve, reject) => {
    const child = execFile(python, ['-c', VERIFY], { maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`dkimpy: ${stderr || error.message}`));
      else resolve(JSON.parse(stdout) as PythonView[]);
    });
    child.stdin!.end(JSON.stringify({ records, messages: messages.map((m) => m.toString('base64')) }));
  });
}

/** pyspf's verdict for an envelope sender, its DNS asked of the test's DNS server (dnspython pointed at it). */
const SPF_CHECK = String.raw`
import json, sys, dns.resolver, spf
job = json.load(sys.stdin)
host, port = job['dns'].rsplit(':', 1)
resolver = dns.resolver.Resolver(configure=False)
resolver.nameservers = [host]
resolver.port = int(port)
dns.resolver.default_resolver = resolver
result, explanation = spf.check2(i=job['ip'], s=job['mail_from'], h=job['helo'])
json.dump({'result': result, 'explanation': explanation}, sys.stdout)
`;

function checkWithPyspf(python: string, job: { dns: string; ip: string; mail_from: string; helo: string }): Promise<{ result: string; explanation: string }> {
  return new Promise((resolve, reject) => {
    const child = execFile(python, ['-c', SPF_CHECK], (error, stdout, stderr) => {
      if (error) reject(new Error(`pyspf: ${stderr || error.message}`));
      else resolve(JSON.parse(stdout) as { result: string; explanation: string });
    });
    child.stdin!.end(JSON.stringify(job));
  });
}

const python = dkimpyPython();
const spfPython = pyspfPython();
const MINUTE = 60_000;
const PDF = Buffer.from('%PDF-1.4 résumé\n').toString('base64');

/**
 * Every shape of outbound mail that once went out with a signature no verifier accepts, or decoding to other text:
 * sent through the real service to a real SMTP peer, each captured message is verified by dkimpy (an implementation
 * that shares no code with the signer) and by mailauth, and read back by Python's MIME parser.
 */
describe.skipIf(python === null)(`signatures verify everywhere (${TEST_DIALECT})${python === null ? ' — skipped: python3-dkim (dkimpy) is not installed; apt-get install python3-dkim' : ''}`, () => {
  const world = mailWorld();
  let h: MailHarness;
  let peer: SmtpPeer;
  let acme: Tenant;
  let other: Tenant;
  let acmeToken: string;
  const records: Record<string, string> = {};

  beforeAll(async () => {
    ({ h, peer } = world);
    const publish = (name: string, txt: string) => {
      records[name] = txt;
      h.dns.set(name, { TXT: [txt] });
    };
    publish('mailroom._domainkey.mailroom.localhost', `v=DKIM1; k=rsa; p=${(await h.services.domains.hostedKey()).publicKey}`);
    acme = await world.tenant('Acme');
    other = await world.tenant('Other');
    acmeToken = (await memberSession(h, acme.workspaceId, 'owner')).token;
    await h.app.inject({ method: 'POST', url: '/mailboxes?address=newsletter@mailroom.localhost', headers: bearer(acme.apiKey) });
    await h.app.inject({ method: 'POST', url: '/mailboxes?address=theirs@mailroom.localhost', headers: bearer(other.apiKey) });
    // Acme's own sending domain, verified, its DKIM key published, under DMARC p=reject.
    const created = (await h.app.inject({ method: 'POST', url: '/app/api/sending-domains', headers: session(acmeToken), payload: { domain: 'brand.example' } })).json<{ domain_id: string; dkim: { record_name: string; record_value: string }; verification: { record_value: string } }>();
    h.dns.set('_mailroom-verification.brand.example', { TXT: [created.verification.record_value] });
    expect((await h.app.inject({ method: 'POST', url: `/app/api/sending-domains/${created.domain_id}/verify`, headers: session(acmeToken) })).json()).toMatchObject({ status: 'verified' });
    publish(created.dkim.record_name, created.dkim.record_value);
    h.dns.set('_dmarc.brand.example', { TXT: ['v=DMARC1; p=reject'] });
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes?address=hello@brand.example', headers: bearer(acme.apiKey) })).statusCode).toBe(201);
    // Another sending domain with its own return-path host, verified: its MX at our listener, its SPF including the
    // hosted domain's, which authorizes the loopback sender.
    const aligned = (await h.app.inject({ method: 'POST', url: '/app/api/sending-domains', headers: session(acmeToken), payload: { domain: 'aligned.example', return_path_host: 'bounces.aligned.example' } })).json<{ domain_id: string; dkim: { record_name: string; record_value: string }; verification: { record_value: string } }>();
    h.dns.set('_mailroom-verification.aligned.example', { TXT: [aligned.verification.record_value] });
    publish(aligned.dkim.record_name, aligned.dkim.record_value);
    h.dns.set('_dmarc.aligned.example', { TXT: ['v=DMARC1; p=reject'] });
    h.dns.set('mailroom.localhost', { TXT: ['v=spf1 ip4:127.0.0.1 -all'] });
    h.dns.set('bounces.aligned.example', { MX: [{ exchange: 'mx.mailroom.test', priority: 10 }], TXT: ['v=spf1 include:mailroom.localhost ~all'] });
    const checked = await h.app.inject({ method: 'POST', url: `/app/api/sending-domains/${aligned.domain_id}/verify`, headers: session(acmeToken) });
    const verdict = checked.json<{ status: string; return_path_verified_at: string | null }>();
    expect(verdict.status).toBe('verified');
    expect(verdict.return_path_verified_at).not.toBeNull();
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes?address=hello@aligned.example', headers: bearer(acme.apiKey) })).statusCode).toBe(201);
  });

  const send = async (payload: Record<string, unknown>, key = acme.apiKey) => {
    const res = await h.app.inject({ method: 'POST', url: '/send', headers: bearer(key), payload: { from_mailbox: 'newsletter@mailroom.localhost', subject: 'Hi', body: 'Hello', ...payload } });
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
  const storedRaw = async (id: string, key = acme.apiKey) => (await h.app.inject({ method: 'GET', url: `/messages/${id}/raw`, headers: bearer(key) })).rawPayload;
  const mailauthDkim = async (mail: ReceivedMail) => {
    const verdict = await authenticate(mail.raw, { ip: '127.0.0.1', helo: 'mx.mailroom.test', sender: mail.mailFrom, resolver: createDnsResolver([h.dns.address]) as never, disableArc: true, disableBimi: true });
    return {
      dkim: verdict.dkim.results.map((r) => `${r.signingDomain}:${r.status.result}`),
      dmarc: verdict.dmarc ? verdict.dmarc.status.result : 'none',
    };
  };
  /** The text parts as a reader gets them, line breaks as LF. */
  const texts = (v: PythonView) => v.texts.map((t) => t.replace(/\r\n/g, '\n'));
  /** The unfolded Content-Type fields of the parts that carry a name. */
  const namedContentTypes = (raw: Buffer) =>
    [...raw.toString('latin1').replace(/\r\n[ \t]+/g, ' ').matchAll(/^Content-Type: ([^\r\n]*\bname\b[^\r\n]*)$/gim)].map((m) => m[1]!);

  it('each shape: dkimpy and mailauth pass, the wire is the stored copy, and it reads back as it was written', async () => {
    const shapes: Array<{ to: string; id: () => Promise<string>; key?: string; domain?: string; check: (v: PythonView, raw: Buffer) => void }> = [
      {
        to: 'bare-cr@peer.test',
        id: () => send({ to: 'bare-cr@peer.test', body: 'line one\rline two\r', html: '<p>one\rtwo</p>' }),
        check: (v) => expect(texts(v)).toEqual(['line one\nline two\n', '<p>one\ntwo</p>']),
      },
      {
        to: 'bare-lf@peer.test',
        id: () => send({ to: 'bare-lf@peer.test', body: 'line one\nline two\n', html: '<p>one\ntwo</p>' }),
        check: (v) => expect(texts(v)).toEqual(['line one\nline two\n', '<p>one\ntwo</p>']),
      },
      {
        to: 'encoded-word@peer.test',
        id: () => send({ to: 'encoded-word@peer.test', subject: '=?UTF-8?B?SGk=?= is how "Hi" looks encoded', from_name: '=?UTF-8?Q?Acme?=' }),
        check: (v) => {
          expect(v.subject).toBe('=?UTF-8?B?SGk=?= is how "Hi" looks encoded');
          expect(v.from_name).toBe('=?UTF-8?Q?Acme?=');
        },
      },
      {
        to: 'empty-subject@peer.test',
        id: () => send({ to: 'empty-subject@peer.test', subject: '' }),
        check: (v, raw) => {
          expect(v.subject).toBe('');
          expect(raw.toString('latin1')).toMatch(/^Subject: ?\r$/m);
        },
      },
      {
        to: 'html-only@peer.test',
        id: () => send({ to: 'html-only@peer.test', body: '', html: '<p>Only HTML</p>' }),
        check: (v) => {
          expect(v.types).toEqual(['multipart/alternative', 'text/plain', 'text/html']);
          expect(texts(v)).toEqual(['', '<p>Only HTML</p>']);
        },
      },
      {
        to: 'empty-both@peer.test',
        id: () => send({ to: 'empty-both@peer.test', body: '', html: '' }),
        check: (v) => expect(v.types).toEqual(['multipart/alternative', 'text/plain', 'text/html']),
      },
      {
        to: 'file-name@peer.test',
        id: () => send({ to: 'file-name@peer.test', attachments: [{ filename: 'résumé №1.pdf', content_type: 'application/pdf', content: PDF }] }),
        check: (v, raw) => {
          expect(v.types).toEqual(['multipart/mixed', 'text/plain', 'application/pdf']);
          expect(v.filenames).toEqual(['résumé №1.pdf']);
          expect(v.names).toEqual(['résumé №1.pdf']);
          // RFC 2231 in Content-Type as in Content-Disposition, no encoded word in a quoted string.
          expect(namedContentTypes(raw)).toEqual([expect.stringMatching(/^application\/pdf;\s*name\*(?:0\*)?=utf-8''r%C3%A9sum%C3%A9/i)]);
        },
      },
      {
        to: 'own-domain@peer.test',
        domain: 'brand.example',
        id: () => send({ to: 'own-domain@peer.test', from_mailbox: 'hello@brand.example', body: 'Signed by brand.example\r\rwith a bare CR.' }),
        check: (v) => expect(texts(v)).toEqual(['Signed by brand.example\n\nwith a bare CR.\n']),
      },
      {
        to: 'own-return-path@peer.test',
        domain: 'aligned.example',
        id: () => send({ to: 'own-return-path@peer.test', from_mailbox: 'hello@aligned.example', body: 'Its envelope sender\rat its own host.' }),
        check: (v) => expect(texts(v)).toEqual(['Its envelope sender\nat its own host.\n']),
      },
      {
        to: 'other-workspace@peer.test',
        key: other.apiKey,
        id: () => send({ to: 'other-workspace@peer.test', from_mailbox: 'theirs@mailroom.localhost', subject: '', body: 'x\ry' }, other.apiKey),
        check: (v) => expect(v.subject).toBe(''),
      },
    ];
    const ids = await Promise.all(shapes.map((s) => s.id()));
    const mails = await Promise.all(shapes.map((s) => captured(s.to)));
    const views = await verifyWithDkimpy(python!, records, mails.map((m) => m.raw));
    // Every shape is checked, and every failing one named: each once went out broken in its own way.
    const failures: string[] = [];
    for (const [i, shape] of shapes.entries()) {
      const mail = mails[i]!;
      const domain = shape.domain ?? 'mailroom.localhost';
      try {
        expect(views[i]!.dkim, 'dkimpy').toBe(true);
        expect(await mailauthDkim(mail), 'mailauth').toEqual({ dkim: [`${domain}:pass`], dmarc: domain.endsWith('.example') ? 'pass' : 'none' });
        // What was signed is what went out: the stored copy, byte for byte, after the signature.
        const stored = await storedRaw(ids[i]!, shape.key);
        expect(mail.raw.subarray(mail.raw.length - stored.length).equals(stored), 'the stored copy is the wire').toBe(true);
        expect(mail.raw.subarray(0, mail.raw.length - stored.length).toString('latin1')).toMatch(/^DKIM-Signature: [^]*\r\n$/);
        shape.check(views[i]!, mail.raw);
      } catch (error) {
        failures.push(`${shape.to}: ${(error as Error).message}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it('every other sending path composes the same way: a batch and a draft with bare CR and LF verify', async () => {
    const batch = await h.app.inject({ method: 'POST', url: '/send/batch', headers: bearer(acme.apiKey), payload: { messages: [{ from_mailbox: 'newsletter@mailroom.localhost', to: 'batch@peer.test', subject: 'batch', body: 'a\rb\nc' }] } });
    expect(batch.statusCode, batch.body).toBeLessThan(300);
    const draft = await h.app.inject({ method: 'POST', url: '/app/api/drafts', headers: session(acmeToken), payload: { mailbox: 'newsletter@mailroom.localhost', to: 'draft@peer.test', subject: 'draft', body: 'a\rb\nc', html: '<p>a\rb</p>' } });
    expect(draft.statusCode, draft.body).toBe(201);
    const sent = await h.app.inject({ method: 'POST', url: `/app/api/drafts/${draft.json<{ draft_id: string }>().draft_id}/send`, headers: session(acmeToken) });
    expect(sent.statusCode, sent.body).toBe(202);
    const mails = [await captured('batch@peer.test'), await captured('draft@peer.test')];
    expect((await verifyWithDkimpy(python!, records, mails.map((m) => m.raw))).map((v) => v.dkim)).toEqual([true, true]);
    for (const mail of mails) expect((await mailauthDkim(mail)).dkim).toEqual(['mailroom.localhost:pass']);
  });

  it('a reschedule leaves the stored message as it is; the copy sent is dated its send_at, and signed after', async () => {
    const first = h.clock.now() + 10 * MINUTE;
    const later = first + 60 * MINUTE;
    const id = await send({ to: 'rescheduled@peer.test', send_at: new Date(first).toISOString(), attachments: [{ filename: 'a.pdf', content_type: 'application/pdf', content: PDF }] });
    const before = await storedRaw(id);
    const res = await h.app.inject({ method: 'POST', url: `/messages/${id}/reschedule`, headers: bearer(acme.apiKey), payload: { send_at: new Date(later).toISOString() } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ send_at: new Date(later).toISOString(), date: new Date(later).toISOString() });
    // Not one byte of the stored source is rewritten for a new time.
    expect((await storedRaw(id)).equals(before)).toBe(true);
    h.clock.set(later);
    const mail = await captured('rescheduled@peer.test');
    expect(/^Date: (.*)\r$/m.exec(mail.raw.toString('latin1').split('\r\n\r\n')[0]! + '\r')?.[1]).toBe(rfc5322Date(later));
    const [view] = await verifyWithDkimpy(python!, records, [mail.raw]);
    expect(view!.dkim).toBe(true);
    expect((await mailauthDkim(mail)).dkim).toEqual(['mailroom.localhost:pass']);
  });

  it.skipIf(spfPython === null)(
    `a domain's own return path: the envelope sender is at its host, and SPF passes there, aligned with the From domain${spfPython === null ? ' — skipped: python3-spf (pyspf) is not installed' : ''}`,
    async () => {
      await send({ to: 'aligned-spf@peer.test', from_mailbox: 'hello@aligned.example' });
      const mail = await captured('aligned-spf@peer.test');
      expect(mail.mailFrom).toMatch(/^bounces\+msg_[0-9a-z]{26}\.0-[0-9a-f]{12}@bounces\.aligned\.example$/);
      const verdict = await checkWithPyspf(spfPython!, { dns: h.dns.address, ip: '127.0.0.1', mail_from: mail.mailFrom, helo: 'mx.mailroom.test' });
      expect(verdict.result, verdict.explanation).toBe('pass');
      // Relaxed alignment (RFC 7489 section 3.1.2): the envelope sender's domain is under the From domain.
      expect(mail.mailFrom.split('@')[1]!.endsWith('.aligned.example')).toBe(true);
      const auth = await authenticate(mail.raw, { ip: '127.0.0.1', helo: 'mx.mailroom.test', sender: mail.mailFrom, resolver: createDnsResolver([h.dns.address]) as never, disableArc: true, disableBimi: true });
      expect(auth.spf && auth.spf.status.result).toBe('pass');
      expect(auth.dmarc && auth.dmarc.alignment).toMatchObject({ spf: { result: 'bounces.aligned.example' }, dkim: { result: 'aligned.example' } });
      const [view] = await verifyWithDkimpy(python!, records, [mail.raw]);
      expect(view!.dkim).toBe(true);
    },
  );
});
