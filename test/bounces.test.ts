import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorker, type Worker } from '../src/jobs/worker.js';
import { createLogger } from '../src/lib/logger.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';
import { startSmtpPeer, type SmtpPeer } from './helpers/smtp-peer.js';

const dsn = (verp: string, recipient: string) =>
  [
    'From: Mail Delivery System <mailer-daemon@peer.test>',
    `To: ${verp}`,
    'Subject: Undelivered Mail Returned to Sender',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="b1"',
    '',
    '--b1',
    'Content-Type: text/plain',
    '',
    'Your message could not be delivered.',
    '--b1',
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; mx1.peer.test',
    '',
    `Final-Recipient: rfc822; ${recipient}`,
    'Action: failed',
    'Status: 5.1.1',
    'Diagnostic-Code: smtp; 550 5.1.1 mailbox unavailable',
    '',
    '--b1',
    'Content-Type: text/rfc822-headers',
    '',
    'Subject: Hi',
    '--b1--',
    '',
  ].join('\r\n');

const arf = (verp: string, recipient: string) =>
  [
    'From: feedback@isp.test',
    `To: ${verp}`,
    'Subject: Abuse report',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=feedback-report; boundary="b2"',
    '',
    '--b2',
    'Content-Type: text/plain',
    '',
    'A user marked this as spam.',
    '--b2',
    'Content-Type: message/feedback-report',
    '',
    'Feedback-Type: abuse',
    'User-Agent: ISP-FBL/1.0',
    'Version: 1',
    `Original-Rcpt-To: ${recipient}`,
    '',
    '--b2',
    'Content-Type: message/rfc822',
    '',
    'Subject: Hi',
    '',
    'original',
    '--b2--',
    '',
  ].join('\r\n');

describe(`bounces and complaints (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let peer: SmtpPeer;
  let worker: Worker;
  let acme: Tenant;

  beforeAll(async () => {
    peer = await startSmtpPeer();
    h = await startMailHarness({ MAILROOM_MX_PORT: String(peer.port) });
    h.dns.set('peer.test', { A: ['127.0.0.1'] });
    acme = await createTenant(h);
    await h.app.inject({ method: 'POST', url: '/mailboxes?address=sender@mailroom.localhost', headers: bearer(acme.apiKey) });
    worker = createWorker(h.services.handlers, { queue: h.services.queue, logger: createLogger('silent'), leaseMs: h.config.leaseMs, pollMs: 20 });
    worker.start();
  });
  afterAll(async () => {
    await worker.stop(2000);
    await h.close();
    await peer.close();
  });

  async function sendAndDeliver(to: string): Promise<string> {
    const res = await h.app.inject({ method: 'POST', url: '/send', headers: bearer(acme.apiKey), payload: { from_mailbox: 'sender@mailroom.localhost', to, subject: 'Hi', body: 'hello' } });
    const id = res.json<{ message_id: string }>().message_id;
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const row = await h.services.database.db.selectFrom('outbound').select('status').where('message_id', '=', id).executeTakeFirstOrThrow();
      if (row.status === 'accepted') return id;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error('not delivered');
  }
  const events = async (type: string) =>
    (await h.services.database.db.selectFrom('events').select('payload').where('type', '=', type).execute()).map((e) => JSON.parse(e.payload) as { workspace_id: string; data: Record<string, unknown> });
  const messageCount = async () => Number((await h.services.database.db.selectFrom('messages').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);

  it('matches a DSN sent to the VERP address to its message and emits message.bounced, storing no mail', async () => {
    const id = await sendAndDeliver('lost@peer.test');
    const verp = `bounces+${id}@mailroom.localhost`;
    expect(peer.accepted.at(-1)!.mailFrom).toBe(verp);
    const before = await messageCount();
    const info = await h.sendRaw(dsn(verp, 'lost@peer.test'), { from: '', to: [verp] });
    expect(info.response).toMatch(/^250 /);
    const bounced = (await events('message.bounced')).filter((e) => e.data.message_id === id);
    expect(bounced).toHaveLength(1);
    expect(bounced[0]).toMatchObject({ workspace_id: acme.workspaceId, data: { recipient: 'lost@peer.test', reason: 'smtp; 550 5.1.1 mailbox unavailable', status_code: '5.1.1' } });
    expect(await messageCount()).toBe(before);
  });

  it('matches an ARF report to its message and emits message.complained', async () => {
    const id = await sendAndDeliver('annoyed@peer.test');
    const verp = `bounces+${id}@mailroom.localhost`;
    await h.sendRaw(arf(verp, 'annoyed@peer.test'), { from: 'feedback@isp.test', to: [verp] });
    const complained = (await events('message.complained')).filter((e) => e.data.message_id === id);
    expect(complained).toHaveLength(1);
    expect(complained[0]!.data).toMatchObject({ recipient: 'annoyed@peer.test', reason: 'abuse' });
  });

  it('refuses a return address that names no message', async () => {
    await expect(h.sendRaw(dsn('bounces+msg_01jd0000000000000000000000@mailroom.localhost', 'x@peer.test'), { from: '', to: ['bounces+msg_01jd0000000000000000000000@mailroom.localhost'] })).rejects.toMatchObject({ responseCode: 550 });
  });
});
