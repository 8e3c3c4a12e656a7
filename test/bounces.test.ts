import { beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, type Tenant } from './helpers/harness.js';
import type { MailHarness } from './helpers/mail.js';
import { arf, dsn } from './helpers/reports.js';
import type { SmtpPeer } from './helpers/smtp-peer.js';
import { mailWorld } from './helpers/world.js';

describe(`bounces and complaints (${TEST_DIALECT})`, () => {
  const world = mailWorld({ mx: [], a: ['peer.test'] });
  let h: MailHarness;
  let peer: SmtpPeer;
  let acme: Tenant;

  beforeAll(async () => {
    ({ h, peer } = world);
    acme = await world.tenant();
    await h.app.inject({ method: 'POST', url: '/mailboxes?address=sender@mailroom.localhost', headers: bearer(acme.apiKey) });
  });

  async function sendAndDeliver(to: string): Promise<string> {
    const res = await h.app.inject({ method: 'POST', url: '/send', headers: bearer(acme.apiKey), payload: { from_mailbox: 'sender@mailroom.localhost', to, subject: 'Hi', body: 'hello' } });
    const id = res.json<{ message_id: string }>().message_id;
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      if ((await world.message(acme, id))?.status === 'accepted') return id;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error('not delivered');
  }
  const events = async (type: string) => Promise.resolve(world.events(type));
  const messageCount = () => world.messageCount();

  it('matches a DSN sent to the VERP address to its message and emits message.bounced, storing no mail', async () => {
    const id = await sendAndDeliver('lost@peer.test');
    const verp = h.services.returnPaths.address(id, 0);
    expect(verp).toMatch(/^bounces\+msg_[0-9a-z]{26}\.0-[0-9a-f]{12}@mailroom\.localhost$/);
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
    const verp = h.services.returnPaths.address(id, 0);
    await h.sendRaw(arf(verp, 'annoyed@peer.test'), { from: 'feedback@isp.test', to: [verp] });
    const complained = (await events('message.complained')).filter((e) => e.data.message_id === id);
    expect(complained).toHaveLength(1);
    expect(complained[0]!.data).toMatchObject({ recipient: 'annoyed@peer.test', reason: 'abuse' });
  });

  it('refuses a return address that names no message', async () => {
    const verp = h.services.returnPaths.address('msg_01jd0000000000000000000000', 0);
    await expect(h.sendRaw(dsn(verp, 'x@peer.test'), { from: '', to: [verp] })).rejects.toMatchObject({ responseCode: 550 });
  });

  describe('forged reports', () => {
    it('refuses at RCPT, with 550 5.1.1, a return address whose tag does not verify', async () => {
      const id = await sendAndDeliver('target@peer.test');
      const real = h.services.returnPaths.address(id, 0);
      const tag = /-([0-9a-f]{12})@/.exec(real)![1]!;
      const wrongTag = real.replace(`-${tag}@`, `-${tag.slice(0, 11)}${tag.endsWith('0') ? '1' : '0'}@`);
      // Today's form without a tag, a wrong tag, a tag of another message, a truncated tag, the tag of another recipient's
      // place, and the whole-message form (of mail sent before return paths named a recipient) with this one's tag.
      const other = h.services.returnPaths.address('msg_01jd0000000000000000000000', 0);
      const forged = [
        `bounces+${id}@mailroom.localhost`,
        wrongTag,
        real.replace(id, 'msg_01jd0000000000000000000000'),
        other.replace('msg_01jd0000000000000000000000', id),
        real.replace(`-${tag}@`, `-${tag.slice(0, 8)}@`),
        real.replace(`${id}.0-`, `${id}.1-`),
        real.replace(`${id}.0-`, `${id}-`),
      ];
      for (const address of forged) {
        const refused = await h.sendRaw(dsn(address, 'target@peer.test'), { from: '', to: [address] }).then(
          () => null,
          (err: { responseCode?: number; response?: string }) => err,
        );
        expect(refused, address).toMatchObject({ responseCode: 550 });
        expect(refused!.response, address).toMatch(/^550 5\.1\.1 /);
      }
      expect((await events('message.bounced')).filter((e) => e.data.message_id === id)).toHaveLength(0);
    });

    it('accepts the tag in upper case (some MTAs change the case of local parts)', async () => {
      const id = await sendAndDeliver('upper@peer.test');
      const verp = h.services.returnPaths.address(id, 0).toUpperCase();
      const info = await h.sendRaw(dsn(verp, 'upper@peer.test'), { from: '', to: [verp] });
      expect(info.response).toMatch(/^250 /);
      expect((await events('message.bounced')).filter((e) => e.data.message_id === id)).toHaveLength(1);
    });

    it('a DSN naming an address the message was never sent to changes nothing', async () => {
      const id = await sendAndDeliver('real@peer.test');
      const verp = h.services.returnPaths.address(id, 0);
      const info = await h.sendRaw(dsn(verp, 'stranger@peer.test'), { from: '', to: [verp] });
      expect(info.response).toMatch(/^250 /);
      expect((await events('message.bounced')).filter((e) => e.data.message_id === id)).toHaveLength(0);
      const view = await world.message(acme, id);
      expect(view?.status).toBe('accepted');
      expect(view?.recipients).toEqual([expect.objectContaining({ address: 'real@peer.test', status: 'accepted' })]);
    });

    it('a DSN whose forwarder changed the final recipient counts by its Original-Recipient', async () => {
      const id = await sendAndDeliver('alias@peer.test');
      const verp = h.services.returnPaths.address(id, 0);
      const forwarded = dsn(verp, 'target@elsewhere.test').replace('Final-Recipient:', 'Original-Recipient: rfc822; alias@peer.test\r\nFinal-Recipient:');
      await h.sendRaw(forwarded, { from: '', to: [verp] });
      const bounced = (await events('message.bounced')).filter((e) => e.data.message_id === id);
      expect(bounced.map((e) => e.data.recipient)).toEqual(['alias@peer.test']);
    });

    it('an ARF naming an address the message was never sent to changes nothing', async () => {
      const id = await sendAndDeliver('kept@peer.test');
      const verp = h.services.returnPaths.address(id, 0);
      await h.sendRaw(arf(verp, 'stranger@peer.test'), { from: 'feedback@isp.test', to: [verp] });
      expect((await events('message.complained')).filter((e) => e.data.message_id === id)).toHaveLength(0);
    });

    it("an ARF that names nobody, to one recipient's return path of a message sent to several, is that recipient's complaint", async () => {
      const id = await sendAndDeliver('first@peer.test, second@peer.test');
      const verp = h.services.returnPaths.address(id, 1);
      await h.sendRaw(arf(verp, ''), { from: 'feedback@isp.test', to: [verp] });
      const complained = (await events('message.complained')).filter((e) => e.data.message_id === id);
      expect(complained.map((e) => e.data.recipient)).toEqual(['second@peer.test']);
    });

    it('an ARF that names no recipient is the complaint of the only recipient (decision 208)', async () => {
      const id = await sendAndDeliver('only@peer.test');
      const verp = h.services.returnPaths.address(id, 0);
      await h.sendRaw(arf(verp, '').replace('Original-Rcpt-To: \r\n', ''), { from: 'feedback@isp.test', to: [verp] });
      const complained = (await events('message.complained')).filter((e) => e.data.message_id === id);
      expect(complained.map((e) => e.data.recipient)).toEqual(['only@peer.test']);
    });

    describe('a return path per recipient', () => {
      const suppressed = (address: string) => world.suppressed(acme, address);
      /** The whole-message return path messages had before return paths named a recipient. */
      const wholeMessage = (id: string) => `bounces+${id}-${h.services.secretBox.tag(id, 12)}@mailroom.localhost`;

      it("a co-recipient's DSN to their own return path naming another recipient suppresses nothing; a real one suppresses its own", async () => {
        const id = await sendAndDeliver('alice@peer.test, bob@peer.test');
        const [alicePath, bobPath] = [h.services.returnPaths.address(id, 0), h.services.returnPaths.address(id, 1)];
        // One transaction per recipient, each with its own envelope sender.
        const copies = peer.accepted.filter((m) => m.raw.includes(`<${id}@`)).map((m) => [m.mailFrom, m.recipients]);
        expect(copies.sort()).toEqual([[alicePath, ['alice@peer.test']], [bobPath, ['bob@peer.test']]].sort());
        // Alice forges a hard bounce and a complaint for Bob, to the return path she received.
        expect((await h.sendRaw(dsn(alicePath, 'bob@peer.test'), { from: '', to: [alicePath] })).response).toMatch(/^250 /);
        await h.sendRaw(arf(alicePath, 'bob@peer.test'), { from: 'feedback@isp.test', to: [alicePath] });
        expect((await events('message.bounced')).filter((e) => e.data.message_id === id)).toHaveLength(0);
        expect((await events('message.complained')).filter((e) => e.data.message_id === id)).toHaveLength(0);
        expect(await suppressed('bob@peer.test')).toBe(false);
        // Her real bounce still counts for her.
        await h.sendRaw(dsn(alicePath, 'alice@peer.test'), { from: '', to: [alicePath] });
        expect((await events('message.bounced')).filter((e) => e.data.message_id === id).map((e) => e.data.recipient)).toEqual(['alice@peer.test']);
        expect(await suppressed('alice@peer.test')).toBe(true);
        expect(await suppressed('bob@peer.test')).toBe(false);
        // The whole-message form, even with its right tag, is no address of a message sent with per-recipient ones.
        await expect(h.sendRaw(dsn(wholeMessage(id), 'bob@peer.test'), { from: '', to: [wholeMessage(id)] })).rejects.toMatchObject({ responseCode: 550 });
        expect(await suppressed('bob@peer.test')).toBe(false);
      });

      it('a message sent before return paths named a recipient keeps its whole-message return path for every recipient', async () => {
        const id = await sendAndDeliver('carol@peer.test, dave@peer.test');
        // As such a message was stored: its one return path in mail_from.
        await h.services.database.db.updateTable('outbound').set({ mail_from: wholeMessage(id) }).where('message_id', '=', id).execute();
        await h.sendRaw(dsn(wholeMessage(id), 'dave@peer.test'), { from: '', to: [wholeMessage(id)] });
        expect((await events('message.bounced')).filter((e) => e.data.message_id === id).map((e) => e.data.recipient)).toEqual(['dave@peer.test']);
        expect(await suppressed('dave@peer.test')).toBe(true);
        // A complaint naming nobody among several is nobody's (decision 330), as before.
        await h.sendRaw(arf(wholeMessage(id), ''), { from: 'feedback@isp.test', to: [wholeMessage(id)] });
        expect((await events('message.complained')).filter((e) => e.data.message_id === id).map((e) => e.data.recipient)).toEqual([null]);
      });

      it('such a message still waiting to be sent goes out with its one return path, in one transaction per domain', async () => {
        const sendAt = h.clock.now() + 60_000;
        const res = await h.app.inject({ method: 'POST', url: '/send', headers: bearer(acme.apiKey), payload: { from_mailbox: 'sender@mailroom.localhost', to: 'erin@peer.test, frank@peer.test', subject: 'Later', body: 'x', send_at: new Date(sendAt).toISOString() } });
        const id = res.json<{ message_id: string }>().message_id;
        await h.services.database.db.updateTable('outbound').set({ mail_from: wholeMessage(id) }).where('message_id', '=', id).execute();
        h.clock.advance(61_000);
        await expect.poll(async () => (await world.message(acme, id))?.status, { timeout: 10_000 }).toBe('accepted');
        const copies = peer.accepted.filter((m) => m.raw.includes(`<${id}@`));
        expect(copies.map((m) => [m.mailFrom, [...m.recipients].sort()])).toEqual([[wholeMessage(id), ['erin@peer.test', 'frank@peer.test']]]);
      });
    });
  });
});
