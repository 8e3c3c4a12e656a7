import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
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
const THEIRS = 'theirs@mailroom.localhost';
const PASTED = '<p>Pasted <b>bold</b><img src="x" onerror="window.pwned=1"></p><script>window.pwned=2</script><p onclick="window.pwned=3">More</p>';
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface ApiDraft {
  draft_id: string;
  body: string;
  html: string | null;
}

async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const result = await page.evaluate<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: unknown }> }> }>(
    "axe.run(document, { iframes: false, resultTypes: ['violations'] })",
  );
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${JSON.stringify(v.nodes.map((n) => n.target))}`);
}

/** The MIME parts of a raw message: each part's Content-Type line, and the decoded text and HTML. */
async function partsOf(raw: Buffer): Promise<{ contentType: string; text: string; html: string }> {
  const parsed = await PostalMime.parse(raw);
  const head = raw.toString('latin1').split('\r\n\r\n')[0] ?? '';
  const contentType = /^content-type:\s*([^;\r\n]+)/im.exec(head)?.[1] ?? '';
  return { contentType, text: parsed.text ?? '', html: parsed.html ?? '' };
}

describe.skipIf(!HAS_CHROMIUM)(`web app: the rich-text composer in Chromium (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let peer: SmtpPeer;
  let worker: Worker;
  let base: string;
  let acme: Tenant;
  let other: Tenant;
  let token: string;
  let browser: Browser;
  let page: Page;

  const apiGet = async <T>(url: string): Promise<T> => (await h.app.inject({ method: 'GET', url: `/app/api${url}`, headers: session(token) })).json<T>();
  const drafts = async () => (await apiGet<{ drafts: ApiDraft[] }>('/drafts')).drafts;
  const field = (label: string) => page.getByLabel(label, { exact: true });
  const editor = () => page.getByRole('textbox', { name: 'Message', exact: true });
  const newMessage = async () => {
    await page.goto(`${base}/mail/${encodeURIComponent(SUPPORT)}/inbox`);
    await page.getByRole('heading', { name: 'Inbox' }).waitFor();
    await page.keyboard.press('c');
    await page.getByRole('heading', { name: 'New message' }).waitFor();
    await editor().waitFor();
  };

  beforeAll(async () => {
    peer = await startSmtpPeer();
    h = await startMailHarness({ MAILROOM_MX_PORT: String(peer.port) });
    h.dns.set('peer.test', { MX: [{ exchange: 'mx1.peer.test', priority: 10 }] });
    h.dns.set('mx1.peer.test', { A: ['127.0.0.1'] });
    base = await listen(h.app);
    acme = await createTenant(h, 'Acme');
    other = await createTenant(h, 'Other');
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(acme.apiKey), payload: { address: SUPPORT } })).statusCode).toBe(201);
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(other.apiKey), payload: { address: THEIRS } })).statusCode).toBe(201);
    // Mail each workspace has sent before: acme to a customer, the other workspace to its own contact.
    for (const [tenant, from, to] of [[acme, SUPPORT, 'Carol Customer <carol.customer@peer.test>'], [other, THEIRS, 'carl.secret@peer.test']] as const) {
      const res = await h.app.inject({ method: 'POST', url: '/send', headers: bearer(tenant.apiKey), payload: { from_mailbox: from, to, subject: 'Earlier', body: 'Earlier' } });
      expect(res.statusCode, res.body).toBe(202);
    }
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

  it("sets a mailbox's signature in the settings, and a new message starts with it", async () => {
    await page.goto(`${base}/settings/signatures`);
    await page.getByRole('heading', { name: 'Signatures' }).waitFor();
    const sig = page.getByRole('textbox', { name: `Signature of ${SUPPORT}` });
    await sig.click();
    await page.keyboard.type('Acme Support, since 1999');
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Save signature' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    expect(await apiGet('/signatures')).toMatchObject({ signatures: [{ mailbox: SUPPORT, html: '<p>Acme Support, since 1999</p>' }] });
    await newMessage();
    expect(await editor().innerText()).toContain('Acme Support, since 1999');
  });

  it('writes bold, a list and a link, and Ctrl+Enter sends it as multipart/alternative with a readable text part', async () => {
    await field('To').fill('customer@peer.test');
    await field('Subject').fill('Formatted news');
    // The empty line above the signature.
    await editor().locator('p').first().click();
    await page.keyboard.press('Control+b');
    await page.keyboard.type('Important');
    await page.keyboard.press('Control+b');
    await page.keyboard.type(' news.');
    await page.keyboard.press('Enter');
    // The editor's input rule: "- " at the start of a line begins a bulleted list.
    await page.keyboard.type('- first point');
    await page.keyboard.press('Enter');
    await page.keyboard.type('second point');
    await page.keyboard.press('Enter');
    await page.keyboard.press('Enter');
    await page.keyboard.type('Read the report');
    for (let i = 0; i < 'the report'.length; i++) await page.keyboard.press('Shift+ArrowLeft');
    await page.getByRole('button', { name: 'Link' }).click();
    await page.getByLabel('Link address').fill('https://example.com/report');
    await page.getByRole('button', { name: 'Apply link' }).click();
    expect(await seriousViolations(page)).toEqual([]);

    await editor().click();
    await page.keyboard.press('Control+Enter');
    await page.waitForURL(/\/sent\/msg_[0-9a-z]{26}$/);
    await page.getByRole('region', { name: 'Delivery' }).getByRole('status').filter({ hasText: 'Accepted' }).waitFor({ timeout: 30_000 });
    expect(peer.accepted.filter((m) => m.recipients.includes('customer@peer.test'))).toHaveLength(1);
    const raw = peer.accepted.find((m) => m.recipients.includes('customer@peer.test'))!.raw;
    const { contentType, text, html } = await partsOf(raw);
    expect(contentType).toBe('multipart/alternative');
    expect(html).toContain('<strong>Important</strong> news.');
    expect(html).toMatch(/<ul><li><p>first point<\/p><\/li><li><p>second point<\/p><\/li><\/ul>/);
    expect(html).toMatch(/<a [^>]*href="https:\/\/example\.com\/report"[^>]*>the report<\/a>/);
    expect(text.replace(/\r\n/g, '\n').trim()).toBe(
      'Important news.\n\n- first point\n- second point\n\nRead the report <https://example.com/report>\n\nAcme Support, since 1999',
    );
    // The sent copy the API shows is the same message.
    expect(await drafts()).toEqual([]);
  });

  it('cleans pasted HTML before it enters the editor', async () => {
    await newMessage();
    await field('Subject').fill('Pasted');
    await editor().click();
    await page.keyboard.press('Control+Home');
    // A paste as another app's clipboard gives it: HTML with a script, a handler and an image that runs one.
    await page.evaluate(`(() => {
      const data = new DataTransfer();
      data.setData('text/html', ${JSON.stringify(PASTED)});
      data.setData('text/plain', 'Pasted bold More');
      document.querySelector('[role="textbox"][contenteditable="true"]').dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
    })()`);
    await expect.poll(async () => (await drafts()).map((d) => d.html ?? ''), { timeout: 15_000 }).toEqual([expect.stringContaining('<strong>bold</strong>')]);
    const [draft] = await drafts();
    expect(draft!.html).not.toMatch(/script|onerror|onclick|<img/i);
    expect(draft!.body).toContain('Pasted bold');
    expect(await editor().innerHTML()).not.toMatch(/script|onerror|onclick/i);
    expect(await page.evaluate('window.pwned')).toBeUndefined();
  });

  it('completes addresses mailed before, never those of another workspace, as an accessible combobox', async () => {
    await newMessage();
    const to = page.getByRole('combobox', { name: 'To' });
    const asked = page.waitForResponse((r) => r.url().includes('/app/api/contacts?q=carl'));
    await to.fill('carl');
    await asked;
    await expect.poll(() => to.getAttribute('aria-expanded')).toBe('false');
    // Acme never mailed carl.secret@peer.test (the other workspace did): nothing is offered.
    expect(await page.locator('#compose-to-options [role="option"]').count()).toBe(0);

    await to.fill('caro');
    const option = page.getByRole('listbox', { name: 'To suggestions' }).getByRole('option', { name: /carol\.customer@peer\.test/ });
    await option.waitFor();
    expect(await to.getAttribute('aria-expanded')).toBe('true');
    expect(await seriousViolations(page)).toEqual([]);
    await page.keyboard.press('ArrowDown');
    expect(await to.getAttribute('aria-activedescendant')).toBe(await option.getAttribute('id'));
    await page.keyboard.press('Enter');
    expect(await to.inputValue()).toBe('carol.customer@peer.test, ');
    expect(await to.getAttribute('aria-expanded')).toBe('false');
    // Completing a second address keeps the first.
    await to.pressSequentially('cus');
    await page.getByRole('option', { name: 'customer@peer.test', exact: true }).click();
    expect(await to.inputValue()).toBe('carol.customer@peer.test, customer@peer.test, ');
  });

  it('keeps the first page load under budget: the editor comes with the compose form only', async () => {
    const fresh = await browser.page();
    const scripts: string[] = [];
    fresh.on('request', (r) => {
      if (r.resourceType() === 'script') scripts.push(r.url());
    });
    await logIn(fresh, base, acme.ownerEmail, acme.password);
    await fresh.getByRole('heading', { name: 'Inbox' }).waitFor();
    const before = scripts.length;
    expect(scripts.some((u) => /RichEditor/.test(u))).toBe(false);
    await fresh.keyboard.press('c');
    await fresh.getByRole('textbox', { name: 'Message', exact: true }).waitFor();
    expect(scripts.slice(before).some((u) => /RichEditor/.test(u))).toBe(true);
    await fresh.close();
  });
});
