import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { deflateSync } from 'node:zlib';
import type { Locator, Page } from 'playwright-core';
import PostalMime from 'postal-mime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorker, type Worker } from '../../src/jobs/worker.js';
import { createLogger } from '../../src/lib/logger.js';
import { listen } from '../helpers/cli-client.js';
import { TEST_DIALECT } from '../helpers/database.js';
import { bearer, createTenant, login, session, type Tenant } from '../helpers/harness.js';
import { HAS_CHROMIUM, logIn, startBrowser, type Browser } from '../helpers/browser.js';
import { startMailHarness, type MailHarness } from '../helpers/mail.js';
import { startSmtpPeer, type SmtpPeer } from '../helpers/smtp-peer.js';

const SUPPORT = 'helpdesk@mailroom.localhost';
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** A real PNG of `size`×`size` red pixels, built here (signature, IHDR, one IDAT, IEND). */
function png(size: number): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf: Buffer) => {
    let c = 0xffffffff;
    for (const b of buf) c = crcTable[(c ^ b) & 0xff]! ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const out = Buffer.alloc(body.length + 8);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc(body), body.length + 4);
    return out;
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(size * 3, Buffer.from([255, 0, 0]))]);
  const idat = deflateSync(Buffer.concat(Array.from({ length: size }, () => row)));
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk('IHDR', ihdr), chunk('IDAT', idat), chunk('IEND', Buffer.alloc(0))]);
}

/** axe-core's violations on the page as it is (the message frame's content is the sender's, not ours). */
async function axeViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const result = await page.evaluate<{ violations: Array<{ id: string }> }>("axe.run(document, { iframes: false, resultTypes: ['violations'] })");
  return result.violations.map((v) => v.id);
}

type FileSpec = { name: string; type: string; base64: string };
const spec = (name: string, type: string, bytes: Buffer): FileSpec => ({ name, type, base64: bytes.toString('base64') });
// An image's width once decoded (0 until then). A message frame shows its images only after their bytes are fetched
// and the frame is written again, which on a loaded machine takes seconds: the poll waits as long as a page load may.
const IMAGE_WAIT = { timeout: 20_000, interval: 200 };
const naturalWidth = (image: Locator) => image.evaluate((img: { naturalWidth: number }) => img.naturalWidth, undefined, { timeout: 5_000 });

/** Dispatches a paste (ClipboardEvent) or a drag event carrying `files` on the element, as a browser would. */
async function fileEvent(target: ReturnType<Page['getByRole']>, kind: 'paste' | 'dragenter' | 'drop', files: FileSpec[]): Promise<void> {
  type Box = { left: number; top: number; width: number; height: number };
  await target.evaluate((el: { dispatchEvent(event: unknown): boolean; getBoundingClientRect(): Box }, { kind: k, files: fs }) => {
    // The tests are typed without the DOM's library: the page's constructors, as far as used here.
    type Ctor = new (...args: unknown[]) => unknown;
    const page = globalThis as unknown as Record<'DataTransfer' | 'File' | 'ClipboardEvent' | 'DragEvent', Ctor> & { atob(s: string): string };
    const dt = new page.DataTransfer() as { items: { add(file: unknown): void } };
    for (const f of fs) dt.items.add(new page.File([Uint8Array.from(page.atob(f.base64), (c) => c.charCodeAt(0))], f.name, { type: f.type }));
    // A drop lands where the pointer is: the middle of the element.
    const box = el.getBoundingClientRect();
    const init = { bubbles: true, cancelable: true, composed: true, clientX: box.left + box.width / 2, clientY: box.top + box.height / 2 };
    el.dispatchEvent(k === 'paste' ? new page.ClipboardEvent('paste', { ...init, clipboardData: dt }) : new page.DragEvent(k, { ...init, dataTransfer: dt }));
  }, { kind, files });
}

