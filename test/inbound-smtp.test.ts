import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, memberSession, session, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';
import { webhookApi } from './helpers/webhooks.js';
import { recordEvents, type RecordedEvents } from './helpers/world.js';
import { WEBHOOK_QUEUE } from '../src/modules/webhooks/webhook.types.js';

interface ListBody {
  messages: Array<Record<string, unknown> & { message_id: string; thread_id: string; subject: string; attachments: Array<{ attachment_id: string; filename: string; content_type: string; size: number; inline: boolean; content_id?: string | null }> }>;
  total: number;
  limit: number;
  offset: number;
}

describe(`inbound SMTP into hosted mailboxes (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  /** Events the service emits, recorded through its events service. */
  let recorded: RecordedEvents;
  let acme: Tenant;
  let other: Tenant;
  let acmeSession: string;

  const inbox = async (mailbox: string, key = acme.apiKey, query = '') => {
    const res = await h.app.inject({ method: 'GET', url: `/inbox?mailbox=${encodeURIComponent(mailbox)}${query}`, headers: bearer(key) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<ListBody>();
  };

  beforeAll(async () => {
    h = await startMailHarness({ MAILROOM_SMTP_MAX_SIZE: String(200 * 1024) });
    recorded = recordEvents(h.services);
    acme = await createTenant(h, 'Acme');
    other = await createTenant(h, 'Other');
    acmeSession = (await memberSession(h, acme.workspaceId, 'member')).token;
    for (const address of ['helpdesk@mailroom.localhost', 'orders@mailroom.localhost', 'threads@mailroom.localhost', 'threads2@mailroom.localhost', 'lists@mailroom.localhost', 'org@mailroom.localhost']) {
      expect((await h.app.inject({ method: 'POST', url: `/mailboxes?address=${address}`, headers: bearer(acme.apiKey) })).statusCode).toBe(201);
    }
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes?address=elsewhere@mailroom.localhost', headers: bearer(other.apiKey) })).statusCode).toBe(201);
  });
  afterAll(async () => h.close());

  it('stores a plain message and lists it in the inbox', async () => {
    const info = await h.send({ from: 'Alice Example <alice@sender.test>', to: 'Helpdesk@Mailroom.Localhost', subject: 'Hello there', text: 'First line\nSecond line' });
    expect(info.response).toMatch(/^250 2\.0\.0 Stored as msg_/);
    const page = await inbox('helpdesk@mailroom.localhost');
    expect(page.total).toBe(1);
    const [message] = page.messages;
    expect(message).toMatchObject({
      mailbox: 'helpdesk@mailroom.localhost',
      direction: 'inbound',
      folder: 'inbox',
      read: false,
      labels: [],
      from: { name: 'Alice Example', address: 'alice@sender.test' },
      to: [{ name: '', address: 'helpdesk@mailroom.localhost' }],
      subject: 'Hello there',
      snippet: 'First line Second line',
    });
    const full = await h.app.inject({ method: 'GET', url: `/messages/${message!.message_id}`, headers: bearer(acme.apiKey) });
    expect(full.json()).toMatchObject({ text: 'First line\nSecond line\n', html: null });
    const headers = full.json<{ headers: Array<{ name: string; value: string }> }>().headers;
    expect(headers.slice(0, 2).map((x) => x.name)).toEqual(['Received-SPF', 'Authentication-Results']);
    expect(headers[1]?.value).toMatch(/^mx\.mailroom\.test; dkim=none .*spf=none .*dmarc=none/);
    expect(headers.find((x) => x.name.toLowerCase() === 'subject')?.value).toBe('Hello there');
  });

  it('emits message.received in the same transaction as the message', async () => {
    const info = await h.send({ from: 'bob@sender.test', to: 'orders@mailroom.localhost', subject: 'Event check', text: 'x' });
    const id = /Stored as (msg_\w+)/.exec(info.response)![1]!;
    const event = recorded.events('message.received').find((e) => e.data.message_id === id);
    expect(event).toMatchObject({ event_type: 'message.received', workspace_id: acme.workspaceId, data: { message_id: id, mailbox: 'orders@mailroom.localhost' } });
  });

  it('keeps text and html of multipart/alternative and decodes non-UTF-8 charsets', async () => {
    await h.send({ from: 'carol@sender.test', to: 'orders@mailroom.localhost', subject: 'Alt', text: 'plain body', html: '<p>html <b>body</b></p>' });
    const latin1 = [
      'From: =?ISO-8859-1?Q?Ren=E9?= <rene@sender.test>',
      'To: orders@mailroom.localhost',
      'Subject: =?ISO-8859-1?Q?Caf=E9_cr=E8me?=',
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=ISO-8859-1',
      'Content-Transfer-Encoding: 8bit',
      '',
      '',
    ].join('\r\n');
    await h.sendRaw(Buffer.concat([Buffer.from(latin1, 'latin1'), Buffer.from('Gr\xfc\xdfe aus K\xf6ln\r\n', 'latin1')]), { from: 'rene@sender.test', to: ['orders@mailroom.localhost'] });
    const page = await inbox('orders@mailroom.localhost');
    const alt = page.messages.find((m) => m.subject === 'Alt')!;
    const full = (await h.app.inject({ method: 'GET', url: `/messages/${alt.message_id}`, headers: bearer(acme.apiKey) })).json<{ text: string; html: string }>();
    expect(full.text.trim()).toBe('plain body');
    expect(full.html).toContain('<b>body</b>');
    const cafe = page.messages.find((m) => m.subject === 'Café crème')!;
    expect(cafe.from).toEqual({ name: 'René', address: 'rene@sender.test' });
    const cafeFull = (await h.app.inject({ method: 'GET', url: `/messages/${cafe.message_id}`, headers: bearer(acme.apiKey) })).json<{ text: string }>();
    expect(cafeFull.text.trim()).toBe('Grüße aus Köln');
  });

  it('round-trips attachment bytes exactly and marks inline images', async () => {
    const binary = randomBytes(100 * 1024);
    const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
    await h.send({
      from: 'dave@sender.test',
      to: 'helpdesk@mailroom.localhost',
      subject: 'Files',
      text: 'see attached',
      html: '<p>logo: <img src="cid:logo@sender.test"></p>',
      attachments: [
        { filename: 'report.bin', content: binary, contentType: 'application/octet-stream' },
        { filename: 'logo.png', content: png, contentType: 'image/png', cid: 'logo@sender.test' },
        { filename: 'naïve résumé.txt', content: 'unicode name', contentType: 'text/plain' },
      ],
    });
    const message = (await inbox('helpdesk@mailroom.localhost')).messages.find((m) => m.subject === 'Files')!;
    expect(message.attachments).toHaveLength(3);
    const report = message.attachments.find((a) => a.filename === 'report.bin')!;
    expect(report).toMatchObject({ content_type: 'application/octet-stream', size: binary.length, inline: false });
    const logo = message.attachments.find((a) => a.filename === 'logo.png')!;
    expect(logo).toMatchObject({ inline: true, content_id: 'logo@sender.test', size: png.length });

    const download = await h.app.inject({ method: 'GET', url: `/messages/${message.message_id}/attachments/${report.attachment_id}`, headers: bearer(acme.apiKey) });
    expect(download.statusCode).toBe(200);
    expect(download.rawPayload.equals(binary)).toBe(true);
    expect(download.headers['content-type']).toBe('application/octet-stream');
    expect(download.headers['content-disposition']).toBe('attachment; filename="report.bin"; filename*=UTF-8\'\'report.bin');
    expect(download.headers['x-content-type-options']).toBe('nosniff');

    const unicode = message.attachments.find((a) => a.filename === 'naïve résumé.txt')!;
    const viaSession = await h.app.inject({ method: 'GET', url: `/app/api/messages/${message.message_id}/attachments/${unicode.attachment_id}`, headers: session(acmeSession) });
    expect(viaSession.body).toBe('unicode name');
    expect(viaSession.headers['content-disposition']).toContain("filename*=UTF-8''na%C3%AFve%20r%C3%A9sum%C3%A9.txt");

    const listed = await h.app.inject({ method: 'GET', url: `/app/api/messages/${message.message_id}/attachments`, headers: session(acmeSession) });
    expect(listed.json<{ attachments: unknown[] }>().attachments).toEqual(message.attachments);

    const raw = await h.app.inject({ method: 'GET', url: `/messages/${message.message_id}/raw`, headers: bearer(acme.apiKey) });
    expect(raw.headers['content-type']).toBe('message/rfc822');
    expect(raw.body).toMatch(/^Received-SPF: none \(mx\.mailroom\.test: [^\n]*\r\nAuthentication-Results: mx\.mailroom\.test;/);
    expect(raw.body).toContain('Subject: Files');
  });

  it('delivers one transaction to many recipients, each a copy in its own workspace', async () => {
    const info = await h.send({ from: 'eve@sender.test', to: ['helpdesk@mailroom.localhost', 'elsewhere@mailroom.localhost'], subject: 'Broadcast', text: 'to both' });
    expect(info.accepted).toHaveLength(2);
    const mine = (await inbox('helpdesk@mailroom.localhost')).messages.find((m) => m.subject === 'Broadcast')!;
    const theirs = (await inbox('elsewhere@mailroom.localhost', other.apiKey)).messages.find((m) => m.subject === 'Broadcast')!;
    expect(mine.message_id).not.toBe(theirs.message_id);
    // Neither tenant sees the other's copy.
    expect((await h.app.inject({ method: 'GET', url: `/messages/${theirs.message_id}`, headers: bearer(acme.apiKey) })).statusCode).toBe(404);
    expect((await h.app.inject({ method: 'GET', url: `/messages/${mine.message_id}`, headers: bearer(other.apiKey) })).statusCode).toBe(404);
    expect((await h.app.inject({ method: 'GET', url: '/inbox?mailbox=elsewhere@mailroom.localhost', headers: bearer(acme.apiKey) })).statusCode).toBe(404);
  });

  it('refuses an unknown recipient at RCPT with 550 5.1.1', async () => {
    await expect(h.send({ from: 'x@sender.test', to: 'nobody@mailroom.localhost', subject: 'lost', text: 'x' })).rejects.toMatchObject({
      responseCode: 550,
      response: expect.stringContaining('5.1.1') as unknown,
    });
    // A good and a bad recipient: the good one still gets the mail.
    const info = await h.send({ from: 'x@sender.test', to: ['nobody@mailroom.localhost', 'helpdesk@mailroom.localhost'], subject: 'half', text: 'x' });
    expect(info.accepted).toEqual(['helpdesk@mailroom.localhost']);
    expect(info.rejected).toEqual(['nobody@mailroom.localhost']);
  });

  it('advertises and enforces the size limit with 552', async () => {
    await expect(
      h.send({ from: 'big@sender.test', to: 'helpdesk@mailroom.localhost', subject: 'too big', text: 'x'.repeat(300 * 1024) }),
    ).rejects.toMatchObject({ responseCode: 552 });
    expect((await inbox('helpdesk@mailroom.localhost')).messages.some((m) => m.subject === 'too big')).toBe(false);
  });

  it('threads a reply chain by References, and a reply that arrives before its parent', async () => {
    const base = { from: 'frank@sender.test', to: 'threads@mailroom.localhost' };
    await h.send({ ...base, subject: 'Project kickoff', text: '1', messageId: '<root@sender.test>' });
    await h.send({ ...base, subject: 'Re: Project kickoff', text: '2', messageId: '<reply1@sender.test>', inReplyTo: '<root@sender.test>', references: ['<root@sender.test>'] });
    // Different subject, but References ties it to the thread.
    await h.send({ ...base, subject: 'changed subject', text: '3', messageId: '<reply2@sender.test>', inReplyTo: '<reply1@sender.test>', references: ['<root@sender.test>', '<reply1@sender.test>'] });
    // The child arrives first, then its parent.
    await h.send({ ...base, subject: 'Re: Late parent', text: 'child', messageId: '<child@sender.test>', inReplyTo: '<parent@sender.test>', references: ['<parent@sender.test>'] });
    await h.send({ ...base, subject: 'Unrelated words', text: 'parent', messageId: '<parent@sender.test>' });
    // Same subject and a shared participant, no headers: joins by subject.
    await h.send({ from: 'frank@sender.test', to: 'threads@mailroom.localhost', subject: 'RE: project KICKOFF', text: '4' });
    // Same subject but strangers: a new thread.
    await h.send({ from: 'stranger@elsewhere.test', to: 'someone@else.test', bcc: 'threads@mailroom.localhost', subject: 'Project kickoff', text: '5' });

    const page = await inbox('threads@mailroom.localhost');
    const byText = async (text: string) => {
      for (const m of page.messages) {
        const full = (await h.app.inject({ method: 'GET', url: `/messages/${m.message_id}`, headers: bearer(acme.apiKey) })).json<{ text: string; thread_id: string }>();
        if (full.text.trim() === text) return full.thread_id;
      }
      throw new Error(`no message with text ${text}`);
    };
    const root = await byText('1');
    expect(await byText('2')).toBe(root);
    expect(await byText('3')).toBe(root);
    expect(await byText('4')).toBe(root);
    expect(await byText('parent')).toBe(await byText('child'));
    expect(await byText('5')).not.toBe(root);

    const thread = await h.app.inject({ method: 'GET', url: `/app/api/threads/${root}`, headers: session(acmeSession) });
    expect(thread.statusCode).toBe(200);
    const detail = thread.json<{ message_count: number; subject: string; messages: Array<{ subject: string }>; participants: string[] }>();
    expect(detail.message_count).toBe(4);
    expect(detail.subject).toBe('Project kickoff');
    expect(detail.messages.map((m) => m.subject)).toEqual(['Project kickoff', 'Re: Project kickoff', 'changed subject', 'RE: project KICKOFF']);
    expect(detail.participants).toEqual(['frank@sender.test', 'threads@mailroom.localhost']);
    const viaMessage = await h.app.inject({ method: 'GET', url: `/app/api/messages/${page.messages[0]!.message_id}/thread`, headers: session(acmeSession) });
    expect(viaMessage.statusCode).toBe(200);
  });

  it('prefers a reference over a subject match, and of two subject matches the thread with the latest message', async () => {
    const base = { from: 'grace@sender.test', to: 'threads2@mailroom.localhost' };
    await h.send({ ...base, subject: 'Roadmap', text: 'root', messageId: '<roadmap-root@sender.test>' });
    // A second thread with the same subject among strangers (the mailbox only in Bcc), so it does not join the first…
    await h.send({ from: 'heidi@other.test', to: 'ivan@other.test', bcc: 'threads2@mailroom.localhost', subject: 'Roadmap', text: 'other' });
    // …then grace writes to it by reference: now both threads share grace, and the second has the latest message.
    const other = (await inbox('threads2@mailroom.localhost')).messages.find((m) => m.snippet === 'other')!;
    const otherId = other.internet_message_id as string;
    // The test clock stands still unless moved: each thread's last message gets its own time.
    h.clock.advance(1000);
    await h.send({ ...base, subject: 'Re: Roadmap', text: 'joins other', inReplyTo: `<${otherId}>`, references: [`<${otherId}>`] });
    // A reference to the first thread wins over the second thread's later subject match.
    h.clock.advance(1000);
    await h.send({ ...base, subject: 'Re: Roadmap', text: 'by reference', inReplyTo: '<roadmap-root@sender.test>', references: ['<roadmap-root@sender.test>'] });
    // No headers: the subject thread with the latest message that shares a participant (the first, by now).
    await h.send({ ...base, subject: 'Roadmap', text: 'by subject' });

    const page = await inbox('threads2@mailroom.localhost');
    const threadOf = (text: string) => page.messages.find((m) => m.snippet === text)!.thread_id;
    expect(threadOf('other')).not.toBe(threadOf('root'));
    expect(threadOf('joins other')).toBe(threadOf('other'));
    expect(threadOf('by reference')).toBe(threadOf('root'));
    expect(threadOf('by subject')).toBe(threadOf('root'));
  });
});

describe(`inbound SMTP under concurrent load (${TEST_DIALECT})`, () => {
  const MAILBOX = 'stored@mailroom.localhost';
  let h: MailHarness;
  /** Events the service emits, recorded through its events service. */
  let recorded: RecordedEvents;
  let acme: Tenant;

  /** How many messages the workspace holds (GET /stats). */
  const storedCount = async () => (await h.app.inject({ method: 'GET', url: '/stats', headers: bearer(acme.apiKey) })).json<{ messages: number }>().messages;
  /** Each message as the API shows it; 404s fail. */
  const views = async (ids: string[]) =>
    Promise.all(
      ids.map(async (id) => {
        const res = await h.app.inject({ method: 'GET', url: `/messages/${id}`, headers: bearer(acme.apiKey) });
        expect(res.statusCode, id).toBe(200);
        return res.json<{ message_id: string; subject: string }>();
      }),
    );
  const receivedEventIds = async () =>
    Promise.resolve(
      recorded
        .events('message.received')
        .filter((e) => e.workspace_id === acme.workspaceId)
        .map((e) => e.data.message_id as string)
        .sort(),
    );
  const idsOf = (response: string) => /Stored as (.+)$/.exec(response)![1]!.split(', ');

  beforeAll(async () => {
    h = await startMailHarness({ MAILROOM_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' });
    recorded = recordEvents(h.services);
    acme = await createTenant(h, 'Acme');
    expect((await h.app.inject({ method: 'POST', url: `/mailboxes?address=${MAILBOX}`, headers: bearer(acme.apiKey) })).statusCode).toBe(201);
    const owner = await memberSession(h, acme.workspaceId, 'owner');
    // An active endpoint: message.received then enqueues a webhook job in the storing transaction.
    await webhookApi(h, owner.token).add({ url: 'http://127.0.0.1:9/hook', event_types: ['message.received'] });
  });
  afterAll(async () => h.close());

  it('each 250 names its stored copy, committed by then; message.received is emitted for it, and the job wake-up reaches this process', async () => {
    const wakes: string[] = [];
    const unsubscribe = h.services.wakeups.subscribe((queue) => wakes.push(queue));
    const replies = await Promise.all(
      Array.from({ length: 12 }, (_, i) => h.send({ from: 'alice@sender.test', to: MAILBOX, subject: `Concurrent ${i}`, text: `Message ${i}` })),
    );
    unsubscribe();
    for (const info of replies) expect(info.response).toMatch(/^250 2\.0\.0 Stored as msg_/);
    const ids = replies.flatMap((info) => idsOf(info.response)).sort();
    expect(ids).toHaveLength(12);
    // The workspace holds exactly these: as many, and each of them.
    expect(await storedCount()).toBe(ids.length);
    const stored = await views(ids);
    expect(stored.map((m) => m.message_id).sort()).toEqual(ids);
    expect(await receivedEventIds()).toEqual(ids);
    // A worker role in this process must hear of the jobs the deliveries enqueued.
    expect(wakes).toContain(WEBHOOK_QUEUE);
    expect(stored.map((r) => r.subject).sort()).toEqual(Array.from({ length: 12 }, (_, i) => `Concurrent ${i}`).sort());
  });

  it('other writes made meanwhile (HTTP) wait their turn, and none fails', async () => {
    const before = await storedCount();
    const [replies, created] = await Promise.all([
      Promise.all(Array.from({ length: 15 }, (_, i) => h.send({ from: 'bob@sender.test', to: MAILBOX, subject: `Busy ${i}`, text: 'x' }))),
      Promise.all(Array.from({ length: 15 }, (_, i) => h.app.inject({ method: 'POST', url: `/mailboxes?address=busy${i}@mailroom.localhost`, headers: bearer(acme.apiKey) }))),
    ]);
    for (const info of replies) expect(info.response).toMatch(/^250 /);
    expect(created.map((r) => r.statusCode)).toEqual(Array.from({ length: 15 }, () => 201));
    expect(await storedCount()).toBe(before + 15);
  });
});
