import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import PostalMime from 'postal-mime';
import { beforeAll, describe, expect, it } from 'vitest';
import { cliUser, listen } from './helpers/cli-client.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, errorOf, memberSession, session, type Tenant } from './helpers/harness.js';
import type { MailHarness } from './helpers/mail.js';
import type { ReceivedMail, SmtpPeer } from './helpers/smtp-peer.js';
import { mailWorld } from './helpers/world.js';

interface AttachmentView {
  attachment_id: string;
  filename: string;
  content_type: string;
  size: number;
  inline: boolean;
  content_id: string | null;
}
interface Draft {
  draft_id: string;
  attachments: AttachmentView[];
}

const NEWS = 'newsletter@mailroom.localhost';
const MIB = 1024 * 1024;
const LIMIT = 25 * MIB;
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** Random bytes that are certainly not UTF-8 (a lone continuation byte, 0xff, NUL, CR LF in the middle). */
function binary(size: number): Buffer {
  const bytes = randomBytes(size);
  Buffer.from([0x80, 0xff, 0x00, 0x0d, 0x0a, 0xc3, 0x28]).copy(bytes, 0);
  return bytes;
}
/** A (tiny, real) PNG: the inline image. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

/** The multipart/form-data body fetch would send for `form`, and its Content-Type (with the boundary). */
async function encodeForm(form: FormData): Promise<{ payload: Buffer; headers: Record<string, string> }> {
  const request = new Request('http://localhost/', { method: 'POST', body: form });
  return { payload: Buffer.from(await request.arrayBuffer()), headers: { 'content-type': request.headers.get('content-type')! } };
}

/**
 * Attachments on every send surface and drafts, as real MIME parts, byte-identical at the receiving
 * SMTP peer, listed in the sent copy; the 25 MiB limit; bad input named; draft uploads as multipart/form-data;
 * transactional idempotency over the files.
 */
