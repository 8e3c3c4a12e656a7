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
const MINUTE = 60_000;

async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const result = await page.evaluate<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: unknown }> }> }>(
    "axe.run(document, { iframes: false, resultTypes: ['violations'] })",
  );
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${JSON.stringify(v.nodes.map((n) => n.target))}`);
}

/** In the web app: "Send later" on the compose form, a scheduled message's status and its Cancel. */
describe.skipIf(!HAS_CHROMIUM)(`web app: scheduled send in Chromium (${TEST_DIALECT})`, () => {
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
  const statusOf = async (id: string) => (await h.app.inject({ method: 'GET', url: `/app/api/messages/${id}`, headers: session(token) })).json<{ status: string; send_at?: string }>();
  /** The datetime-local text of an instant in the browser's own time zone, as a person would type it. */
  const localText = (ms: number) =>
    page.evaluate((at) => {
      const d = new Date(at);
      const p = (n: number) => String(n).padStart(2, '0');
      return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
    }, ms);

  beforeAll(async () => {
    peer = await startSmtpPeer();
    h = await startMailHarness({ MAILROOM_MX_PORT: String(peer.port) });
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

  async function schedule(subject: string, sendAt: number): Promise<string> {
    await page.goto(`${base}/mail/${encodeURIComponent(SUPPORT)}/compose`);
    await page.getByRole('heading', { name: 'New message' }).waitFor();
    await field('To').fill('customer@peer.test');
    await field('Subject').fill(subject);
    await field('Message').fill('Later, please.');
    await saved();
    await field('Send later').fill(await localText(sendAt));
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Schedule' }).click();
    await page.waitForURL(/\/sent\/msg_[0-9a-z]{26}$/);
    return /msg_[0-9a-z]{26}$/.exec(page.url())![0];
  }

  it('Send later schedules the draft: Scheduled, with its time; Cancel sending makes it Cancelled, never delivered', async () => {
    const sendAt = h.clock.now() + 10 * MINUTE;
    const id = await schedule('Reminder for Monday', sendAt);
    await page.getByText('Scheduled: the server will send it at its time.').waitFor();
    const delivery = page.getByRole('region', { name: 'Delivery' });
    await delivery.getByRole('status').filter({ hasText: 'Scheduled' }).waitFor();
    expect(await delivery.locator('.scheduled time').getAttribute('datetime')).toBe(new Date(sendAt).toISOString());
    expect(await statusOf(id)).toMatchObject({ status: 'scheduled', send_at: new Date(sendAt).toISOString() });
    expect(await seriousViolations(page)).toEqual([]);

    await delivery.getByRole('button', { name: 'Cancel sending' }).click();
    await delivery.getByRole('status').filter({ hasText: 'Cancelled' }).waitFor();
    expect(await delivery.getByRole('button', { name: 'Cancel sending' }).count()).toBe(0);
    expect((await statusOf(id)).status).toBe('cancelled');
    await page.getByRole('link', { name: 'Sent' }).click();
    await page.locator('.sent-list li', { hasText: 'Reminder for Monday' }).getByText('Cancelled').waitFor();
    expect(peer.accepted.filter((m) => messageOfReturnPath(h, m.mailFrom) === id)).toEqual([]);
  });

  it('a send that leaves out a suppressed recipient says so', async () => {
    const added = await h.app.inject({ method: 'POST', url: '/app/api/suppressions', headers: session(token), payload: { address: 'gone@peer.test' } });
    expect(added.statusCode).toBe(201);
    await page.goto(`${base}/mail/${encodeURIComponent(SUPPORT)}/compose`);
    await page.getByRole('heading', { name: 'New message' }).waitFor();
    await field('To').fill('customer@peer.test, gone@peer.test');
    await field('Subject').fill('Two of us');
    await field('Message').fill('Hello both.');
    await saved();
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await page.waitForURL(/\/sent\/msg_[0-9a-z]{26}$/);
    await page.getByText("Not sent to gone@peer.test: on this workspace's suppression list").waitFor();
    await page.getByRole('region', { name: 'Delivery' }).getByRole('status').filter({ hasText: 'Accepted' }).waitFor();
    const id = /msg_[0-9a-z]{26}$/.exec(page.url())![0];
    expect(peer.accepted.filter((m) => messageOfReturnPath(h, m.mailFrom) === id).map((m) => m.recipients)).toEqual([['customer@peer.test']]);
  });

  it('a scheduled message goes to Accepted live when its time comes', async () => {
    const sendAt = h.clock.now() + 5 * MINUTE;
    const id = await schedule('Sent at five past', sendAt);
    const delivery = page.getByRole('region', { name: 'Delivery' });
    await delivery.getByRole('status').filter({ hasText: 'Scheduled' }).waitFor();
    h.clock.set(sendAt);
    await delivery.getByRole('status').filter({ hasText: 'Accepted' }).waitFor();
    expect(peer.accepted.filter((m) => messageOfReturnPath(h, m.mailFrom) === id)).toHaveLength(1);
  });
});
