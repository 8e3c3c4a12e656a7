import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asWork } from '../src/db/tables.js';
import { createWorker, type Worker } from '../src/jobs/worker.js';
import { createLogger } from '../src/lib/logger.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, errorOf, login, session, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';
import { startSmtpPeer, type ReceivedMail, type SmtpPeer } from './helpers/smtp-peer.js';
import { messageOfReturnPath } from './helpers/reports.js';
import { recordEvents, type RecordedEvents } from './helpers/world.js';

interface Queued {
  message_id: string;
  status: string;
  send_at?: string;
  hold_seconds?: number;
}
interface Draft {
  draft_id: string;
  mailbox: string;
  to: string[];
  cc: string[];
  bcc: string[];
  subject: string;
  body: string;
  html: string | null;
  in_reply_to: string | null;
  attachments: Array<{ attachment_id: string; filename: string; content_type: string; size: number; content_id: string | null }>;
}

const NEWS = 'newsletter@mailroom.localhost';
const HOLD_SECONDS = 7;
const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');

/**
 * Undo send: a draft sent with `hold` waits the operator's undo window (MAILROOM_UNDO_SEND_SECONDS, set here; the
 * manual clock decides when it has passed) as a scheduled message. Meanwhile nothing reaches the real SMTP peer and
 * undo-send takes it back as the same draft, leaving no sent copy; not taken back, it leaves when the window ends.
 */
