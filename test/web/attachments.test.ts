import { createHash, randomBytes } from 'node:crypto';
import type { Page } from 'playwright-core';
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
