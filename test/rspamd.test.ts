// Content scoring of inbound mail by a real rspamd (a private instance on loopback: helpers/rspamd.ts), over real SMTP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorker, type Worker } from '../src/jobs/worker.js';
import { createLogger } from '../src/lib/logger.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, login, session, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';
import { freePort } from './helpers/ports.js';
import { hasRspamd, RSPAMD_MISSING, RSPAMD_PASSWORD, startRspamd, type RspamdPeer } from './helpers/rspamd.js';

/** The GTUBE test string: rspamd answers `reject` for any message carrying it. */
const GTUBE = 'XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X';
/** Enough ordinary words for rspamd's classifier to learn from (it wants at least 11 tokens). */
const PROSE =
  'Dear team, the quarterly planning meeting moves to Thursday afternoon in the large conference room. Please bring ' +
  'your project updates, budget notes and the revised delivery schedule for the warehouse migration. Lunch is provided.';

interface SpamView {
  score: number;
  action: string;
  symbols: Array<{ name: string; score: number }>;
}
interface MessageBody {
  message_id: string;
  folder: string;
  spam: SpamView | null;
}

function rawMessage(from: string, to: string, subject: string, body: string, messageId = `${Math.random().toString(36).slice(2)}@sender.test`): string {
  return [`From: <${from}>`, `To: <${to}>`, `Subject: ${subject}`, `Message-ID: <${messageId}>`, 'Date: Sat, 21 Nov 2026 12:00:00 +0000', 'MIME-Version: 1.0', 'Content-Type: text/plain; charset=utf-8', '', body, ''].join('\r\n');
}

/** A workspace with one mailbox, on a harness of its own settings. */
async function sceneOn(h: MailHarness, name: string): Promise<{ tenant: Tenant; mailbox: string }> {
  const tenant = await createTenant(h, name);
  const mailbox = `${name.toLowerCase()}@mailroom.localhost`;
  expect((await h.app.inject({ method: 'POST', url: `/mailboxes?address=${mailbox}`, headers: bearer(tenant.apiKey) })).statusCode).toBe(201);
  return { tenant, mailbox };
}

