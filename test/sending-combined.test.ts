import { createHash, randomBytes } from 'node:crypto';
import PostalMime from 'postal-mime';
import { beforeAll, describe, expect, it } from 'vitest';
import { rfc5322Date } from '../src/modules/sending/schedule.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, errorOf, memberSession, session, type Tenant } from './helpers/harness.js';
import type { MailHarness } from './helpers/mail.js';
import type { ReceivedMail, SmtpPeer } from './helpers/smtp-peer.js';
import { messageOfReturnPath } from './helpers/reports.js';
import { mailWorld } from './helpers/world.js';

type Item = { index: number; message_id?: string; status?: string; send_at?: string; suppressed?: string[]; status_code?: number; error?: { error: string; detail: string } };
type BatchAnswer = { messages: Item[]; queued: number; failed: number };
interface SentView {
  message_id: string;
  status: string;
  send_at?: string;
  recipients: Array<{ address: string; status: string; response: string | null }>;
  attachments: Array<{ filename: string; size: number; inline: boolean }>;
}

const NEWS = 'newsletter@mailroom.localhost';
const MIB = 1024 * 1024;
const MINUTE = 60_000;
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
/** Random bytes that are certainly not UTF-8 (a lone continuation byte, 0xff, NUL, CR LF in the middle). */
function binary(size: number): Buffer {
  const bytes = randomBytes(size);
  Buffer.from([0x80, 0xff, 0x00, 0x0d, 0x0a, 0xc3, 0x28]).copy(bytes, 0);
  return bytes;
}
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
const file = (filename: string, bytes: Buffer, extra: Record<string, unknown> = {}) => ({ filename, content_type: 'application/octet-stream', content: bytes.toString('base64'), ...extra });

/**
 * Batches, attachments, schedules and suppressions together: batches that carry attachments, send_at and suppressed recipients; a scheduled message
 * with a file, rescheduled; an address suppressed while its message waits; a draft's uploaded file sent later. All
 * through the real SMTP peer with a manual clock.
 */
