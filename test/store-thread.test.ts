import { threadId as mainThreadId } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/lib/logger.js';
import type { AnalyzedDelivery, Recipient } from '../src/modules/messages/inbound.service.js';
import { createStoreThread } from '../src/modules/messages/store-thread.js';
import { WEBHOOK_QUEUE } from '../src/modules/webhooks/webhook.types.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, memberSession, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';
import { webhookApi } from './helpers/webhooks.js';

const MAILBOX = 'stored@mailroom.localhost';

/** A delivery as the SMTP thread hands it over: the recipient checked, the message analysed. */
async function analyzed(h: MailHarness, n: number): Promise<AnalyzedDelivery> {
  const envelope = { mailFrom: 'alice@sender.test', remoteIp: '127.0.0.1', helo: 'client.test' };
  const verdict = await h.services.inbound.checkRecipient(MAILBOX, envelope);
  if (!verdict.ok) throw new Error(verdict.detail);
  const recipients: Recipient[] = [verdict.recipient];
  const raw = Buffer.from(`From: alice@sender.test\r\nTo: ${MAILBOX}\r\nSubject: direct ${n}\r\nMessage-ID: <direct.${n}.${Date.now()}@sender.test>\r\n\r\nBody ${n}\r\n`);
  const analysis = await h.services.analyzer.analyze(raw, { ip: envelope.remoteIp, helo: envelope.helo, sender: envelope.mailFrom });
  return { raw, envelope, recipients, analysis };
}

