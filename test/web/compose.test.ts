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

const SUPPORT = 'helpdesk@mailroom.localhost';
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface ApiMessage {
  message_id: string;
  thread_id: string;
  direction: string;
  subject: string;
}
interface ApiDraft {
  draft_id: string;
  to: string[];
  subject: string;
  body: string;
  in_reply_to: string | null;
}

async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const result = await page.evaluate<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: unknown }> }> }>(
    "axe.run(document, { iframes: false, resultTypes: ['violations'] })",
  );
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${JSON.stringify(v.nodes.map((n) => n.target))}`);
}

describe.skipIf(!HAS_CHROMIUM)(`web app: writing mail in Chromium (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let peer: SmtpPeer;
  let worker: Worker;
  let base: string;
  let acme: Tenant;
  let token: string;
  let browser: Browser;
  let page: Page;

  const deliver = async (mail: Parameters<MailHarness['send']>[0]): Promise<string> =>
    (await h.send({ from: 'Alice Example <alice@sender.test>', to: SUPPORT, ...mail })).response.match(/msg_[0-9a-z]{26}/)![0];
  const apiGet = async <T>(url: string): Promise<T> => (await h.app.inject({ method: 'GET', url: `/app/api${url}`, headers: session(token) })).json<T>();
  const drafts = async () => (await apiGet<{ drafts: ApiDraft[] }>('/drafts')).drafts;
  const field = (label: string) => page.getByLabel(label, { exact: true });
  const saved = () => page.getByRole('status').filter({ hasText: 'Draft saved at' }).waitFor();

  beforeAll(async () => {
    peer = await startSmtpPeer();
    h = await startMailHarness({ MAILROOM_MX_PORT: String(peer.port) });
    for (const domain of ['peer.test', 'sender.test']) h.dns.set(domain, { MX: [{ exchange: 'mx1.peer.test', priority: 10 }] });
    h.dns.set('mx1.peer.test', { A: ['127.0.0.1'] });
    base = await listen(h.app);
    acme = await createTenant(h, 'Acme');
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(acme.apiKey), payload: { address: SUPPORT } })).statusCode).toBe(201);
    token = await login(h, acme.ownerEmail, acme.password);
    worker = createWorker(h.services.handlers, { queue: h.services.queue, logger: createLogger('silent'), leaseMs: h.config.leaseMs, pollMs: 20 });
    worker.start();
    browser = await startBrowser();
    page = await browser.page();
    // A step that cannot happen fails with what it waited for, well inside the test's own time-out.
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

  it('composes with c, saves the draft as it is typed, and the draft survives a reload', async () => {
    await page.locator('.live.on').waitFor();
    await page.keyboard.press('c');
    await page.getByRole('heading', { name: 'New message' }).waitFor();
    expect(await page.evaluate('document.activeElement?.id')).toBe('compose-to');
    await field('To').fill('customer@peer.test');
    await field('Subject').fill('Your quarterly report');
    await field('Message').fill('Hello,\n\nthe report is attached in spirit.');
    await saved();
    await page.waitForURL(/\/compose\/drf_[0-9a-z]{26}$/);
    // The first save may have left before the body was typed: wait for the one that has it.
    await expect.poll(async () => (await drafts())[0]?.body, { timeout: 15_000 }).toBe('Hello,\n\nthe report is attached in spirit.');
    const [draft] = await drafts();
    expect(draft).toMatchObject({ to: ['customer@peer.test'], subject: 'Your quarterly report', body: 'Hello,\n\nthe report is attached in spirit.' });
    expect(page.url()).toContain(draft!.draft_id);
    // One draft however many pauses: later changes PATCH it.
    await field('Subject').fill('Your quarterly report (Q3)');
    await expect.poll(async () => (await drafts()).map((d) => d.subject), { timeout: 15_000 }).toEqual(['Your quarterly report (Q3)']);
    await page.reload();
    await page.getByRole('heading', { name: 'Draft' }).waitFor();
    expect(await field('To').inputValue()).toBe('customer@peer.test');
    expect(await field('Subject').inputValue()).toBe('Your quarterly report (Q3)');
    expect(await field('Message').innerText()).toContain('the report is attached in spirit.');
    // It is listed with the mailbox's drafts, and opens from there.
    await page.getByRole('link', { name: 'Drafts' }).click();
    await page.getByRole('heading', { name: 'Drafts' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await page.locator('.drafts-list a', { hasText: 'Your quarterly report (Q3)' }).click();
    await page.getByRole('heading', { name: 'Draft' }).waitFor();
  });

  it('sends the draft and shows the answer, then its delivery going to accepted live', async () => {
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Send' }).click();
    await page.waitForURL(/\/sent\/msg_[0-9a-z]{26}$/);
    await page.getByText('Sent: the server took it (queued).').waitFor();
    const delivery = page.getByRole('region', { name: 'Delivery' });
    await delivery.getByRole('status').filter({ hasText: 'Accepted' }).waitFor();
    const row = delivery.locator('tr[data-recipient="customer@peer.test"]');
    await row.getByText('Accepted').waitFor();
    expect(await row.textContent()).toContain('250');
    await delivery.getByRole('list', { name: 'Delivery attempts' }).getByText('sent', { exact: true }).waitFor();
    expect(peer.accepted.map((m) => m.recipients)).toContainEqual(['customer@peer.test']);
    expect(await drafts()).toEqual([]);
    expect(await seriousViolations(page)).toEqual([]);
    // The sent folder lists it with its status.
    await page.getByRole('link', { name: 'Sent' }).click();
    await page.locator('.sent-list li', { hasText: 'Your quarterly report (Q3)' }).getByText('Accepted').waitFor();
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('replies with r: the answer is addressed, quoted and lands in the same thread', async () => {
    const original = await deliver({ subject: 'Where is order 99?', text: 'It has not come.\nAlice', messageId: '<order-99@sender.test>' });
    await page.goto(`${base}/mail/${encodeURIComponent(SUPPORT)}/inbox/${original}`);
    await page.getByRole('heading', { name: 'Where is order 99?' }).waitFor();
    await page.keyboard.press('r');
    await page.getByRole('heading', { name: 'Reply', exact: true }).waitFor();
    expect(await field('To').inputValue()).toBe('alice@sender.test');
    expect(await field('Subject').inputValue()).toBe('Re: Where is order 99?');
    // The quote is a quotation in the editor, and "> " lines in the text part.
    expect(await page.getByRole('textbox', { name: 'Message', exact: true }).locator('blockquote').innerText()).toBe('It has not come.\nAlice');
    // The cursor is above the quote, once the editor has taken the focus: typed before that, keys would go elsewhere.
    await page.waitForFunction(`document.activeElement !== null && document.activeElement.closest('.rich-body') !== null`);
    await page.keyboard.type('It ships today.');
    await saved();
    expect((await drafts())[0]).toMatchObject({ in_reply_to: original, to: ['alice@sender.test'] });
    await page.keyboard.press('Control+Enter');
    await page.waitForURL(/\/sent\/msg_[0-9a-z]{26}$/);
    const sentId = /msg_[0-9a-z]{26}$/.exec(page.url())![0];
    await page.getByRole('region', { name: 'Delivery' }).getByRole('status').filter({ hasText: 'Accepted' }).waitFor();
    const [sent, asked] = await Promise.all([apiGet<ApiMessage>(`/messages/${sentId}`), apiGet<ApiMessage>(`/messages/${original}`)]);
    expect(sent.thread_id).toBe(asked.thread_id);
    expect(sent.direction).toBe('outbound');
    await page.getByRole('heading', { name: 'Conversation (2 messages)' }).waitFor();
    const raw = peer.accepted.find((m) => m.recipients.includes('alice@sender.test'))!.raw.toString();
    expect(raw).toMatch(/^In-Reply-To: <order-99@sender\.test>/m);
    expect(raw).toContain('It ships today.');
  });

  it('fills reply-all and forward, and discard deletes the draft', async () => {
    const id = await deliver({ subject: 'Team lunch', text: 'Friday?', to: [SUPPORT, 'bob@sender.test'], cc: 'carol@sender.test', envelope: { from: 'alice@sender.test', to: [SUPPORT] } });
    await page.goto(`${base}/mail/${encodeURIComponent(SUPPORT)}/inbox/${id}`);
    await page.getByRole('heading', { name: 'Team lunch' }).waitFor();
    await page.keyboard.press('a');
    await page.getByRole('heading', { name: 'Reply to all' }).waitFor();
    expect(await field('To').inputValue()).toBe('alice@sender.test, bob@sender.test');
    expect(await field('Cc').inputValue()).toBe('carol@sender.test');
    await page.getByRole('button', { name: 'Discard' }).click();
    await page.getByRole('heading', { name: 'Team lunch' }).waitFor();
    await page.getByRole('button', { name: 'Forward' }).click();
    await page.getByRole('heading', { name: 'Forward' }).waitFor();
    expect(await field('Subject').inputValue()).toBe('Fwd: Team lunch');
    expect(await field('Message').innerText()).toContain('---------- Forwarded message ----------\nFrom: Alice Example <alice@sender.test>');
    await field('To').fill('dave@peer.test');
    await saved();
    expect((await drafts()).map((d) => [d.subject, d.in_reply_to])).toEqual([['Fwd: Team lunch', null]]);
    await page.getByRole('button', { name: 'Discard' }).click();
    await page.getByRole('heading', { name: 'Team lunch' }).waitFor();
    await expect.poll(drafts).toEqual([]);
  });

  it('shows refusals in place: a blocked recipient, a malformed address while typing', async () => {
    const res = await h.app.inject({ method: 'POST', url: '/app/api/lists/outbound/block', headers: session(token), payload: { entry: 'blocked.test' } });
    expect(res.statusCode).toBe(201);
    await page.goto(`${base}/mail/${encodeURIComponent(SUPPORT)}/compose`);
    await field('To').fill('bob@');
    await field('Subject').fill('Kept although the address is not one yet');
    await page.locator('#compose-recipients-error').filter({ hasText: "'bob@' is not a valid email address" }).waitFor();
    expect(await field('To').getAttribute('aria-invalid')).toBe('true');
    await expect.poll(async () => (await drafts()).map((d) => d.subject)).toEqual(['Kept although the address is not one yet']);
    await field('To').fill('someone@blocked.test');
    await saved();
    await page.getByRole('button', { name: 'Send' }).click();
    const alert = page.locator('#compose-recipients-error[role="alert"]');
    await alert.waitFor();
    expect(await alert.textContent()).toContain('refused by the outbound lists: someone@blocked.test');
    expect(page.url()).toMatch(/\/compose\/drf_/);
    expect((await drafts()).length).toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('fits a 375 px phone while writing', async () => {
    const phone = await browser.page({ width: 375, height: 740 });
    await logIn(phone, base, acme.ownerEmail, acme.password);
    await phone.goto(`${base}/mail/${encodeURIComponent(SUPPORT)}/compose`);
    await phone.getByLabel('To', { exact: true }).waitFor();
    expect(await phone.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
    expect(await seriousViolations(phone)).toEqual([]);
    await phone.goto(`${base}/mail/${encodeURIComponent(SUPPORT)}/sent`);
    await phone.locator('.sent-list li a').first().click();
    await phone.getByRole('region', { name: 'Delivery' }).waitFor();
    expect(await phone.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
    await phone.close();
  });
});