describe(`sending features combined (${TEST_DIALECT})`, () => {
  const world = mailWorld({ env: { MAILROOM_DELIVERY_RETRY_BASE_MS: '60000' } });
  let h: MailHarness;
  let peer: SmtpPeer;
  let acme: Tenant;
  let member: string;

  beforeAll(async () => {
    ({ h, peer } = world);
    acme = await world.tenant('Acme');
    expect((await h.app.inject({ method: 'POST', url: `/mailboxes?address=${NEWS}`, headers: bearer(acme.apiKey) })).statusCode).toBe(201);
    member = (await memberSession(h, acme.workspaceId, 'member')).token;
  });

  const message = (n: string, extra: Record<string, unknown> = {}) => ({ from_mailbox: NEWS, to: `${n}@peer.test`, subject: `Combined ${n}`, body: `Hello ${n}`, ...extra });
  const post = (url: string, payload: unknown, headers: Record<string, string> = bearer(acme.apiKey)) => h.app.inject({ method: 'POST', url, headers, payload: payload as Record<string, unknown> });
  const batch = async (messages: unknown[]) => {
    const res = await post('/send/batch', { messages });
    expect(res.statusCode, res.body.slice(0, 300)).toBe(200);
    return res.json<BatchAnswer>();
  };
  const suppress = async (address: string) => expect((await post('/app/api/suppressions', { address }, session(member))).statusCode).toBe(201);
  const copiesOf = (id: string): ReceivedMail[] => peer.accepted.filter((m) => messageOfReturnPath(h, m.mailFrom) === id);
  const dateHeader = (mail: ReceivedMail) => /^Date: (.*)$/m.exec(mail.raw.toString('latin1').split('\r\n\r\n')[0]!.replace(/\r/g, ''))?.[1];
  async function sentView(id: string): Promise<SentView> {
    const res = await h.app.inject({ method: 'GET', url: `/messages/${id}`, headers: bearer(acme.apiKey) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<SentView>();
  }
  const statusOf = async (id: string) => (await world.message(acme, id))?.status;
  /** The message settled (accepted or failed) and, if any copy left, the one the peer took. */
  async function settled(id: string, expected = 'accepted'): Promise<ReceivedMail | undefined> {
    await expect.poll(() => statusOf(id), { timeout: 15_000 }).toBe(expected);
    return copiesOf(id)[0];
  }
  /** A barrier instead of a wait: a message sent now is delivered only after the worker polled at the current clock. */
  async function workerCaughtUp(): Promise<void> {
    const res = await post('/send', message('barrier'));
    await settled(res.json<{ message_id: string }>().message_id);
  }
  const attachmentsOf = async (mail: ReceivedMail) => (await PostalMime.parse(mail.raw, { attachmentEncoding: 'arraybuffer' })).attachments;
  const digests = async (mail: ReceivedMail) =>
    (await attachmentsOf(mail)).map((a) => [a.filename, a.contentId ?? null, sha256(new Uint8Array(a.content as ArrayBuffer))]).sort((x, y) => String(x[0]).localeCompare(String(y[0])));

  it('a batch carries attachments: byte-identical at the peer, an inline image by its cid; a bad or oversized one fails alone', async () => {
    const report = binary(200_000);
    const other = binary(50_000);
    const answer = await batch([
      message('att-0', { attachments: [file('report.bin', report)] }),
      message('att-1', { html: '<p><img src="cid:logo@acme.test"></p>', attachments: [file('other.bin', other), { filename: 'logo.png', content_type: 'image/png', content: PNG.toString('base64'), content_id: 'logo@acme.test' }] }),
      message('att-2', { attachments: [file('a.bin', other), { ...file('b.bin', other), content: 'not base64!' }] }),
      message('att-3', { attachments: [{ ...file('c.bin', other), filename: '' }] }),
      // 25 MiB and one byte decoded: 33 MiB of base64, which the batch's 50 MiB body takes; the message alone is refused.
      message('att-4', { attachments: [file('big.bin', Buffer.alloc(25 * MIB + 1, 0xa5))] }),
      message('att-5'),
    ]);
    expect(answer).toMatchObject({ queued: 3, failed: 3 });
    const [a0, a1, a2, a3, a4, a5] = answer.messages;
    for (const item of [a0, a1, a5]) expect(item).toMatchObject({ status: 'queued', message_id: expect.stringMatching(/^msg_/) as unknown });
    expect(a2).toMatchObject({ index: 2, status_code: 400, error: { error: 'invalid_request', detail: expect.stringContaining('attachments[1].content is not valid base64') as unknown } });
    expect(a3).toMatchObject({ index: 3, status_code: 400, error: { error: 'invalid_request', detail: expect.stringContaining('body.messages.3.attachments.0.filename') as unknown } });
    expect(a4).toMatchObject({ index: 4, status_code: 413, error: { error: 'payload_too_large', detail: expect.stringContaining('26214400') as unknown } });
    for (const item of [a2, a3, a4]) expect(item!.message_id).toBeUndefined();

    const first = (await settled(a0!.message_id!))!;
    expect(await digests(first)).toEqual([['report.bin', null, sha256(report)]]);
    const second = (await settled(a1!.message_id!))!;
    expect(await digests(second)).toEqual([
      ['logo.png', '<logo@acme.test>', sha256(PNG)],
      ['other.bin', null, sha256(other)],
    ]);
    expect(second.raw.toString('latin1')).toMatch(/Content-Type: multipart\/related/i);
    expect((await sentView(a1!.message_id!)).attachments.map((a) => [a.filename, a.inline])).toEqual([
      ['other.bin', false],
      ['logo.png', true],
    ]);
    await settled(a5!.message_id!);
    for (const n of ['att-2', 'att-3', 'att-4']) expect(peer.accepted.filter((m) => m.recipients.includes(`${n}@peer.test`))).toHaveLength(0);
  });

  it('a batch with send_at on some messages: those wait as scheduled, the others go at once', async () => {
    const sendAt = h.clock.now() + 10 * MINUTE;
    const at = new Date(sendAt).toISOString();
    const answer = await batch([message('when-0'), message('when-1', { send_at: at }), message('when-2', { send_at: at, attachments: [file('later.bin', PNG)] }), message('when-3', { send_at: 'soon' })]);
    expect(answer).toMatchObject({ queued: 3, failed: 1 });
    const [now, later, laterFile, bad] = answer.messages;
    expect(now).toEqual({ index: 0, message_id: expect.stringMatching(/^msg_/) as unknown, status: 'queued' });
    expect(later).toEqual({ index: 1, message_id: expect.stringMatching(/^msg_/) as unknown, status: 'scheduled', send_at: at });
    expect(laterFile).toMatchObject({ status: 'scheduled', send_at: at });
    expect(bad).toMatchObject({ status_code: 400, error: { detail: expect.stringContaining('send_at') as unknown } });

    await settled(now!.message_id!);
    await workerCaughtUp();
    expect(copiesOf(later!.message_id!)).toHaveLength(0);
    expect(copiesOf(laterFile!.message_id!)).toHaveLength(0);
    expect((await sentView(later!.message_id!)).status).toBe('scheduled');

    h.clock.set(sendAt);
    expect(dateHeader((await settled(later!.message_id!))!)).toBe(rfc5322Date(sendAt));
    expect(await digests((await settled(laterFile!.message_id!))!)).toEqual([['later.bin', null, sha256(PNG)]]);
  });

  it('a batch with suppressed recipients: one only suppressed is a 422 in its place, one among several is left out and named', async () => {
    await suppress('gone@peer.test');
    const answer = await batch([message('supp-0'), message('supp-1', { to: 'gone@peer.test' }), message('supp-2', { to: ['gone@peer.test', 'supp-2@peer.test'], cc: 'supp-2cc@peer.test' })]);
    expect(answer).toMatchObject({ queued: 2, failed: 1 });
    const [plain, only, among] = answer.messages;
    expect(plain).toEqual({ index: 0, message_id: expect.stringMatching(/^msg_/) as unknown, status: 'queued' });
    expect(only).toMatchObject({ index: 1, status_code: 422, error: { error: 'recipient_suppressed', detail: expect.stringContaining('gone@peer.test') as unknown } });
    expect(among).toMatchObject({ index: 2, status: 'queued', suppressed: ['gone@peer.test'] });

    await settled(among!.message_id!);
    // One copy per recipient left (each recipient has its own return path, so its own transaction).
    expect(copiesOf(among!.message_id!).flatMap((m) => m.recipients).sort()).toEqual(['supp-2@peer.test', 'supp-2cc@peer.test']);
    expect(peer.accepted.filter((m) => m.recipients.includes('gone@peer.test'))).toHaveLength(0);
    await settled(plain!.message_id!);
  });

  it('a scheduled message with a file, rescheduled: delivered at the new time with the file intact and dated then', async () => {
    const report = binary(100_000);
    const first = h.clock.now() + 5 * MINUTE;
    const later = first + 90 * MINUTE;
    const res = await post('/send', message('resched', { html: '<img src="cid:chart">', attachments: [file('report.bin', report), { filename: 'chart.png', content_type: 'image/png', content: PNG.toString('base64'), content_id: 'chart' }], send_at: new Date(first).toISOString() }));
    expect(res.statusCode, res.body).toBe(202);
    const id = res.json<{ message_id: string }>().message_id;
    const moved = await post(`/messages/${id}/reschedule`, { send_at: new Date(later).toISOString() });
    expect(moved.statusCode, moved.body).toBe(200);

    h.clock.set(first + MINUTE);
    await workerCaughtUp();
    expect(copiesOf(id)).toHaveLength(0);
    h.clock.set(later);
    const mail = (await settled(id))!;
    expect(dateHeader(mail)).toBe(rfc5322Date(later));
    expect(await digests(mail)).toEqual([
      ['chart.png', '<chart>', sha256(PNG)],
      ['report.bin', null, sha256(report)],
    ]);
    // The sent copy lists the files as they were, and downloads them as sent.
    const view = await sentView(id);
    expect(view.attachments.map((a) => [a.filename, a.size])).toEqual([
      ['report.bin', report.length],
      ['chart.png', PNG.length],
    ]);
  });

  it('an address suppressed while its message waits gets no copy: that recipient fails, the others are delivered', async () => {
    const sendAt = h.clock.now() + 10 * MINUTE;
    const at = new Date(sendAt).toISOString();
    const several = (await post('/send', message('wait-1', { to: ['wait-1@peer.test', 'later-gone@peer.test'], send_at: at }))).json<{ message_id: string; status: string }>();
    const alone = (await post('/send', message('wait-2', { to: 'later-gone@peer.test', send_at: at }))).json<{ message_id: string; status: string }>();
    expect([several.status, alone.status]).toEqual(['scheduled', 'scheduled']);
    await suppress('later-gone@peer.test');

    h.clock.set(sendAt);
    const mail = (await settled(several.message_id))!;
    expect(mail.recipients).toEqual(['wait-1@peer.test']);
    const view = await sentView(several.message_id);
    expect(view.recipients.find((r) => r.address === 'later-gone@peer.test')).toMatchObject({ status: 'failed', response: expect.stringContaining('suppression list') as unknown });
    expect(view.recipients.find((r) => r.address === 'wait-1@peer.test')).toMatchObject({ status: 'accepted' });

    // Its only recipient suppressed: the message fails without a connection, and says why.
    expect(await settled(alone.message_id, 'failed')).toBeUndefined();
    expect((await sentView(alone.message_id)).recipients).toMatchObject([{ address: 'later-gone@peer.test', status: 'failed', response: expect.stringContaining('suppression list') as unknown }]);
    const failed = world.events('message.failed').filter((e) => JSON.stringify(e).includes(alone.message_id));
    expect(failed).toHaveLength(1);
    expect(JSON.stringify(failed[0])).toContain('later-gone@peer.test');
    expect(peer.accepted.filter((m) => m.recipients.includes('later-gone@peer.test'))).toHaveLength(0);
  });

  it('a draft with an uploaded file, sent with send_at: scheduled, then delivered with the file', async () => {
    const created = await post('/app/api/drafts', { mailbox: NEWS, to: 'draft-later@peer.test', subject: 'Draft, later', body: 'Attached.' }, session(member));
    expect(created.statusCode, created.body).toBe(201);
    const draftId = created.json<{ draft_id: string }>().draft_id;
    const bytes = binary(150_000);
    const form = new FormData();
    form.append('file', new Blob([bytes], { type: 'application/pdf' }), 'plan.pdf');
    const request = new Request('http://localhost/', { method: 'POST', body: form });
    const upload = await h.app.inject({
      method: 'POST',
      url: `/app/api/drafts/${draftId}/attachments`,
      headers: { ...session(member), 'content-type': request.headers.get('content-type')! },
      payload: Buffer.from(await request.arrayBuffer()),
    });
    expect(upload.statusCode, upload.body).toBe(201);

    const sendAt = h.clock.now() + 15 * MINUTE;
    const sent = await post(`/app/api/drafts/${draftId}/send`, { send_at: new Date(sendAt).toISOString() }, session(member));
    expect(sent.statusCode, sent.body).toBe(202);
    const queued = sent.json<{ message_id: string; status: string; send_at: string }>();
    expect(queued).toMatchObject({ status: 'scheduled', send_at: new Date(sendAt).toISOString() });
    expect((await sentView(queued.message_id)).attachments).toMatchObject([{ filename: 'plan.pdf', size: bytes.length }]);

    await workerCaughtUp();
    expect(copiesOf(queued.message_id)).toHaveLength(0);
    h.clock.set(sendAt);
    const mail = (await settled(queued.message_id))!;
    const [part] = await attachmentsOf(mail);
    expect(part).toMatchObject({ filename: 'plan.pdf', mimeType: 'application/pdf' });
    expect(sha256(new Uint8Array(part!.content as ArrayBuffer))).toBe(sha256(bytes));
    expect(errorOf(await h.app.inject({ method: 'GET', url: `/app/api/drafts/${draftId}`, headers: session(member) }))).toMatchObject({ status: 404 });
  });
});