describe(`inbound mail stored on the smtp role's store thread (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let acme: Tenant;

  const storedIds = async () =>
    (await h.services.database.db.selectFrom('messages').select('id').where('workspace_id', '=', acme.workspaceId).execute()).map((r) => r.id).sort();
  const receivedEventIds = async () =>
    (await h.services.database.db.selectFrom('events').select('payload').where('workspace_id', '=', acme.workspaceId).where('type', '=', 'message.received').execute())
      .map((r) => (JSON.parse(r.payload) as { data: { message_id: string } }).data.message_id)
      .sort();
  const idsOf = (response: string) => /Stored as (.+)$/.exec(response)![1]!.split(', ');

  beforeAll(async () => {
    h = await startMailHarness({ MAILROOM_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' }, { storeThread: true });
    acme = await createTenant(h, 'Acme');
    expect((await h.app.inject({ method: 'POST', url: `/mailboxes?address=${MAILBOX}`, headers: bearer(acme.apiKey) })).statusCode).toBe(201);
    const owner = await memberSession(h, acme.workspaceId, 'owner');
    // An active endpoint: message.received then enqueues a webhook job in the storing transaction.
    await webhookApi(h, owner.token).add({ url: 'http://127.0.0.1:9/hook', event_types: ['message.received'] });
  });
  afterAll(async () => h.close());

  it('stores on another thread: each 250 names its stored copy, message.received is emitted for it, and job wake-ups reach this thread', async () => {
    const wakes: string[] = [];
    const unsubscribe = h.services.wakeups.subscribe((queue) => wakes.push(queue));
    const replies = await Promise.all(
      Array.from({ length: 12 }, (_, i) => h.send({ from: 'alice@sender.test', to: MAILBOX, subject: `Threaded ${i}`, text: `Message ${i}` })),
    );
    unsubscribe();
    for (const info of replies) expect(info.response).toMatch(/^250 2\.0\.0 Stored as msg_/);
    const ids = replies.flatMap((info) => idsOf(info.response)).sort();
    expect(ids).toHaveLength(12);
    expect(await storedIds()).toEqual(ids);
    expect(await receivedEventIds()).toEqual(ids);
    expect(h.services.storeThread!.threadId).not.toBeNull();
    expect(h.services.storeThread!.threadId).not.toBe(mainThreadId);
    // The jobs were enqueued on the store thread; a worker role runs here and must hear of them.
    expect(wakes).toContain(WEBHOOK_QUEUE);
    const subjects = await h.services.database.db.selectFrom('messages').select('subject').where('id', 'in', ids).execute();
    expect(subjects.map((r) => r.subject).sort()).toEqual(Array.from({ length: 12 }, (_, i) => `Threaded ${i}`).sort());
  });

  it('writes of this thread made meanwhile wait their turn, and none fails', async () => {
    const before = (await storedIds()).length;
    const [replies, created] = await Promise.all([
      Promise.all(Array.from({ length: 15 }, (_, i) => h.send({ from: 'bob@sender.test', to: MAILBOX, subject: `Busy ${i}`, text: 'x' }))),
      Promise.all(Array.from({ length: 15 }, (_, i) => h.app.inject({ method: 'POST', url: `/mailboxes?address=busy${i}@mailroom.localhost`, headers: bearer(acme.apiKey) }))),
    ]);
    for (const info of replies) expect(info.response).toMatch(/^250 /);
    expect(created.map((r) => r.statusCode)).toEqual(Array.from({ length: 15 }, () => 201));
    expect((await storedIds()).length).toBe(before + 15);
  });

  it('closing lets the deliveries under way finish, and refuses later ones', async () => {
    const thread = h.services.storeThread!;
    const deliveries = await Promise.all(Array.from({ length: 5 }, (_, i) => analyzed(h, i)));
    const before = await storedIds();
    const stored = deliveries.map((d) => thread.store(d));
    await thread.close();
    const ids = (await Promise.all(stored)).flat();
    expect(ids).toHaveLength(5);
    expect(await storedIds()).toEqual([...before, ...ids].sort());
    expect(thread.threadId).toBeNull();
    await expect(thread.store(await analyzed(h, 9))).rejects.toThrow(/closing/);
  });
});

describe(`a store thread that dies (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let acme: Tenant;
  beforeAll(async () => {
    h = await startMailHarness({}, { storeThread: true });
    acme = await createTenant(h, 'Acme');
    expect((await h.app.inject({ method: 'POST', url: `/mailboxes?address=${MAILBOX}`, headers: bearer(acme.apiKey) })).statusCode).toBe(201);
  });
  afterAll(async () => h.close());

  it('starts before the first delivery when asked, and says so when it cannot start', async () => {
    expect(h.services.storeThread!.threadId).toBeNull();
    await h.services.storeThread!.start();
    expect(h.services.storeThread!.threadId).not.toBeNull();
    const broken = createStoreThread({ config: { ...h.config, databaseUrl: 'sqlite:/etc/hostname/mailroom.db' }, writeLock: null, logger: createLogger('silent'), onWake: () => undefined });
    await expect(broken.start()).rejects.toThrow(/could not start: .*EEXIST/);
    expect(broken.threadId).toBeNull();
  });

  it('fails only the deliveries it held (451: nothing acknowledged is lost), and the next delivery starts a new thread', async () => {
    const first = await h.send({ from: 'alice@sender.test', to: MAILBOX, subject: 'Before', text: 'x' });
    expect(first.response).toMatch(/^250 /);
    const thread = h.services.storeThread!;
    const dead = thread.threadId;
    const held = thread.store(await analyzed(h, 1));
    await thread.terminate();
    expect(thread.threadId).toBeNull();
    // Killed before it could answer: failed (the SMTP thread answers 451); had it answered, the copy would be stored.
    const outcome = await held.then(
      (ids) => ({ ids }),
      (err: Error) => ({ error: err.message }),
    );
    if ('ids' in outcome) expect(await h.services.database.db.selectFrom('messages').select('id').where('id', 'in', outcome.ids).execute()).toHaveLength(1);
    else expect(outcome.error).toMatch(/stopped/);
    // This thread's writes go on (on SQLite the dead thread might have held the write lock: it was given up).
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes?address=after@mailroom.localhost', headers: bearer(acme.apiKey) })).statusCode).toBe(201);
    const next = await h.send({ from: 'alice@sender.test', to: MAILBOX, subject: 'After', text: 'y' });
    expect(next.response).toMatch(/^250 /);
    expect(thread.threadId).not.toBeNull();
    expect(thread.threadId).not.toBe(dead);
    const subjects = await h.services.database.db.selectFrom('messages').select('subject').where('workspace_id', '=', acme.workspaceId).execute();
    expect(subjects.map((r) => r.subject).filter((subject) => subject !== 'direct 1').sort()).toEqual(['After', 'Before']);
  });
});
