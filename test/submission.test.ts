import { execFile } from 'node:child_process';
import selfsigned from 'selfsigned';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/lib/logger.js';
import { createCertificateHolder, type CertificateSource } from '../src/lib/tls-certificates.js';
import { createSubmissionServer, createSubmissionSlots, type SubmissionServer } from '../src/transports/smtp/submission.server.js';
import { TEST_DIALECT } from './helpers/database.js';
import { session, type Tenant } from './helpers/harness.js';
import type { MailHarness } from './helpers/mail.js';
import type { ReceivedMail, SmtpPeer } from './helpers/smtp-peer.js';
import { dkimpyPython } from './helpers/dkimpy.js';
import { mailWorld } from './helpers/world.js';

/** A certificate source holding one pair, as the service's listeners get theirs. */
function certificateOf(key: string, cert: string): CertificateSource {
  const source = createCertificateHolder(createLogger('silent'));
  if (!source.offer({ key, cert }, 'test')) throw new Error('the test certificate was refused');
  return source;
}

const python = dkimpyPython();

/**
 * A mail client in Python's smtplib: EHLO, STARTTLS (trusting the test's certificate) when asked, AUTH (LOGIN or
 * PLAIN as smtplib picks, or a raw AUTH line), then one transaction; every reply is reported, nothing raises.
 */
const CLIENT = String.raw`
import json, smtplib, ssl, sys
job = json.load(sys.stdin)
out = {}
def text(b): return b.decode() if isinstance(b, bytes) else str(b)
try:
    if job.get('implicit'):
        s = smtplib.SMTP_SSL('127.0.0.1', job['port'], timeout=20, context=ssl.create_default_context(cadata=job['ca']))
    else:
        s = smtplib.SMTP('127.0.0.1', job['port'], timeout=20)
    s.ehlo('client.test')
    out['auth_before_tls'] = s.has_extn('auth')
    if job.get('starttls'):
        s.starttls(context=ssl.create_default_context(cadata=job['ca']))
        s.ehlo('client.test')
    out['auth_offered'] = s.has_extn('auth')
    if job.get('raw_auth'):
        code, msg = s.docmd('AUTH', job['raw_auth'])
        out['auth'] = [code, text(msg)]
    else:
        try:
            if job.get('method'):
                s.user, s.password = job['user'], job['password']
                code, msg = s.auth(job['method'], getattr(s, 'auth_' + job['method'].lower()), initial_response_ok=True)
            else:
                code, msg = s.login(job['user'], job['password'])
            out['auth'] = [code, text(msg)]
        except smtplib.SMTPAuthenticationError as e:
            out['auth'] = [e.smtp_code, text(e.smtp_error)]
        except smtplib.SMTPNotSupportedError as e:
            out['auth'] = [0, str(e)]
    if out['auth'][0] == 235 and 'from' in job:
        code, msg = s.mail(job['from'])
        out['mail'] = [code, text(msg)]
        if code == 250:
            out['rcpt'] = {}
            for r in job['to']:
                code, msg = s.rcpt(r)
                out['rcpt'][r] = [code, text(msg)]
            if any(v[0] == 250 for v in out['rcpt'].values()):
                code, msg = s.data(job['message'].encode())
                out['data'] = [code, text(msg)]
        if job.get('wait_close'):
            # The server hangs up on a revoked credential: a NOOP sees the 421 or a closed connection. Asked every
            # 0.2 s for at most wait_close seconds, so a slow machine only waits longer.
            import time
            deadline = time.time() + job['wait_close']
            out['after'] = [250, 'still open']
            while time.time() < deadline:
                try:
                    code, msg = s.noop()
                except smtplib.SMTPServerDisconnected:
                    out['after'] = [0, 'disconnected']
                    break
                if code != 250:
                    out['after'] = [code, text(msg)]
                    break
                time.sleep(0.2)
    try:
        s.quit()
    except Exception:
        pass
except Exception as e:
    out['error'] = repr(e)
json.dump(out, sys.stdout)
`;

const VERIFY = String.raw`
import base64, json, sys, dkim
job = json.load(sys.stdin)
def dnsfunc(name, timeout=5):
    txt = job['records'].get(name.decode().rstrip('.').lower())
    return txt.encode() if txt is not None else None
json.dump([bool(dkim.verify(base64.b64decode(m), dnsfunc=dnsfunc)) for m in job['messages']], sys.stdout)
`;

interface ClientResult {
  auth_before_tls?: boolean;
  auth_offered?: boolean;
  auth?: [number, string];
  mail?: [number, string];
  rcpt?: Record<string, [number, string]>;
  data?: [number, string];
  after?: [number, string];
  error?: string;
}

function runPython<T>(script: string, job: unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = execFile(python!, ['-c', script], { maxBuffer: 16 * 1024 * 1024, timeout: 60_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`python: ${stderr || error.message}`));
      else resolve(JSON.parse(stdout) as T);
    });
    child.stdin!.end(JSON.stringify(job));
  });
}