async function messageOf(h: MailHarness, tenant: Tenant, reply: string): Promise<MessageBody> {
  const id = /Stored as (\S+)/.exec(reply)?.[1];
  expect(id, reply).toBeDefined();
  const res = await h.app.inject({ method: 'GET', url: `/messages/${id}`, headers: bearer(tenant.apiKey) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<MessageBody>();
}

/** The SMTP reply to a message: `250 …` when stored, else the refusal's code and text. */
async function sendRaw(h: MailHarness, raw: string, from: string, to: string): Promise<string> {
  try {
    return (await h.sendRaw(raw, { from, to: [to] })).response;
  } catch (err) {
    return (err as { response?: string }).response ?? String(err);
  }
}

describe.skipIf(!hasRspamd())(`content scoring with rspamd (${TEST_DIALECT})`, () => {
  let rspamd: RspamdPeer;
  let h: MailHarness;
  let acme: { tenant: Tenant; mailbox: string };

  beforeAll(async () => {
    rspamd = await startRspamd();
    h = await startMailHarness({ MAILROOM_RSPAMD_URL: rspamd.url, MAILROOM_RSPAMD_CONTROLLER_URL: rspamd.controllerUrl, MAILROOM_RSPAMD_PASSWORD: RSPAMD_PASSWORD });
    acme = await sceneOn(h, 'Acme');
  }, 200_000);

  afterAll(async () => {
    await h?.close();
    await rspamd?.stop();
  });

  it('refuses GTUBE with 550 5.7.1 at the end of DATA and stores nothing', async () => {
    const reply = await sendRaw(h, rawMessage('spammer@sender.test', acme.mailbox, 'Cheap offer', `Buy now.\r\n${GTUBE}`), 'spammer@sender.test', acme.mailbox);
    expect(reply).toMatch(/^550 5\.7\.1 /);
    const res = await h.app.inject({ method: 'GET', url: `/mailboxes/${acme.mailbox}`, headers: bearer(acme.tenant.apiKey) });
    expect(res.json<{ message_count: number }>().message_count).toBe(0);
  });

  it('stores a clean message with its score, action and top symbols', async () => {
    const reply = await sendRaw(h, rawMessage('colleague@sender.test', acme.mailbox, 'Planning meeting', PROSE), 'colleague@sender.test', acme.mailbox);
    expect(reply).toMatch(/^250 /);
    const message = await messageOf(h, acme.tenant, reply);
    expect(message.spam).not.toBeNull();
    expect(message.spam!.action).toBe('no action');
    expect(typeof message.spam!.score).toBe('number');
    expect(message.spam!.symbols.length).toBeLessThanOrEqual(10);
    expect(message.folder).toBe('inbox');
    // The session surface shows the same view.
    const token = await login(h, acme.tenant.ownerEmail, acme.tenant.password);
    const viaSession = await h.app.inject({ method: 'GET', url: `/app/api/messages/${message.message_id}`, headers: session(token) });
    expect(viaSession.json<MessageBody>().spam).toEqual(message.spam);
  });

  it("lets a workspace's allow list win over rspamd's reject", async () => {
    const scene = await sceneOn(h, 'Allowing');
    const token = await login(h, scene.tenant.ownerEmail, scene.tenant.password);
    const added = await h.app.inject({ method: 'POST', url: '/app/api/lists/inbound/allow', headers: session(token), payload: { entry: 'friend@sender.test' } });
    expect(added.statusCode, added.body).toBe(201);
    const reply = await sendRaw(h, rawMessage('friend@sender.test', scene.mailbox, 'Test string', `Our filter test.\r\n${GTUBE}`), 'friend@sender.test', scene.mailbox);
    expect(reply).toMatch(/^250 /);
    const message = await messageOf(h, scene.tenant, reply);
    // Not scored at all: every recipient allow-lists the sender.
    expect(message).toMatchObject({ folder: 'inbox', spam: null });
  });

  it('teaches rspamd through the queue when a message is moved into spam', async () => {
    const messageId = `digest-${Date.now()}@sender.test`;
    const reply = await sendRaw(h, rawMessage('newsletter@sender.test', acme.mailbox, 'Weekly digest', `${PROSE} ${PROSE}`, messageId), 'newsletter@sender.test', acme.mailbox);
    expect(reply).toMatch(/^250 /);
    const message = await messageOf(h, acme.tenant, reply);
    const before = (await rspamd.stat()).learned;
    const moved = await h.app.inject({ method: 'POST', url: `/messages/${message.message_id}/spam`, headers: bearer(acme.tenant.apiKey) });
    expect(moved.statusCode, moved.body).toBe(200);
    // The controller counts a lesson it kept (`learned`) and logs each one it was given with the message's id; its
    // sqlite statistics may answer "already learned" when two of its processes touched them at once, which still
    // shows the lesson arrived.
    const lessonLogged = async () => (await rspamd.log()).split('\n').some((line) => line.includes('(controller)') && line.includes(messageId) && /learn/i.test(line));
    const arrived = async () => (await rspamd.stat()).learned > before || (await lessonLogged());
    const worker: Worker = createWorker(h.services.handlers, { queue: h.services.queue, logger: createLogger('silent'), leaseMs: h.config.leaseMs, pollMs: 20 });
    worker.start();
    try {
      for (let i = 0; i < 300 && !(await arrived()); i++) await new Promise((r) => setTimeout(r, 100));
    } finally {
      await worker.stop(2000);
    }
    expect(await arrived(), await rspamd.log()).toBe(true);
  }, 60_000);
});

// No rspamd needed: the URL names a closed port.
describe(`rspamd unavailable (${TEST_DIALECT})`, () => {
  const scoring = async (onError: string, check: (h: MailHarness, scene: { tenant: Tenant; mailbox: string }) => Promise<void>) => {
    // Nothing listens on a port just freed: every check fails at once.
    const url = `http://127.0.0.1:${await freePort()}`;
    const h = await startMailHarness({ MAILROOM_RSPAMD_URL: url, MAILROOM_RSPAMD_ON_ERROR: onError, MAILROOM_METRICS_PORT: '0' });
    try {
      await check(h, await sceneOn(h, 'Down'));
    } finally {
      await h.close();
    }
  };

  it('answers 451 4.7.1 with tempfail, counts the error, and stores nothing', async () => {
    await scoring('tempfail', async (h, scene) => {
      const reply = await sendRaw(h, rawMessage('someone@sender.test', scene.mailbox, 'Hello', PROSE), 'someone@sender.test', scene.mailbox);
      expect(reply).toMatch(/^451 4\.7\.1 /);
      expect((await h.services.metrics.scrape()).body).toContain('mailroom_rspamd_errors_total{operation="check"} 1');
      const res = await h.app.inject({ method: 'GET', url: `/mailboxes/${scene.mailbox}`, headers: bearer(scene.tenant.apiKey) });
      expect(res.json<{ message_count: number }>().message_count).toBe(0);
    });
  });

  it('stores the message unscored with accept', async () => {
    await scoring('accept', async (h, scene) => {
      const reply = await sendRaw(h, rawMessage('someone@sender.test', scene.mailbox, 'Hello', PROSE), 'someone@sender.test', scene.mailbox);
      expect(reply).toMatch(/^250 /);
      expect(await messageOf(h, scene.tenant, reply)).toMatchObject({ folder: 'inbox', spam: null });
      expect((await h.services.metrics.scrape()).body).toContain('mailroom_rspamd_errors_total{operation="check"} 1');
    });
  });
});

if (!hasRspamd()) describe.skip(`content scoring with rspamd: ${RSPAMD_MISSING}`, () => undefined);