describe(`attachments (${TEST_DIALECT})`, () => {
  const world = mailWorld();
  let h: MailHarness;
  let peer: SmtpPeer;
  let acme: Tenant;
  let other: Tenant;
  let member: string;
  let outsider: string;

  beforeAll(async () => {
    ({ h, peer } = world);
    // Refused at RCPT: a message sent there is never transferred (the 25 MiB one need not be).
    // Each test's own address: a refusal suppresses the address, so one refused send must not refuse the next.
    for (const n of [1, 2, 3]) peer.refuse.add(`nobody${n}@peer.test`);
    acme = await world.tenant('Acme');
    other = await world.tenant('Other');
    await h.app.inject({ method: 'POST', url: `/mailboxes?address=${NEWS}`, headers: bearer(acme.apiKey) });
    member = (await memberSession(h, acme.workspaceId, 'member')).token;
    outsider = (await memberSession(h, other.workspaceId, 'member')).token;
  });

  const send = (payload: Record<string, unknown>, url = '/send', headers: Record<string, string> = bearer(acme.apiKey)) =>
    h.app.inject({ method: 'POST', url, headers, payload: { from_mailbox: NEWS, to: 'someone@peer.test', subject: 'Files', body: 'See attached.', ...payload } });

  /** The mail the peer accepted for the message `id` (its Message-ID carries our id). */
  async function received(id: string): Promise<ReceivedMail> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const mail = peer.accepted.find((m) => m.raw.includes(`<${id}@`));
      if (mail) return mail;
      if (Date.now() > deadline) throw new Error(`${id} never reached the peer`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  const download = async (url: string, headers: Record<string, string>) => {
    const res = await h.app.inject({ method: 'GET', url, headers });
    expect(res.statusCode, res.body).toBe(200);
    return res;
  };

  it('sends a binary file and an inline image as MIME parts, byte-identical at the peer, listed in the sent copy', async () => {
    const file = binary(300_000);
    const res = await send({
      html: '<p>Our logo: <img src="cid:logo@acme.test"></p>',
      attachments: [
        { filename: 'report ü.bin', content_type: 'application/octet-stream', content: file.toString('base64') },
        { filename: 'logo.png', content_type: 'image/png', content: PNG.toString('base64'), content_id: 'logo@acme.test' },
      ],
    });
    expect(res.statusCode, res.body).toBe(202);
    const id = res.json<{ message_id: string }>().message_id;

    const mail = await received(id);
    const raw = mail.raw.toString('latin1');
    expect(raw).toMatch(/Content-Type: multipart\/mixed/i);
    expect(raw).toMatch(/Content-Type: multipart\/related/i);
    expect(raw).toContain('Content-ID: <logo@acme.test>');
    const parsed = await PostalMime.parse(mail.raw, { attachmentEncoding: 'arraybuffer' });
    expect(parsed.html).toContain('cid:logo@acme.test');
    const byName = new Map(parsed.attachments.map((a) => [a.filename, a]));
    const sentFile = byName.get('report ü.bin');
    const sentLogo = byName.get('logo.png');
    expect(sentFile?.disposition).toBe('attachment');
    expect(sha256(new Uint8Array(sentFile!.content as ArrayBuffer))).toBe(sha256(file));
    expect(sentLogo).toMatchObject({ mimeType: 'image/png', contentId: '<logo@acme.test>' });
    expect(sha256(new Uint8Array(sentLogo!.content as ArrayBuffer))).toBe(sha256(PNG));

    // The sent copy lists them, and each downloads as the bytes that were sent, on both surfaces.
    const message = (await download(`/messages/${id}`, bearer(acme.apiKey))).json<{ attachments: AttachmentView[] }>();
    expect(message.attachments).toEqual([
      { attachment_id: expect.stringMatching(/^att_/) as unknown, filename: 'report ü.bin', content_type: 'application/octet-stream', size: file.length, inline: false, content_id: null },
      { attachment_id: expect.stringMatching(/^att_/) as unknown, filename: 'logo.png', content_type: 'image/png', size: PNG.length, inline: true, content_id: 'logo@acme.test' },
    ]);
    const got = await download(`/messages/${id}/attachments/${message.attachments[0]!.attachment_id}`, bearer(acme.apiKey));
    expect(sha256(got.rawPayload)).toBe(sha256(file));
    expect(got.headers['content-type']).toBe('application/octet-stream');
    const logo = await download(`/app/api/messages/${id}/attachments/${message.attachments[1]!.attachment_id}`, session(member));
    expect(sha256(logo.rawPayload)).toBe(sha256(PNG));
    // Another workspace sees none of it.
    const theirs = await h.app.inject({ method: 'GET', url: `/messages/${id}/attachments/${message.attachments[0]!.attachment_id}`, headers: bearer(other.apiKey) });
    expect(theirs.statusCode).toBe(404);
  });

  it('takes attachments on the session surface too', async () => {
    const file = binary(1000);
    const res = await send({ to: 'nobody1@peer.test', attachments: [{ filename: 'a.bin', content_type: 'application/octet-stream', content: file.toString('base64') }] }, '/app/api/send', session(member));
    expect(res.statusCode, res.body).toBe(202);
    const message = (await download(`/app/api/messages/${res.json<{ message_id: string }>().message_id}`, session(member))).json<{ attachments: AttachmentView[] }>();
    expect(message.attachments).toMatchObject([{ filename: 'a.bin', size: 1000 }]);
  });

  it('takes 25 MiB of files in a message, and answers 413 JSON past it', async () => {
    const atLimit = Buffer.alloc(LIMIT, 0xa5).toString('base64');
    const ok = await send({ to: 'nobody2@peer.test', attachments: [{ filename: 'big.bin', content_type: 'application/octet-stream', content: atLimit }] });
    expect(ok.statusCode, ok.body.slice(0, 300)).toBe(202);

    const half = Buffer.alloc(LIMIT / 2, 1).toString('base64');
    const over = await send({
      to: 'nobody3@peer.test',
      attachments: [
        { filename: 'a.bin', content_type: 'application/octet-stream', content: half },
        { filename: 'b.bin', content_type: 'application/octet-stream', content: Buffer.alloc(LIMIT / 2 + 1, 1).toString('base64') },
      ],
    });
    expect(over.headers['content-type']).toMatch(/^application\/json/);
    expect(errorOf(over)).toMatchObject({ status: 413, error: 'payload_too_large' });
    expect(errorOf(over).detail).toContain('26214400');
  });

  it('answers 413 JSON naming the route’s own limit when the body itself is too large', async () => {
    const huge = await h.app.inject({ method: 'POST', url: '/send', headers: { ...bearer(acme.apiKey), 'content-type': 'application/json' }, payload: `{"pad":"${'x'.repeat(41 * MIB)}"}` });
    expect(errorOf(huge)).toEqual({ status: 413, error: 'payload_too_large', detail: "the request body is larger than 40 MiB, this route's limit" });
    // Every other route keeps 1 MiB.
    const other = await h.app.inject({ method: 'POST', url: '/app/api/mailboxes', headers: { ...session(member), 'content-type': 'application/json' }, payload: `{"pad":"${'x'.repeat(2 * MIB)}"}` });
    expect(errorOf(other)).toEqual({ status: 413, error: 'payload_too_large', detail: "the request body is larger than 1 MiB, this route's limit" });
  });

  it('names the attachment field at fault in a 400', async () => {
    const good = { filename: 'a.txt', content_type: 'text/plain', content: Buffer.from('hello').toString('base64') };
    const cases: Array<[unknown, string]> = [
      [[good, { ...good, content: 'not base64!' }], 'attachments[1].content'],
      [[good, good, { ...good, content: 'abcde' }], 'attachments[2].content'],
      [[{ ...good, filename: 'evil\r\nBcc: x@y.test' }], 'attachments[0].filename'],
      [[{ ...good, content_type: 'text' }], 'attachments[0].content_type'],
      [[{ ...good, content_id: 'a b' }], 'attachments[0].content_id'],
      [[{ ...good, filename: '' }], 'body.attachments.0.filename'],
      [[{ ...good, extra: 1 }], "unknown field 'extra'"],
    ];
    for (const [attachments, field] of cases) {
      const res = await send({ attachments });
      expect(errorOf(res), field).toMatchObject({ status: 400 });
      expect(errorOf(res).detail, field).toContain(field);
    }
    // Line breaks inside base64 (as MIME encoders wrap it) are fine.
    const wrapped = Buffer.from('x'.repeat(200)).toString('base64').replace(/.{76}/g, '$&\r\n');
    expect((await send({ to: 'wrapped@peer.test', attachments: [{ ...good, content: wrapped }] })).statusCode).toBe(202);
  });

  it('refuses bidi controls and invisible format characters in a file name on every send path, naming the field', async () => {
    const content = Buffer.from('MZ').toString('base64');
    // `invoice‮fdp.exe` reads `invoiceexe.pdf` on screen.
    const names = ['invoice\u202efdp.exe', 'a\u2066b.txt', 'a\u200fb.txt', 'a\u200bb.txt', 'a\ufeffb.txt'];
    for (const filename of names) {
      const attachments = [{ filename: 'ok.txt', content_type: 'text/plain', content }, { filename, content_type: 'application/octet-stream', content }];
      const refused = [await send({ attachments }), await send({ attachments }, '/app/api/send', session(member))];
      for (const res of refused) {
        expect(errorOf(res), filename).toMatchObject({ status: 400, error: 'invalid_request' });
        expect(errorOf(res).detail).toContain('attachments[1].filename');
      }
      const batch = await h.app.inject({ method: 'POST', url: '/send/batch', headers: bearer(acme.apiKey), payload: { messages: [{ from_mailbox: NEWS, to: 'someone@peer.test', subject: 'x', body: 'x', attachments }] } });
      expect(batch.json<{ messages: Array<{ status_code?: number; error?: { detail: string } }> }>().messages[0], filename).toMatchObject({ status_code: 400, error: { detail: expect.stringContaining('attachments[1].filename') as unknown } });
      const draft = await h.app.inject({ method: 'POST', url: '/app/api/drafts', headers: session(member), payload: { mailbox: NEWS, to: 'someone@peer.test', subject: 'x', body: 'x', attachments } });
      expect(errorOf(draft)).toMatchObject({ status: 400 });
      expect(errorOf(draft).detail).toContain('attachments[1].filename');
    }
    // A draft's multipart upload.
    const draft = (await h.app.inject({ method: 'POST', url: '/app/api/drafts', headers: session(member), payload: { mailbox: NEWS, to: 'someone@peer.test', subject: 'x', body: 'x' } })).json<Draft>();
    const form = new FormData();
    form.append('file', new Blob(['MZ']), 'invoice\u202efdp.exe');
    const { payload, headers } = await encodeForm(form);
    const upload = await h.app.inject({ method: 'POST', url: `/app/api/drafts/${draft.draft_id}/attachments`, headers: { ...session(member), ...headers }, payload });
    expect(errorOf(upload)).toMatchObject({ status: 400 });
    expect(errorOf(upload).detail).toMatch(/filename must not contain bidirectional controls/);
    // Joiners stay: scripts and emoji need them.
    expect((await send({ to: 'joiner@peer.test', attachments: [{ filename: 'می\u200cخواهم.txt', content_type: 'text/plain', content }] })).statusCode).toBe(202);
  });

  it('strips bidi controls from the names of files that arrive by SMTP, in the message view and the download', async () => {
    await h.send({ from: 'mallory@sender.test', to: NEWS, subject: 'Invoice', text: 'see file', attachments: [{ filename: 'invoice\u202efdp.exe', content: Buffer.from('MZ'), contentType: 'application/octet-stream' }] });
    const page = (await h.app.inject({ method: 'GET', url: `/app/api/messages?mailbox=${NEWS}&folder=inbox`, headers: session(member) })).json<{ messages: Array<{ message_id: string; subject: string; attachments: AttachmentView[] }> }>();
    const message = page.messages.find((m) => m.subject === 'Invoice')!;
    expect(message.attachments.map((a) => a.filename)).toEqual(['invoicefdp.exe']);
    const res = await download(`/messages/${message.message_id}/attachments/${message.attachments[0]!.attachment_id}`, bearer(acme.apiKey));
    expect(res.headers['content-disposition']).toBe(`attachment; filename="invoicefdp.exe"; filename*=UTF-8''invoicefdp.exe`);
  });

  describe('drafts', () => {
    const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, token = member) =>
      h.app.inject({ method, url: `/app/api${url}`, headers: session(token), ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }) });
    const upload = async (draftId: string, form: FormData, token = member) => {
      const { payload, headers } = await encodeForm(form);
      return h.app.inject({ method: 'POST', url: `/app/api/drafts/${draftId}/attachments`, headers: { ...session(token), ...headers }, payload });
    };
    const newDraft = async (extra: Record<string, unknown> = {}) => {
      const res = await call('POST', '/drafts', { mailbox: NEWS, to: 'someone@peer.test', subject: 'Draft with files', body: 'Attached.', ...extra });
      expect(res.statusCode, res.body).toBe(201);
      return res.json<Draft>();
    };

    it('uploads files as multipart/form-data; the sent draft arrives byte-identical with its inline image', async () => {
      const draft = await newDraft({ html: '<img src="cid:chart">' });
      expect(draft.attachments).toEqual([]);
      const file = binary(200_000);
      const form = new FormData();
      form.append('file', new Blob([file], { type: 'application/x-thing' }), 'data.bin');
      form.append('content_id', 'chart');
      form.append('file', new Blob([PNG], { type: 'image/png' }), 'chart.png');
      const res = await upload(draft.draft_id, form);
      expect(res.statusCode, res.body).toBe(201);
      const attachments = res.json<Draft>().attachments;
      expect(attachments).toMatchObject([
        { filename: 'data.bin', content_type: 'application/x-thing', size: file.length, content_id: null, inline: false },
        { filename: 'chart.png', content_type: 'image/png', size: PNG.length, content_id: 'chart', inline: true },
      ]);
      expect((await call('GET', `/drafts/${draft.draft_id}`)).json<Draft>().attachments).toEqual(attachments);
      const list = (await call('GET', '/drafts')).json<{ drafts: Draft[] }>();
      expect(list.drafts.find((d) => d.draft_id === draft.draft_id)?.attachments).toEqual(attachments);
      const back = await download(`/app/api/drafts/${draft.draft_id}/attachments/${attachments[0]!.attachment_id}`, session(member));
      expect(sha256(back.rawPayload)).toBe(sha256(file));

      // Another workspace finds neither the draft nor its files.
      expect((await call('GET', `/drafts/${draft.draft_id}/attachments/${attachments[0]!.attachment_id}`, undefined, outsider)).statusCode).toBe(404);
      expect((await call('DELETE', `/drafts/${draft.draft_id}/attachments/${attachments[0]!.attachment_id}`, undefined, outsider)).statusCode).toBe(404);
      expect((await upload(draft.draft_id, form, outsider)).statusCode).toBe(404);
      // No session: 401 before a byte of the form is read.
      const { payload, headers } = await encodeForm(form);
      expect(errorOf(await h.app.inject({ method: 'POST', url: `/app/api/drafts/${draft.draft_id}/attachments`, headers, payload }))).toMatchObject({ status: 401 });

      const sent = await call('POST', `/drafts/${draft.draft_id}/send`);
      expect(sent.statusCode, sent.body).toBe(202);
      const id = sent.json<{ message_id: string }>().message_id;
      const parsed = await PostalMime.parse((await received(id)).raw, { attachmentEncoding: 'arraybuffer' });
      // The inline image goes with the HTML (multipart/related), before the file: compare them by name.
      const parts = parsed.attachments.map((a) => [a.filename, a.mimeType, sha256(new Uint8Array(a.content as ArrayBuffer))]);
      expect(parts.sort((x, y) => String(x[0]).localeCompare(String(y[0])))).toEqual([
        ['chart.png', 'image/png', sha256(PNG)],
        ['data.bin', 'application/x-thing', sha256(file)],
      ]);
      expect(parsed.attachments.find((a) => a.filename === 'chart.png')?.contentId).toBe('<chart>');
      const copy = (await download(`/app/api/messages/${id}`, session(member))).json<{ attachments: AttachmentView[] }>();
      expect(copy.attachments.map((a) => [a.filename, a.size, a.inline])).toEqual([['data.bin', file.length, false], ['chart.png', PNG.length, true]]);
      // The draft and its files are gone.
      const gone = await h.services.database.db.selectFrom('draft_attachments').select('id').where('draft_id', '=', draft.draft_id).execute();
      expect(gone).toEqual([]);
    });

    it('takes base64 files with the draft, replaces them on PATCH, removes one, and keeps 25 MiB per draft', async () => {
      const draft = await newDraft({ attachments: [{ filename: 'one.txt', content_type: 'text/plain', content: Buffer.from('one').toString('base64') }] });
      expect(draft.attachments).toMatchObject([{ filename: 'one.txt', size: 3 }]);
      const patched = (await call('PATCH', `/drafts/${draft.draft_id}`, { attachments: [{ filename: 'two.txt', content_type: 'text/plain', content: Buffer.from('two!').toString('base64') }] })).json<Draft>();
      expect(patched.attachments).toMatchObject([{ filename: 'two.txt', size: 4 }]);
      const removed = await call('DELETE', `/drafts/${draft.draft_id}/attachments/${patched.attachments[0]!.attachment_id}`);
      expect(removed.statusCode, removed.body).toBe(200);
      expect(removed.json<Draft>().attachments).toEqual([]);
      expect(errorOf(await call('DELETE', `/drafts/${draft.draft_id}/attachments/${patched.attachments[0]!.attachment_id}`))).toMatchObject({ status: 404, error: 'attachment_not_found' });

      const big = new FormData();
      big.append('file', new Blob([Buffer.alloc(LIMIT - 10, 7)]), 'big.bin');
      expect((await upload(draft.draft_id, big)).statusCode).toBe(201);
      const more = new FormData();
      more.append('file', new Blob([Buffer.alloc(11, 7)]), 'more.bin');
      const refused = await upload(draft.draft_id, more);
      expect(errorOf(refused)).toMatchObject({ status: 413, error: 'payload_too_large' });
      expect(errorOf(refused).detail).toContain('26214400');
      const exact = new FormData();
      exact.append('file', new Blob([Buffer.alloc(10, 7)]), 'exact.bin');
      expect((await upload(draft.draft_id, exact)).statusCode).toBe(201);
      await call('DELETE', `/drafts/${draft.draft_id}`);
    });

    it('answers a bad upload with a 4xx naming what is wrong', async () => {
      const draft = await newDraft();
      const json = await call('POST', `/drafts/${draft.draft_id}/attachments`, { file: 'x' });
      expect(errorOf(json)).toMatchObject({ status: 415, error: 'unsupported_media_type' });
      const fieldsOnly = new FormData();
      fieldsOnly.append('content_id', 'x');
      expect(errorOf(await upload(draft.draft_id, fieldsOnly))).toMatchObject({ status: 400 });
      const unknown = new FormData();
      unknown.append('note', 'hi');
      expect(errorOf(await upload(draft.draft_id, unknown)).detail).toContain("'note'");
      const badType = new FormData();
      badType.append('file', new Blob(['x'], { type: 'nonsense' }), 'x.txt');
      expect(errorOf(await upload(draft.draft_id, badType))).toMatchObject({ status: 400 });
      const truncated = await h.app.inject({
        method: 'POST',
        url: `/app/api/drafts/${draft.draft_id}/attachments`,
        headers: { ...session(member), 'content-type': 'multipart/form-data; boundary=xyz' },
        payload: '--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nunfinished',
      });
      expect(errorOf(truncated)).toMatchObject({ status: 400 });
      for (const contentType of ['multipart/form-data', 'multipart/form-data; boundary=']) {
        const noBoundary = await h.app.inject({ method: 'POST', url: `/app/api/drafts/${draft.draft_id}/attachments`, headers: { ...session(member), 'content-type': contentType }, payload: 'x' });
        expect(errorOf(noBoundary).status, contentType).toBe(400);
      }
      const mixed = await h.app.inject({ method: 'POST', url: `/app/api/drafts/${draft.draft_id}/attachments`, headers: { ...session(member), 'content-type': 'multipart/mixed; boundary=x' }, payload: '--x--' });
      expect(errorOf(mixed)).toMatchObject({ status: 415 });
      const fields = new FormData();
      for (let i = 0; i < 50; i++) fields.append('content_id', 'x');
      expect(errorOf(await upload(draft.draft_id, fields))).toMatchObject({ status: 413 });
      expect((await call('GET', `/drafts/${draft.draft_id}`)).json<Draft>().attachments).toEqual([]);
    });
  });

  describe('transactional', () => {
    let serviceToken: string;

    beforeAll(async () => {
      const owner = (await memberSession(h, acme.workspaceId, 'owner')).token;
      const created = await h.app.inject({ method: 'POST', url: '/app/api/sending-domains', headers: session(owner), payload: { domain: 'acme.test' } });
      const domain = created.json<{ domain_id: string; verification: { record_name: string; record_value: string } }>();
      h.dns.set(domain.verification.record_name, { TXT: [domain.verification.record_value] });
      await h.app.inject({ method: 'POST', url: `/app/api/sending-domains/${domain.domain_id}/verify`, headers: session(owner) });
      await h.app.inject({ method: 'POST', url: '/app/api/mailboxes', headers: session(owner), payload: { address: 'auth@acme.test' } });
      const token = await h.app.inject({ method: 'POST', url: '/app/api/service-tokens', headers: session(owner), payload: { name: 'files', domain_id: domain.domain_id, mailbox: 'auth@acme.test' } });
      expect(token.statusCode, token.body).toBe(201);
      serviceToken = token.json<{ token: string }>().token;
    });

    const post = (key: string, file: Buffer) =>
      h.app.inject({
        method: 'POST',
        url: '/v1/transactional/messages',
        headers: { ...bearer(serviceToken), 'idempotency-key': key },
        payload: { from_mailbox: 'auth@acme.test', to: 'someone@peer.test', subject: 'Invoice', body: 'Attached.', attachments: [{ filename: 'invoice.pdf', content_type: 'application/pdf', content: file.toString('base64') }] },
      });

    it('replays the same file under a key, refuses another file under it (409), and delivers the file', async () => {
      const file = binary(5000);
      const first = await post('invoice-1', file);
      expect(first.statusCode, first.body).toBe(202);
      const again = await post('invoice-1', Buffer.from(file));
      expect(again.statusCode).toBe(202);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.json()).toEqual(first.json());
      const changed = Buffer.from(file);
      changed[4999] = changed[4999]! ^ 1;
      expect(errorOf(await post('invoice-1', changed))).toMatchObject({ status: 409, error: 'idempotency_key_reused' });

      const id = first.json<{ message_id: string }>().message_id;
      const parsed = await PostalMime.parse((await received(id)).raw, { attachmentEncoding: 'arraybuffer' });
      expect(parsed.attachments.map((a) => sha256(new Uint8Array(a.content as ArrayBuffer)))).toEqual([sha256(file)]);
    });
  });

  describe('CLI', () => {
    it('sends with --attach and uploads to a draft with drafts attach (--inline), byte-identical at the peer', async () => {
      const url = await listen(h.app);
      const user = cliUser(url);
      expect((await user.login(acme.ownerEmail, acme.password)).code).toBe(0);
      const work = mkdtempSync(join(tmpdir(), 'mailroom-attach-'));
      const file = binary(50_000);
      writeFileSync(join(work, 'report, final.pdf'), file);
      writeFileSync(join(work, 'logo.png'), PNG);

      const queued = await user.json<{ message_id: string }>(['send', '--from', NEWS, '--to', 'someone@peer.test', '--subject', 'CLI files', '--body', 'x', '--attach', join(work, 'report, final.pdf'), '--attach', join(work, 'logo.png')]);
      const sent = await PostalMime.parse((await received(queued.message_id)).raw, { attachmentEncoding: 'arraybuffer' });
      expect(sent.attachments.map((a) => [a.filename, a.mimeType, sha256(new Uint8Array(a.content as ArrayBuffer))])).toEqual([
        ['report, final.pdf', 'application/pdf', sha256(file)],
        ['logo.png', 'image/png', sha256(PNG)],
      ]);

      const draft = await user.json<{ draft_id: string }>(['drafts', 'create', '--mailbox', NEWS, '--to', 'someone@peer.test', '--subject', 'CLI draft', '--body', 'x']);
      await user.json(['drafts', 'attach', draft.draft_id, join(work, 'report, final.pdf')]);
      const attached = await user.run(['drafts', 'attach', draft.draft_id, join(work, 'logo.png'), '--inline', 'logo']);
      expect(attached.code, attached.stderr).toBe(0);
      expect(attached.stdout).toContain('logo.png');
      const shown = await user.json<Draft>(['drafts', 'show', draft.draft_id]);
      expect(shown.attachments).toMatchObject([{ filename: 'report, final.pdf', inline: false }, { filename: 'logo.png', content_id: 'logo', inline: true }]);
      const missing = await user.run(['drafts', 'attach', draft.draft_id, join(work, 'nope.bin')]);
      expect(missing.code).not.toBe(0);
      expect(missing.stderr).toContain('cannot read');
      const done = await user.json<{ message_id: string }>(['drafts', 'send', draft.draft_id]);
      const mail = await PostalMime.parse((await received(done.message_id)).raw, { attachmentEncoding: 'arraybuffer' });
      expect(mail.attachments.map((a) => sha256(new Uint8Array(a.content as ArrayBuffer))).sort()).toEqual([sha256(file), sha256(PNG)].sort());
      expect(mail.attachments.find((a) => a.filename === 'logo.png')?.contentId).toBe('<logo>');
    });
  });
});
