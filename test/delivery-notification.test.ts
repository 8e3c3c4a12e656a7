import { beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIALECT } from './helpers/database.js';
import { deliveredDsn } from './helpers/domain-reports.js';
import { bearer, session, type Tenant } from './helpers/harness.js';
import { messageOfReturnPath } from './helpers/reports.js';
import type { ReceivedMail } from './helpers/smtp-peer.js';
import { mailWorld, type MailWorld, type MessageView } from './helpers/world.js';

const FROM = 'notify@mailroom.localhost';
/** The DSN parameters of RFC 3461: on MAIL FROM (RET, ENVID) and on RCPT TO (NOTIFY, ORCPT). */
const DSN_MAIL_PARAMS = ['RET', 'ENVID'];

/** The send through `world`'s real service and worker, delivered over SMTP to its loopback peer. */
function sender(world: MailWorld, tenant: () => Tenant) {
  const send = async (payload: Record<string, unknown>): Promise<string> => {
    const res = await world.h.app.inject({ method: 'POST', url: '/send', headers: bearer(tenant().apiKey), payload: { from_mailbox: FROM, subject: 'Hi', body: 'Hello', ...payload } });
    expect(res.statusCode, res.body).toBe(202);
    return res.json<{ message_id: string }>().message_id;
  };
  /** The message's view once every recipient's copy was accepted, and the copies the peer took. */
  const accepted = async (id: string): Promise<{ view: MessageView; mails: ReceivedMail[] }> => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const view = await world.message(tenant(), id);
      if (view?.status === 'accepted') return { view, mails: world.peer.accepted.filter((m) => messageOfReturnPath(world.h, m.mailFrom) === id) };
      if (Date.now() > deadline) throw new Error(`message ${id} not accepted: ${JSON.stringify(view)}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  return { send, accepted };
}

/** What a receiver that offers DSN does after taking a message: a delivery report for each recipient that asked. */
async function reportDeliveries(world: MailWorld, mail: ReceivedMail): Promise<number> {
  let sent = 0;
  for (const [i, recipient] of mail.recipients.entries()) {
    const notify = mail.rcptParams[i]?.NOTIFY;
    if (typeof notify !== 'string' || !notify.split(',').includes('SUCCESS')) continue;
    const envid = mail.mailParams.ENVID;
    const info = await world.h.sendRaw(deliveredDsn(mail.mailFrom, recipient, typeof envid === 'string' ? envid : undefined), { from: '', to: [mail.mailFrom] });
    expect(info.response).toMatch(/^250 /);
    sent += 1;
  }
  return sent;
}

describe(`delivery notification (${TEST_DIALECT})`, { timeout: 60_000 }, () => {
  describe('a receiver that offers DSN', () => {
    const world = mailWorld({ peer: { dsn: true } });
    let acme: Tenant;
    const { send, accepted } = sender(world, () => acme);
    const delivered = (id: string) => world.events('message.delivered').filter((e) => e.data.message_id === id);

    beforeAll(async () => {
      acme = await world.tenant('Acme', [FROM]);
    });

    it('with delivery_notification, each RCPT asks NOTIFY=SUCCESS,FAILURE under ENVID (the message id), and the delivery reports that come back emit message.delivered', async () => {
      const id = await send({ to: ['ann@peer.test', 'bob@peer.test'], delivery_notification: true });
      const { view, mails } = await accepted(id);
      expect(view.delivery_notification).toBe(true);
      expect(mails).toHaveLength(2);
      for (const mail of mails) {
        expect(mail.mailParams).toMatchObject({ RET: 'HDRS', ENVID: id });
        expect(mail.rcptParams).toEqual([{ NOTIFY: 'SUCCESS,FAILURE' }]);
      }
      expect(delivered(id)).toEqual([]);
      // The receiver reports over real SMTP to each copy's return path, through the inbound listener.
      for (const mail of mails) expect(await reportDeliveries(world, mail)).toBe(1);
      expect(delivered(id).map((e) => e.data.recipient).sort()).toEqual(['ann@peer.test', 'bob@peer.test']);
      expect(delivered(id)[0]).toMatchObject({ workspace_id: acme.workspaceId, data: { status: '2.0.0' } });
    });

    it('without it, the envelope carries no DSN parameters, the view says false, and the receiver reports nothing', async () => {
      const id = await send({ to: 'plain@peer.test' });
      const { view, mails } = await accepted(id);
      expect(view.delivery_notification).toBe(false);
      expect(mails).toHaveLength(1);
      expect(Object.keys(mails[0]!.mailParams).filter((k) => DSN_MAIL_PARAMS.includes(k))).toEqual([]);
      expect(mails[0]!.rcptParams).toEqual([{}]);
      expect(await reportDeliveries(world, mails[0]!)).toBe(0);
      // The sent list shows the option as the message view does.
      const owner = await world.ownerSession(acme);
      const sent = (await world.h.app.inject({ method: 'GET', url: '/app/api/sent', headers: session(owner) })).json<{ messages: MessageView[] }>().messages;
      expect(sent.find((m) => m.message_id === id)?.delivery_notification).toBe(false);
    });

    it('the transactional API takes the option too, and its message view shows it', async () => {
      const owner = await world.ownerSession(acme);
      const created = (await world.h.app.inject({ method: 'POST', url: '/app/api/sending-domains', headers: session(owner), payload: { domain: 'acme.test' } })).json<{ domain_id: string; verification: { record_name: string; record_value: string } }>();
      world.dns(created.verification.record_name, { TXT: [created.verification.record_value] });
      expect((await world.h.app.inject({ method: 'POST', url: `/app/api/sending-domains/${created.domain_id}/verify`, headers: session(owner) })).json()).toMatchObject({ status: 'verified' });
      await world.mailbox(acme, 'codes@acme.test');
      const token = (await world.h.app.inject({ method: 'POST', url: '/app/api/service-tokens', headers: session(owner), payload: { name: 'codes', domain_id: created.domain_id, mailbox: 'codes@acme.test' } })).json<{ token: string }>().token;
      const res = await world.h.app.inject({
        method: 'POST',
        url: '/v1/transactional/messages',
        headers: { ...bearer(token), 'idempotency-key': 'dsn-1' },
        payload: { from_mailbox: 'codes@acme.test', to: 'code@peer.test', subject: 'Code', body: '123456', delivery_notification: true },
      });
      expect(res.statusCode, res.body).toBe(202);
      const id = res.json<{ message_id: string }>().message_id;
      const { mails } = await accepted(id);
      expect(mails[0]).toMatchObject({ mailParams: { RET: 'HDRS', ENVID: id }, rcptParams: [{ NOTIFY: 'SUCCESS,FAILURE' }] });
      const status = (await world.h.app.inject({ method: 'GET', url: `/v1/transactional/messages/${id}`, headers: bearer(token) })).json<{ delivery_notification: boolean }>();
      expect(status.delivery_notification).toBe(true);
      const refused = await world.h.app.inject({ method: 'POST', url: '/send', headers: bearer(acme.apiKey), payload: { from_mailbox: FROM, to: 'x@peer.test', subject: 'Hi', body: 'Hello', delivery_notification: 'yes' } });
      expect(refused.statusCode).toBe(400);
    });
  });

  describe('a receiver without DSN', () => {
    // smtp-server, as the peer runs it by default, leaves DSN out of its EHLO answer.
    const world = mailWorld();
    let acme: Tenant;
    const { send, accepted } = sender(world, () => acme);

    beforeAll(async () => {
      acme = await world.tenant('Acme', [FROM]);
    });

    it('still takes a send with delivery_notification, given a plain envelope', async () => {
      const id = await send({ to: 'old@peer.test', delivery_notification: true });
      const { view, mails } = await accepted(id);
      expect(view.delivery_notification).toBe(true);
      expect(view.attempts?.map((a) => a.outcome)).toEqual(['sent']);
      expect(mails).toHaveLength(1);
      expect(Object.keys(mails[0]!.mailParams).filter((k) => DSN_MAIL_PARAMS.includes(k))).toEqual([]);
      expect(mails[0]!.rcptParams).toEqual([{}]);
    });
  });
});