describe(`undo send (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let peer: SmtpPeer;
  let worker: Worker;
  let acme: Tenant;
  let token: string;
  let otherToken: string;
  let recorded: RecordedEvents;

  beforeAll(async () => {
    peer = await startSmtpPeer();
    h = await startMailHarness({ MAILROOM_MX_PORT: String(peer.port), MAILROOM_UNDO_SEND_SECONDS: String(HOLD_SECONDS) });
    recorded = recordEvents(h.services);
    h.dns.set('peer.test', { MX: [{ exchange: 'mx1.peer.test', priority: 10 }] });
    h.dns.set('mx1.peer.test', { A: ['127.0.0.1'] });
    acme = await createTenant(h, 'Acme');
    const other = await createTenant(h, 'Other');
    token = await login(h, acme.ownerEmail, acme.password);
    otherToken = await login(h, other.ownerEmail, other.password);
    expect((await h.app.inject({ method: 'POST', url: `/mailboxes?address=${NEWS}`, headers: bearer(acme.apiKey) })).statusCode).toBe(201);
    worker = createWorker(h.services.handlers, { queue: h.services.queue, logger: createLogger('silent'), leaseMs: h.config.leaseMs, pollMs: 20 });
    worker.start();
  });
  afterAll(async () => {
    await worker.stop(2000);
    await h.close();
    await peer.close();
  });

  const post = (url: string, payload?: Record<string, unknown>, headers: Record<string, string> = session(token)) =>
    h.app.inject({ method: 'POST', url, headers, ...(payload === undefined ? {} : { payload }) });
  const get = (url: string, headers: Record<string, string> = session(token)) => h.app.inject({ method: 'GET', url, headers });
  const copiesOf = (id: string): ReceivedMail[] => peer.accepted.filter((m) => messageOfReturnPath(h, m.mailFrom) === id);
  const eventsOf = (type: string, id: string) => recorded.events(type).filter((e) => e.data.message_id === id);
  const jobOf = async (id: string) =>
    (await h.services.queue.inspect<{ message_id?: string }>(asWork(h.services.database.db), { queue: 'delivery' })).find((j) => j.payload.message_id === id);
  const statusOf = async (id: string) => (await get(`/app/api/messages/${id}`)).json<{ status?: string }>().status;

  async function delivered(id: string): Promise<ReceivedMail> {
    await expect.poll(() => copiesOf(id).length, { timeout: 10_000 }).toBe(1);
    await expect.poll(() => statusOf(id), { timeout: 10_000 }).toBe('accepted');
    return copiesOf(id)[0]!;
  }
  /** A barrier instead of a wait: a message sent now is delivered only after the worker looked at the current clock. */
  async function workerCaughtUp(): Promise<void> {
    const res = await post('/send', { from_mailbox: NEWS, to: 'barrier@peer.test', subject: 'barrier', body: '.' }, bearer(acme.apiKey));
    expect(res.statusCode, res.body).toBe(202);
    await delivered(res.json<Queued>().message_id);
  }
  async function draft(fields: Record<string, unknown>): Promise<string> {
    const res = await post('/app/api/drafts', { mailbox: NEWS, ...fields });
    expect(res.statusCode, res.body).toBe(201);
    return res.json<Draft>().draft_id;
  }
  async function sendHeld(draftId: string): Promise<Queued> {
    const res = await post(`/app/api/drafts/${draftId}/send`, { hold: true });
    expect(res.statusCode, res.body).toBe(202);
    return res.json<Queued>();
  }

  it('a held send delivers nothing within the window; undo gives the draft back whole and leaves no sent copy', async () => {
    // The message the draft answers: one of ours, delivered.
    const first = await post('/send', { from_mailbox: NEWS, to: 'ann@peer.test', subject: 'Question', body: 'Any news?' }, bearer(acme.apiKey));
    const parentId = first.json<Queued>().message_id;
    const parentMail = await delivered(parentId);
    const parentHeader = /^Message-ID: (<[^>]+>)/im.exec(parentMail.raw.toString('latin1'))![1]!;

    const fields = {
      to: ['ann@peer.test'],
      cc: ['bob@peer.test'],
      bcc: ['carol@peer.test'],
      subject: 'Re: Question',
      body: 'Yes: see the chart.',
      html: '<p>Yes: see the <b>chart</b>.</p><img src="cid:chart">',
      in_reply_to: parentId,
      attachments: [
        { filename: 'notes.txt', content_type: 'text/plain', content: Buffer.from('notes').toString('base64') },
        { filename: 'chart.png', content_type: 'image/png', content: PNG.toString('base64'), content_id: 'chart' },
      ],
    };
    const draftId = await draft(fields);
    const sentAt = h.clock.now();
    const queued = await sendHeld(draftId);
    expect(queued).toEqual({ message_id: expect.stringMatching(/^msg_/) as unknown, status: 'scheduled', send_at: new Date(sentAt + HOLD_SECONDS * 1000).toISOString(), hold_seconds: HOLD_SECONDS });
    const id = queued.message_id;
    expect((await get(`/app/api/drafts/${draftId}`)).statusCode).toBe(404);
    expect(await statusOf(id)).toBe('scheduled');
    expect(eventsOf('message.sent', id)).toEqual([expect.objectContaining({ data: expect.objectContaining({ status: 'scheduled', send_at: queued.send_at }) as unknown })]);

    // Up to the last millisecond of the window nothing leaves.
    h.clock.set(sentAt + HOLD_SECONDS * 1000 - 1);
    await workerCaughtUp();
    expect(copiesOf(id)).toEqual([]);

    const undone = await post(`/app/api/messages/${id}/undo-send`);
    expect(undone.statusCode, undone.body).toBe(201);
    const back = undone.json<Draft>();
    expect(back).toMatchObject({ mailbox: NEWS, to: fields.to, cc: fields.cc, bcc: fields.bcc, subject: fields.subject, body: fields.body, html: fields.html, in_reply_to: parentId });
    expect(back.draft_id).not.toBe(draftId);
    expect(back.attachments.map((a) => [a.filename, a.content_type, a.size, a.content_id])).toEqual([
      ['notes.txt', 'text/plain', 5, null],
      ['chart.png', 'image/png', PNG.length, 'chart'],
    ]);
    const file = await get(`/app/api/drafts/${back.draft_id}/attachments/${back.attachments[1]!.attachment_id}`);
    expect(file.rawPayload.equals(PNG)).toBe(true);
    expect((await get(`/app/api/drafts/${back.draft_id}`)).json<Draft>()).toMatchObject({ subject: fields.subject });

    // No sent copy lingers, no job is left, and a receiver of events heard that it will not leave.
    expect(errorOf(await get(`/app/api/messages/${id}`))).toMatchObject({ status: 404, error: 'message_not_found' });
    expect((await get('/app/api/sent')).json<{ messages: Array<{ message_id: string }> }>().messages.map((m) => m.message_id)).not.toContain(id);
    expect(await jobOf(id)).toBeUndefined();
    expect(eventsOf('message.cancelled', id)).toEqual([expect.objectContaining({ data: expect.objectContaining({ status: 'cancelled' }) as unknown })]);
    expect(errorOf(await post(`/app/api/messages/${id}/undo-send`))).toMatchObject({ status: 404, error: 'message_not_found' });

    // Past the window: still nothing reached any recipient.
    h.clock.set(sentAt + 60_000);
    await workerCaughtUp();
    expect(copiesOf(id)).toEqual([]);

    // Sent again, the draft is the same message: its thread headers answer the first one, all three recipients get it.
    const again = await post(`/app/api/drafts/${back.draft_id}/send`);
    expect(again.statusCode, again.body).toBe(202);
    expect(again.json<Queued>()).toMatchObject({ status: 'queued' });
    // Each recipient has a return path, so a transaction, of its own.
    const againId = again.json<Queued>().message_id;
    await expect.poll(() => copiesOf(againId).length, { timeout: 10_000 }).toBe(3);
    expect(copiesOf(againId).flatMap((m) => m.recipients).sort()).toEqual(['ann@peer.test', 'bob@peer.test', 'carol@peer.test']);
    const mail = copiesOf(againId)[0]!.raw.toString('latin1');
    expect(mail).toMatch(new RegExp(`^In-Reply-To: ${parentHeader}`, 'im'));
    expect(mail).toContain('filename=chart.png');
  });

  it('a held send not taken back leaves when the window ends, as a normal send', async () => {
    const sentAt = h.clock.now();
    const { message_id: id } = await sendHeld(await draft({ to: 'dan@peer.test', subject: 'Held', body: 'On its way.' }));
    h.clock.set(sentAt + HOLD_SECONDS * 1000);
    const mail = await delivered(id);
    expect(mail.recipients).toEqual(['dan@peer.test']);
    expect(errorOf(await post(`/app/api/messages/${id}/undo-send`))).toMatchObject({ status: 409, error: 'message_not_scheduled' });
    expect(eventsOf('message.cancelled', id)).toEqual([]);
  });

  it('another workspace cannot take it back (404) and the message stays held', async () => {
    const sentAt = h.clock.now();
    const { message_id: id } = await sendHeld(await draft({ to: 'eve@peer.test', subject: 'Mine', body: 'Not yours.' }));
    expect(errorOf(await post(`/app/api/messages/${id}/undo-send`, undefined, session(otherToken)))).toMatchObject({ status: 404, error: 'message_not_found' });
    expect(errorOf(await post('/app/api/messages/msg_00000000000000000000000000/undo-send'))).toMatchObject({ status: 404, error: 'message_not_found' });
    expect(await statusOf(id)).toBe('scheduled');
    h.clock.set(sentAt + HOLD_SECONDS * 1000);
    await delivered(id);
  });

  it('only a send that asks is held: a draft sent without hold, and the API, send at once', async () => {
    const plain = await post(`/app/api/drafts/${await draft({ to: 'fay@peer.test', subject: 'Now', body: 'Now.' })}/send`);
    expect(plain.json<Queued>()).toEqual({ message_id: expect.stringMatching(/^msg_/) as unknown, status: 'queued' });
    await delivered(plain.json<Queued>().message_id);
    const api = await post('/send', { from_mailbox: NEWS, to: 'fay@peer.test', subject: 's', body: 'b', hold: true }, bearer(acme.apiKey));
    expect(errorOf(api)).toMatchObject({ status: 400, error: 'invalid_request', detail: expect.stringContaining('hold') as unknown });
    // A send_at ahead wins over the hold: scheduled as asked, and undo-send takes a scheduled message back too.
    const sendAt = new Date(h.clock.now() + 3_600_000).toISOString();
    const later = await post(`/app/api/drafts/${await draft({ to: 'fay@peer.test', subject: 'Later', body: 'Later.' })}/send`, { hold: true, send_at: sendAt });
    expect(later.json<Queued>()).toEqual({ message_id: later.json<Queued>().message_id, status: 'scheduled', send_at: sendAt });
    const back = await post(`/app/api/messages/${later.json<Queued>().message_id}/undo-send`);
    expect(back.statusCode, back.body).toBe(201);
    expect(back.json<Draft>()).toMatchObject({ to: ['fay@peer.test'], subject: 'Later', in_reply_to: null, bcc: [] });
  });
});