/** In the web app: files attached to the draft from the compose form (multipart), listed, removed, sent. */
describe.skipIf(!HAS_CHROMIUM)(`web app: attachments in the compose form (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let peer: SmtpPeer;
  let worker: Worker;
  let acme: Tenant;
  let token: string;
  let browser: Browser;
  let page: Page;
  const field = (label: string) => page.getByLabel(label, { exact: true });

  beforeAll(async () => {
    peer = await startSmtpPeer();
    h = await startMailHarness({ MAILROOM_MX_PORT: String(peer.port) });
    h.dns.set('peer.test', { MX: [{ exchange: 'mx1.peer.test', priority: 10 }] });
    h.dns.set('mx1.peer.test', { A: ['127.0.0.1'] });
    const base = await listen(h.app);
    acme = await createTenant(h, 'Acme');
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(acme.apiKey), payload: { address: SUPPORT } })).statusCode).toBe(201);
    token = await login(h, acme.ownerEmail, acme.password);
    worker = createWorker(h.services.handlers, { queue: h.services.queue, logger: createLogger('silent'), leaseMs: h.config.leaseMs, pollMs: 20 });
    worker.start();
    browser = await startBrowser();
    page = await browser.page();
    page.setDefaultTimeout(10_000);
    page.on('pageerror', (err) => console.error('page error:', err.message));
    await logIn(page, base, acme.ownerEmail, acme.password);
    await page.getByRole('heading', { name: 'Inbox' }).waitFor();
  });
  afterAll(async () => {
    await browser?.close();
    await worker?.stop(2000);
    await h?.close();
    await peer?.close();
  });

  const sentMail = async (id: string) => {
    await expect.poll(() => peer.accepted.some((m) => m.raw.includes(`<${id}@`)), { timeout: 15_000 }).toBe(true);
    const raw = peer.accepted.find((m) => m.raw.includes(`<${id}@`))!.raw;
    return { raw, mail: await PostalMime.parse(raw, { attachmentEncoding: 'arraybuffer' }) };
  };

  it('attaches a file dropped onto the form and one pasted into a field, and sends both', async () => {
    const dropped = randomBytes(5000);
    const pastedFile = Buffer.from('%PDF-1.4 pasted bytes');
    await page.keyboard.press('c');
    await page.getByRole('heading', { name: 'New message' }).waitFor();
    await field('To').fill('customer@peer.test');
    await field('Subject').fill('Dropped and pasted');
    await field('Message').fill('Two files.');
    // Dragging files over the form shows where to drop them.
    await fileEvent(field('Subject'), 'dragenter', [spec('dropped.bin', 'application/octet-stream', dropped)]);
    await page.getByText('Drop files to attach them').waitFor();
    expect(await axeViolations(page)).toEqual([]);
    await fileEvent(field('Subject'), 'drop', [spec('dropped.bin', 'application/octet-stream', dropped)]);
    await page.getByText('Drop files to attach them').waitFor({ state: 'detached' });
    const list = page.getByRole('list', { name: 'Attached files' });
    await list.getByText('dropped.bin').waitFor();
    await fileEvent(field('Subject'), 'paste', [spec('pasted.pdf', 'application/pdf', pastedFile)]);
    await list.getByText('pasted.pdf').waitFor();
    // A file pasted into the message's text (not an image) is attached too, not put in the text.
    await fileEvent(field('Message'), 'paste', [spec('notes.txt', 'text/plain', Buffer.from('notes'))]);
    await list.getByText('notes.txt').waitFor();
    await page.getByRole('button', { name: 'Remove notes.txt' }).click();
    await list.getByText('notes.txt').waitFor({ state: 'detached' });
    expect(await field('Subject').inputValue()).toBe('Dropped and pasted');

    await page.getByRole('button', { name: 'Send' }).click();
    await page.waitForURL(/\/sent\/msg_[0-9a-z]{26}$/);
    const { mail } = await sentMail(/msg_[0-9a-z]{26}/.exec(page.url())![0]);
    expect(mail.attachments.map((a) => [a.filename, a.disposition, sha256(new Uint8Array(a.content as ArrayBuffer))]))
      .toEqual([['dropped.bin', 'attachment', sha256(dropped)], ['pasted.pdf', 'attachment', sha256(pastedFile)]]);
  });

  it('puts a pasted image in the text: kept over a reload, sent as a related cid: part, shown inline when read', async () => {
    const image = png(24);
    await page.keyboard.press('c');
    await page.getByRole('heading', { name: 'New message' }).waitFor();
    await field('To').fill('customer@peer.test');
    await field('Subject').fill('A picture');
    const body = field('Message');
    await body.fill('Look: ');
    await fileEvent(body, 'paste', [spec('red.png', 'image/png', image)]);
    const shown = body.getByRole('img', { name: 'red.png' });
    await shown.waitFor();
    await expect.poll(() => naturalWidth(shown), IMAGE_WAIT).toBe(24);
    await page.getByRole('list', { name: 'Attached files' }).getByText('in the message').waitFor();
    // An image dropped on the text goes in too; deleted from the text, it is not sent.
    await fileEvent(body, 'drop', [spec('gone.png', 'image/png', png(8))]);
    const gone = body.getByRole('img', { name: 'gone.png' });
    await expect.poll(() => naturalWidth(gone), IMAGE_WAIT).toBe(8);
    await gone.click();
    await page.keyboard.press('Delete');
    await gone.waitFor({ state: 'detached' });
    expect(await axeViolations(page)).toEqual([]);
    // The draft keeps the image: after a reload the editor shows it again from the draft's file.
    await page.waitForURL(/\/compose\/drf_[0-9a-z]{26}$/);
    await expect.poll(async () => (await page.getByRole('status').allTextContents()).some((t) => t.startsWith('Draft saved'))).toBe(true);
    await page.reload();
    await page.getByRole('heading', { name: 'Draft' }).waitFor();
    const again = field('Message').getByRole('img', { name: 'red.png' });
    await expect.poll(() => naturalWidth(again), IMAGE_WAIT).toBe(24);

    await page.getByRole('button', { name: 'Send' }).click();
    await page.waitForURL(/\/sent\/msg_[0-9a-z]{26}$/);
    const { raw, mail } = await sentMail(/msg_[0-9a-z]{26}/.exec(page.url())![0]);
    expect(raw.toString()).toMatch(/multipart\/related/i);
    const [part] = mail.attachments;
    expect(mail.attachments).toHaveLength(1);
    expect(part!.disposition).toBe('inline');
    expect(sha256(new Uint8Array(part!.content as ArrayBuffer))).toBe(sha256(image));
    const cid = part!.contentId!.replace(/^<|>$/g, '');
    expect(mail.html).toContain(`src="cid:${cid}"`);
    expect(mail.text).toContain('[image: red.png]');
    // Read back in the web app, the image shows inside the message's frame.
    const frame = page.getByTitle('Message: A picture').contentFrame();
    const inFrame = frame.getByRole('img', { name: 'red.png' });
    await expect.poll(() => naturalWidth(inFrame), IMAGE_WAIT).toBe(24);
    expect(await inFrame.getAttribute('src')).toMatch(/^data:image\/png;base64,/);
    expect(await axeViolations(page)).toEqual([]);
  });

  it('attaches files to a new draft, removes one, and sends the rest byte-identical', async () => {
    const report = randomBytes(120_000);
    await page.keyboard.press('c');
    await page.getByRole('heading', { name: 'New message' }).waitFor();
    await field('To').fill('customer@peer.test');
    await field('Subject').fill('The report');
    await field('Message').fill('Attached.');
    await page.locator('#compose-files').setInputFiles([
      { name: 'report.bin', mimeType: 'application/octet-stream', buffer: report },
      { name: 'wrong.txt', mimeType: 'text/plain', buffer: Buffer.from('not this one') },
    ]);
    const list = page.getByRole('list', { name: 'Attached files' });
    await list.getByText('wrong.txt').waitFor();
    expect(await list.textContent()).toContain('report.bin');
    // The files went to the draft the form saved first.
    await page.waitForURL(/\/compose\/drf_[0-9a-z]{26}$/);
    const draftId = /drf_[0-9a-z]{26}/.exec(page.url())![0];
    const draft = (await h.app.inject({ method: 'GET', url: `/app/api/drafts/${draftId}`, headers: session(token) })).json<{ attachments: Array<{ filename: string; size: number }> }>();
    expect(draft.attachments.map((a) => [a.filename, a.size])).toEqual([['report.bin', report.length], ['wrong.txt', 12]]);

    await page.getByRole('button', { name: 'Remove wrong.txt' }).click();
    await list.getByText('wrong.txt').waitFor({ state: 'detached' });
    // A reload shows the draft's files as stored.
    await page.reload();
    await page.getByRole('heading', { name: 'Draft' }).waitFor();
    await page.getByRole('list', { name: 'Attached files' }).getByText('report.bin').waitFor();
    expect(await page.getByRole('list', { name: 'Attached files' }).getByRole('listitem').count()).toBe(1);

    await page.getByRole('button', { name: 'Send' }).click();
    await page.waitForURL(/\/sent\/msg_[0-9a-z]{26}$/);
    const id = /msg_[0-9a-z]{26}/.exec(page.url())![0];
    await expect.poll(() => peer.accepted.some((m) => m.raw.includes(`<${id}@`)), { timeout: 15_000 }).toBe(true);
    const mail = await PostalMime.parse(peer.accepted.find((m) => m.raw.includes(`<${id}@`))!.raw, { attachmentEncoding: 'arraybuffer' });
    expect(mail.attachments.map((a) => [a.filename, sha256(new Uint8Array(a.content as ArrayBuffer))])).toEqual([['report.bin', sha256(report)]]);
  });
});