const MAILBOX = 'writer@mailroom.localhost';
const message = (headers: string) => `From: Writer <${MAILBOX}>\r\nTo: Ann <ann@peer.test>\r\n${headers}Subject: Hello from a mail client\r\n\r\nWritten in a mail client.\r\n`;

describe.skipIf(python === null)(`SMTP submission with app passwords (${TEST_DIALECT})${python === null ? ' — skipped: python3-dkim is not installed' : ''}`, { timeout: 90_000 }, () => {
  const world = mailWorld({ env: { MAILROOM_LOGIN_FAILURES_PER_ADDRESS: '3' } });
  let h: MailHarness;
  let peer: SmtpPeer;
  let acme: Tenant;
  let owner: string;
  let ca: string;
  let starttlsPort: number;
  let plainPort: number;
  let implicitPort: number;
  const records: Record<string, string> = {};

  const client = (job: Record<string, unknown>) => runPython<ClientResult>(CLIENT, { ca, ...job });
  const makePassword = async (name: string): Promise<{ id: string; password: string }> => {
    const res = await h.app.inject({ method: 'POST', url: '/app/api/app-passwords', headers: session(owner), payload: { name, mailbox: MAILBOX } });
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json<{ app_password_id: string; password: string }>();
    return { id: body.app_password_id, password: body.password };
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

  beforeAll(async () => {
    ({ h, peer } = world);
    acme = await world.tenant('Acme', [MAILBOX]);
    owner = await world.ownerSession(acme);
    records['mailroom._domainkey.mailroom.localhost'] = `v=DKIM1; k=rsa; p=${(await h.services.domains.hostedKey()).publicKey}`;
    const pems = await selfsigned.generate([{ name: 'commonName', value: '127.0.0.1' }], {
      keySize: 2048,
      notAfterDate: new Date(Date.now() + 86_400_000),
      extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
    });
    ca = pems.cert;
    const logger = createLogger('silent');
    const slots = createSubmissionSlots({ maxClients: 20, maxClientsPerIp: 20, logger });
    const start = async (tls: boolean, implicitTls = false): Promise<number> => {
      const server: SubmissionServer = createSubmissionServer({
        appPasswords: h.services.appPasswords.service,
        sessions: h.services.appPasswords.sessions,
        sending: h.services.sending,
        logger,
        hostname: 'submit.mailroom.test',
        maxSize: h.config.smtpMaxSize,
        implicitTls,
        tls: tls ? certificateOf(pems.private, pems.cert) : undefined,
        plaintextAuth: tls ? 'never' : 'loopback',
        slots,
      });
      world.own(server);
      return server.listen('127.0.0.1', 0);
    };
    starttlsPort = await start(true);
    plainPort = await start(false);
    implicitPort = await start(true, true);
    const suppressed = await h.app.inject({ method: 'POST', url: '/app/api/suppressions', headers: session(owner), payload: { address: 'gone@peer.test' } });
    expect(suppressed.statusCode, suppressed.body).toBe(201);
  });

  it('over STARTTLS: AUTH only after TLS, Bcc delivered but not shown, DKIM-signed, the sent copy kept', async () => {
    const { password } = await makePassword('Thunderbird');
    const before = await client({ port: starttlsPort, raw_auth: `PLAIN ${Buffer.from(`\0${MAILBOX}\0${password}`).toString('base64')}` });
    expect(before.auth_before_tls).toBe(false);
    expect(before.auth?.[0]).toBeGreaterThanOrEqual(500);
    const result = await client({
      port: starttlsPort,
      starttls: true,
      user: MAILBOX,
      password,
      from: MAILBOX,
      to: ['ann@peer.test', 'hidden@peer.test', 'gone@peer.test'],
      message: message('Bcc: hidden@peer.test\r\n'),
    });
    expect(result).toMatchObject({ auth_before_tls: false, auth_offered: true, auth: [235, expect.any(String)], mail: [250, expect.any(String)] });
    expect(result.rcpt).toMatchObject({ 'ann@peer.test': [250, expect.any(String)], 'hidden@peer.test': [250, expect.any(String)], 'gone@peer.test': [550, expect.stringMatching(/^5\.7\.1 .*suppressed/)] });
    expect(result.data?.[0]).toBe(250);
    const id = /Queued as (msg_\w+)/.exec(result.data?.[1] ?? '')?.[1];
    expect(id).toBeDefined();
    const [toAnn, toHidden] = [await captured('ann@peer.test'), await captured('hidden@peer.test')];
    for (const mail of [toAnn, toHidden]) {
      const text = mail.raw.toString('latin1');
      expect(text).not.toMatch(/^Bcc:/im);
      expect(text).toMatch(/^DKIM-Signature: .*d=mailroom\.localhost/im);
      expect(text).toMatch(/^Message-ID: <msg_\w+@mailroom\.localhost>/im);
      expect(text).toMatch(/^Date: /im);
      expect(text).toContain('Written in a mail client.');
    }
    expect(peer.accepted.some((m) => m.recipients.includes('gone@peer.test'))).toBe(false);
    expect(await runPython<boolean[]>(VERIFY, { records, messages: [toAnn.raw.toString('base64'), toHidden.raw.toString('base64')] })).toEqual([true, true]);
    // The sent copy, in the mailbox's Sent folder, without the Bcc field either.
    const copy = await world.message(acme, id!);
    expect(copy).toMatchObject({ folder: 'sent', direction: 'outbound', subject: 'Hello from a mail client' });
    const raw = (await h.app.inject({ method: 'GET', url: `/messages/${id!}/raw`, headers: { authorization: `Bearer ${acme.apiKey}` } })).body;
    expect(raw).not.toMatch(/^Bcc:/im);
    const sent = await h.app.inject({ method: 'GET', url: `/app/api/sent?mailbox=${MAILBOX}`, headers: session(owner) });
    expect(sent.json<{ messages: Array<{ message_id: string }> }>().messages.map((m) => m.message_id)).toContain(id);
  });

  it('over implicit TLS (port 465 style): AUTH offered at once, the message queued', async () => {
    const { password } = await makePassword('Implicit TLS');
    const result = await client({ port: implicitPort, implicit: true, method: 'PLAIN', user: MAILBOX, password, from: MAILBOX, to: ['tls@peer.test'], message: message('') });
    expect(result).toMatchObject({ auth_before_tls: true, auth: [235, expect.any(String)], data: [250, expect.stringMatching(/^2\.0\.0 Queued as msg_/)] });
    await captured('tls@peer.test');
  });

  it('refuses a MAIL FROM other than the logged-in mailbox, and a wrong password', async () => {
    const { password } = await makePassword('Phone');
    const wrongFrom = await client({ port: starttlsPort, starttls: true, user: MAILBOX, password, from: 'someone@mailroom.localhost', to: ['ann@peer.test'], message: message('') });
    expect(wrongFrom.mail).toEqual([553, expect.stringMatching(/^5\.7\.1 /)]);
    const wrong = await client({ port: starttlsPort, starttls: true, method: 'PLAIN', user: MAILBOX, password: 'aaaa-bbbb-cccc-dddd' });
    expect(wrong.auth).toEqual([535, '5.7.8 Authentication credentials invalid']);
  });

  it('allows AUTH without TLS from loopback only where the setting says so (PLAIN and LOGIN)', async () => {
    const { password } = await makePassword('Local script');
    for (const method of ['PLAIN', 'LOGIN']) {
      const result = await client({ port: plainPort, method, user: MAILBOX, password, from: MAILBOX, to: ['plain@peer.test'], message: message('') });
      expect(result, method).toMatchObject({ auth_before_tls: true, auth: [235, expect.any(String)], data: [250, expect.stringMatching(/^2\.0\.0 Queued as msg_/)] });
    }
    await captured('plain@peer.test');
  });

  it('a revoked app password ends the open session and is refused at the next AUTH', async () => {
    const { id, password } = await makePassword('Revoked');
    const open = client({ port: starttlsPort, starttls: true, user: MAILBOX, password, from: MAILBOX, to: ['late@peer.test'], message: message(''), wait_close: 30 });
    // Revoked while the client sits logged in after its message (delivered, so its DATA is long done).
    await captured('late@peer.test');
    expect((await h.app.inject({ method: 'DELETE', url: `/app/api/app-passwords/${id}`, headers: session(owner) })).statusCode).toBe(200);
    const result = await open;
    expect(result.auth?.[0]).toBe(235);
    expect(result.after?.[0] === 421 || result.after?.[1] === 'disconnected').toBe(true);
    const again = await client({ port: starttlsPort, starttls: true, method: 'PLAIN', user: MAILBOX, password });
    expect(again.auth).toEqual([535, '5.7.8 Authentication credentials invalid']);
  });

  it('answers 454 4.7.0 once the address has failed too often from this client', async () => {
    const { password } = await makePassword('Throttled');
    const other = 'throttled@mailroom.localhost';
    await world.mailbox(acme, other);
    for (let i = 0; i < h.config.loginFailuresPerAddress; i += 1) {
      // One mechanism per attempt: smtplib's login() would try PLAIN and then LOGIN, two failures.
      expect((await client({ port: plainPort, method: 'PLAIN', user: other, password: 'wrong-wrong-wrong-wrong' })).auth?.[0]).toBe(535);
    }
    const throttled = await client({ port: plainPort, method: 'PLAIN', user: other, password });
    expect(throttled.auth).toEqual([454, expect.stringMatching(/^4\.7\.0 Too many failed logins/)]);
  });
});
