import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorker, type Worker } from '../../src/jobs/worker.js';
import { createLogger } from '../../src/lib/logger.js';
import { listen } from '../helpers/cli-client.js';
import { TEST_DIALECT } from '../helpers/database.js';
import { bearer, createTenant, login, session, type Tenant } from '../helpers/harness.js';
import { HAS_CHROMIUM, logIn, startBrowser, type Browser } from '../helpers/browser.js';
import { startMailHarness, type MailHarness } from '../helpers/mail.js';
import { startSmtpPeer, type SmtpPeer } from '../helpers/smtp-peer.js';
import { messageOfReturnPath } from '../helpers/reports.js';

const SUPPORT = 'helpdesk@mailroom.localhost';
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
/**
 * The undo window. The server's clock is the test's and does not move, so the message stays held on the server
 * whatever this is; in the browser it is real time, long enough for a reload before Undo.
 */
const HOLD_SECONDS = 45;

async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const result = await page.evaluate<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: unknown }> }> }>(
    "axe.run(document, { iframes: false, resultTypes: ['violations'] })",
  );
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${JSON.stringify(v.nodes.map((n) => n.target))}`);
}

/** In the web app: Send holds the message, a "Sending…" toast offers Undo, and Undo reopens it as a draft. */
describe.skipIf(!HAS_CHROMIUM)(`web app: undo send in Chromium (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let peer: SmtpPeer;
  let worker: Worker;
  let base: string;
  let acme: Tenant;
  let token: string;
  let browser: Browser;
  let page: Page;

  const field = (label: string) => page.getByLabel(label, { exact: true });
  const saved = () => page.getByRole('status').filter({ hasText: 'Draft saved at' }).waitFor();
  const toast = () => page.getByRole('status').filter({ hasText: 'Sending…' });
  const sentIds = async () =>
    (await h.app.inject({ method: 'GET', url: '/app/api/sent', headers: session(token) })).json<{ messages: Array<{ message_id: string; subject: string; status: string }> }>().messages;
  const delivered = (subject: string) => peer.accepted.filter((m) => m.raw.toString('latin1').includes(`Subject: ${subject}`));

  beforeAll(async () => {
    peer = await startSmtpPeer();
    h = await startMailHarness({ MAILROOM_MX_PORT: String(peer.port), MAILROOM_UNDO_SEND_SECONDS: String(HOLD_SECONDS) });
    h.dns.set('peer.test', { MX: [{ exchange: 'mx1.peer.test', priority: 10 }] });
    h.dns.set('mx1.peer.test', { A: ['127.0.0.1'] });
    base = await listen(h.app);
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

  /** Write a new message with a file and press Send; the id of the held message in sent. */
  async function writeAndSend(subject: string): Promise<string> {
    await page.goto(`${base}/mail/${encodeURIComponent(SUPPORT)}/compose`);
    await page.getByRole('heading', { name: 'New message' }).waitFor();
    await field('To').fill('customer@peer.test');
    await field('Cc').fill('boss@peer.test');
    await field('Subject').fill(subject);
    await field('Message').fill('Here are the figures.');
    await saved();
    await field('Files').setInputFiles([{ name: 'figures.csv', mimeType: 'text/csv', buffer: Buffer.from('a,b\n1,2\n') }]);
    await page.getByRole('list', { name: 'Attached files' }).getByText('figures.csv').waitFor();
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await toast().waitFor();
    const held = (await sentIds()).find((m) => m.subject === subject);
    expect(held?.status).toBe('scheduled');
    return held!.message_id;
  }

  /** The composer shows the message again as a draft: its recipients, subject, text and file. */
  async function composerShowsDraft(subject: string): Promise<void> {
    await page.getByRole('heading', { name: 'Draft' }).waitFor();
    await page.waitForURL(/\/compose\/drf_[0-9a-z]{26}$/);
    expect(await field('To').inputValue()).toBe('customer@peer.test');
    expect(await field('Cc').inputValue()).toBe('boss@peer.test');
    expect(await field('Subject').inputValue()).toBe(subject);
    await field('Message').getByText('Here are the figures.').waitFor();
    await page.getByRole('list', { name: 'Attached files' }).getByText('figures.csv').waitFor();
  }

  it('Send closes the form with a "Sending…" toast; Undo reopens the message as a draft and nothing is sent', async () => {
    const id = await writeAndSend('Quarterly figures');
    // The form closed to where it was opened from: the mailbox's inbox.
    await page.getByRole('heading', { name: 'Inbox' }).waitFor();
    expect(await toast().getByRole('button', { name: 'Undo' }).isEnabled()).toBe(true);
    expect(await seriousViolations(page)).toEqual([]);

    await toast().getByRole('button', { name: 'Undo' }).click();
    await composerShowsDraft('Quarterly figures');
    await toast().waitFor({ state: 'detached' });
    expect(await seriousViolations(page)).toEqual([]);
    expect((await h.app.inject({ method: 'GET', url: `/app/api/messages/${id}`, headers: session(token) })).statusCode).toBe(404);
    expect((await sentIds()).map((m) => m.message_id)).not.toContain(id);
    expect(peer.accepted.filter((m) => messageOfReturnPath(h, m.mailFrom) === id)).toEqual([]);
  });

  it('after a reload within the window the toast still offers Undo, which reopens the draft', async () => {
    const id = await writeAndSend('Figures after a reload');
    await page.reload();
    await page.getByRole('heading', { name: 'Inbox' }).waitFor();
    await toast().getByRole('button', { name: 'Undo' }).click();
    await composerShowsDraft('Figures after a reload');
    expect((await h.app.inject({ method: 'GET', url: `/app/api/messages/${id}`, headers: session(token) })).statusCode).toBe(404);

    // Sent again from the draft (the window passing on the server's clock), it leaves once, with its file.
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await toast().waitFor();
    const again = (await sentIds()).find((m) => m.subject === 'Figures after a reload')!;
    h.clock.advance(HOLD_SECONDS * 1000);
    await expect.poll(() => delivered('Figures after a reload').length, { timeout: 10_000 }).toBe(2);
    expect(delivered('Figures after a reload').map((m) => messageOfReturnPath(h, m.mailFrom))).toEqual([again.message_id, again.message_id]);
    expect(delivered('Figures after a reload')[0]!.raw.toString('latin1')).toContain('figures.csv');
  });
});
