import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import type { Frame, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen } from '../helpers/cli-client.js';
import { TEST_DIALECT } from '../helpers/database.js';
import { bearer, createTenant, type Tenant } from '../helpers/harness.js';
import { HAS_CHROMIUM, logIn, startBrowser, type Browser } from '../helpers/browser.js';
import { startMailHarness, type MailHarness } from '../helpers/mail.js';
import { hostileHtml } from './hostile.js';

const SUPPORT = 'helpdesk@mailroom.localhost';
const PDF = Buffer.from('%PDF-1.4 fake receipt\n');
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface ApiMessage {
  message_id: string;
  folder: string;
  labels: string[];
  read: boolean;
  flagged: boolean;
}

/** axe-core's serious and critical violations on the page as it is (the sender's HTML in its frame excluded). */
async function seriousViolations(page: Page): Promise<string[]> {
  // Evaluated over CDP, which the page's CSP does not govern (it refuses inline script tags).
  await page.evaluate(AXE);
  const result = await page.evaluate<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: unknown }> }> }>(
    "axe.run(document, { iframes: false, resultTypes: ['violations'] })",
  );
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${JSON.stringify(v.nodes.map((n) => n.target))}`);
}

describe.skipIf(!HAS_CHROMIUM)(`web app: webmail in Chromium (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let base: string;
  let acme: Tenant;
  let browser: Browser;
  let page: Page;
  let receiver: Server;
  let receiverOrigin: string;
  const received: string[] = [];
  const outside: string[] = [];
  const dialogs: string[] = [];

  const deliver = async (mail: Parameters<MailHarness['send']>[0]): Promise<string> =>
    (await h.send({ from: 'Alice Example <alice@sender.test>', to: SUPPORT, ...mail })).response.match(/msg_[0-9a-z]{26}/)![0];
  const apiMessage = async (id: string): Promise<ApiMessage> =>
    (await h.app.inject({ method: 'GET', url: `/messages/${id}`, headers: bearer(acme.apiKey) })).json<ApiMessage>();
  const row = (subject: string) => page.locator('.messages li', { hasText: subject });
  const openInbox = () => page.goto(`${base}/mail/${encodeURIComponent(SUPPORT)}/inbox`);

  beforeAll(async () => {
    h = await startMailHarness();
    base = await listen(h.app);
    acme = await createTenant(h, 'Acme');
    const res = await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(acme.apiKey), payload: { address: SUPPORT } });
    expect(res.statusCode).toBe(201);
    receiver = createServer((req, res) => {
      received.push(req.url ?? '');
      res.end('');
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverOrigin = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    browser = await startBrowser();
    page = await browser.page();
    // A request outside the app that went out (finished) or failed for any reason but the frame's policy: Chromium
    // announces some CSS url()s before its Content-Security-Policy refuses them, and a refused one fetches nothing.
    const isOutside = (url: string) => !url.startsWith(`${base}/`) && !url.startsWith('blob:') && !url.startsWith('data:') && url !== 'about:srcdoc';
    page.on('requestfinished', (r) => {
      if (isOutside(r.url())) outside.push(r.url());
    });
    page.on('requestfailed', (r) => {
      if (isOutside(r.url()) && !/BLOCKED_BY_CSP|csp/i.test(r.failure()?.errorText ?? '')) outside.push(`${r.url()} (${r.failure()?.errorText ?? 'failed'})`);
    });
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
  });
  afterAll(async () => {
    await browser?.close();
    receiver?.close();
    await h?.close();
  });

  it('logs in and shows the inbox of the first mailbox', async () => {
    await logIn(page, base, acme.ownerEmail, acme.password);
    await page.waitForURL(`${base}/mail/${encodeURIComponent(SUPPORT)}/inbox`);
    await page.getByRole('heading', { name: 'Inbox' }).waitFor();
  });

  it('shows mail sent over SMTP in the open inbox without a reload', async () => {
    await page.locator('.live.on').waitFor();
    await page.evaluate('window.marker = 1');
    await deliver({ subject: 'Order 1234 has not arrived', text: 'Hello, where is it?', messageId: '<order-1234@sender.test>' });
    await row('Order 1234 has not arrived').waitFor();
    expect(await row('Order 1234 has not arrived').getAttribute('class')).toContain('unread');
    await page.getByRole('link', { name: `${SUPPORT} 1 unread` }).waitFor();
    // The same document: nothing reloaded it.
    expect(await page.evaluate('window.marker')).toBe(1);
  });

  it('opens a message and its thread, and reading marks it read', async () => {
    const reply = await deliver({
      subject: 'Re: Order 1234 has not arrived',
      text: 'Here is the receipt.',
      inReplyTo: '<order-1234@sender.test>',
      references: ['<order-1234@sender.test>'],
      attachments: [{ filename: 'receipt.pdf', content: PDF, contentType: 'application/pdf' }],
    });
    await row('Re: Order 1234').click();
    await page.getByRole('heading', { name: 'Re: Order 1234 has not arrived' }).waitFor();
    expect(page.url()).toContain(`/inbox/${reply}`);
    const frame = page.frameLocator('iframe.message-frame');
    await frame.getByText('Here is the receipt.').waitFor();
    await page.getByRole('heading', { name: 'Conversation (2 messages)' }).waitFor();
    expect((await apiMessage(reply)).read).toBe(true);
    await page.getByRole('region', { name: 'Conversation' }).getByRole('link').click();
    await page.getByRole('heading', { name: 'Order 1234 has not arrived', exact: true }).waitFor();
    await page.frameLocator('iframe.message-frame').getByText('Hello, where is it?').waitFor();
  });

  it('downloads an attachment with its bytes', async () => {
    await page.goBack();
    await page.getByRole('heading', { name: 'Re: Order 1234 has not arrived' }).waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download receipt.pdf' }).click()]);
    expect(download.suggestedFilename()).toBe('receipt.pdf');
    expect(readFileSync(await download.path())).toEqual(PDF);
  });

  it('adds and removes labels, moves, archives, and marks spam and not spam', async () => {
    const id = await deliver({ subject: 'Invoice 77', text: 'Please pay.' });
    await openInbox();
    await row('Invoice 77').click();
    await page.getByLabel('Add label').fill('billing');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await page.getByRole('button', { name: 'Remove label billing' }).waitFor();
    expect((await apiMessage(id)).labels).toEqual(['billing']);
    // Starring stays on the message; the list shows the star.
    await page.getByRole('button', { name: '☆ Star' }).click();
    await page.getByRole('button', { name: '★ Starred' }).waitFor();
    expect((await apiMessage(id)).flagged).toBe(true);
    await page.getByRole('button', { name: '← Back' }).click();
    await row('Invoice 77').getByRole('button', { name: 'Star Invoice 77', pressed: true }).waitFor();
    await row('Invoice 77').click();
    await page.getByRole('button', { name: 'Spam', exact: true }).click();
    await page.getByRole('heading', { name: 'Inbox' }).waitFor();
    await expect.poll(async () => (await apiMessage(id)).folder).toBe('spam');
    await page.getByRole('link', { name: 'Spam' }).click();
    await row('Invoice 77').click();
    await page.getByRole('button', { name: 'Not spam' }).click();
    await expect.poll(async () => (await apiMessage(id)).folder).toBe('inbox');
    await openInbox();
    await row('Invoice 77').click();
    await page.getByLabel('Move to folder').selectOption('trash');
    await expect.poll(async () => (await apiMessage(id)).folder).toBe('trash');
    await page.getByRole('link', { name: 'Trash' }).click();
    await row('Invoice 77').click();
    await page.getByRole('button', { name: 'Remove label billing' }).click();
    await expect.poll(async () => (await apiMessage(id)).labels).toEqual([]);
    await page.getByRole('button', { name: 'Archive' }).click();
    await expect.poll(async () => (await apiMessage(id)).folder).toBe('archive');
  });

  it('works from the keyboard: j/k, o, e, #, / and ?', async () => {
    await openInbox();
    await row('Order 1234 has not arrived').first().waitFor();
    await page.keyboard.press('?');
    await page.getByRole('dialog', { name: 'Keyboard shortcuts' }).waitFor();
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'hidden' });
    await page.keyboard.press('j');
    await page.keyboard.press('o');
    // Newest first: the reply is first, so j then o opens the original.
    await page.getByRole('heading', { name: 'Order 1234 has not arrived', exact: true }).waitFor();
    await page.keyboard.press('k');
    await page.getByRole('heading', { name: 'Re: Order 1234 has not arrived' }).waitFor();
    await page.keyboard.press('u');
    await page.keyboard.press('/');
    expect(await page.evaluate('document.activeElement?.id')).toBe('search');
    await page.keyboard.press('Escape');
    const id = await deliver({ subject: 'Archive me', text: 'x' });
    await row('Archive me').waitFor();
    await page.keyboard.press('e');
    await expect.poll(async () => (await apiMessage(id)).folder).toBe('archive');
    await row('Archive me').waitFor({ state: 'detached' });
    const trash = await deliver({ subject: 'Trash me', text: 'x' });
    await row('Trash me').waitFor();
    await page.keyboard.press('#');
    await expect.poll(async () => (await apiMessage(trash)).folder).toBe('trash');
  });

  it('searches with q, and shows a malformed query\'s error in place', async () => {
    await openInbox();
    await page.getByLabel('Search mail').fill('receipt has:attachment');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Search: receipt has:attachment' }).waitFor();
    await expect.poll(() => page.locator('.messages li').count(), { timeout: 15_000 }).toBe(1);
    expect(await row('Re: Order 1234').count()).toBe(1);
    await page.getByLabel('Search mail').fill('say "hello');
    await page.keyboard.press('Enter');
    const alert = page.locator('#search-error');
    await alert.waitFor();
    expect(await alert.textContent()).toContain('unterminated quote at position 4');
    expect(await alert.locator('mark').textContent()).toBe('"');
    expect(await page.getByLabel('Search mail').getAttribute('aria-invalid')).toBe('true');
  });

  it('renders hostile HTML with nothing executed and nothing fetched', async () => {
    const id = await deliver({ subject: 'Hostile', html: hostileHtml(receiverOrigin), text: 'plain part' });
    await page.goto(`${base}/mail/${encodeURIComponent(SUPPORT)}/inbox/${id}`);
    const frameElement = page.locator('iframe.message-frame');
    await frameElement.waitFor();
    expect(await frameElement.getAttribute('sandbox')).toBe('allow-popups allow-popups-to-escape-sandbox');
    const frame = page.frames().find((f) => f !== page.mainFrame()) as Frame;
    await page.frameLocator('iframe.message-frame').getByText('our offer').waitFor();
    // Time for anything that would run or load late (meta refresh, onload, autofocus).
    await page.waitForTimeout(1500);
    const inFrame = page.frameLocator('iframe.message-frame');
    expect(await inFrame.locator('html[data-pwned], script, form, iframe, object, embed, svg, meta[http-equiv="refresh"], base, link, input, img[srcset]').count()).toBe(0);
    type Attributes = { getAttribute(name: string): string | null };
    const hrefs = await inFrame
      .locator('a[href]')
      .evaluateAll((as: Attributes[]) => as.map((a) => [a.getAttribute('href'), a.getAttribute('target'), a.getAttribute('rel')]));
    expect(hrefs.length).toBeGreaterThan(0);
    for (const [href, target, rel] of hrefs) {
      expect(href).not.toMatch(/^\s*(javascript|data):/i);
      expect(target).toBe('_blank');
      expect(rel).toBe('noopener noreferrer');
    }
    expect(frame.url()).toBe('about:srcdoc');
    expect(await page.evaluate('window.pwned')).toBeUndefined();
    expect(dialogs).toEqual([]);
    expect(received).toEqual([]);
    expect(outside).toEqual([]);
    // Remote images only when asked, and then only images.
    await page.getByRole('button', { name: 'Show images' }).click();
    await expect.poll(() => received.includes('/tracker.gif')).toBe(true);
    expect(received.filter((u) => !/\.(gif|png)$/.test(u))).toEqual([]);
    expect(await page.evaluate('window.pwned')).toBeUndefined();
  });

  it('has no serious or critical axe-core violations, and fits a 375 px phone', async () => {
    await openInbox();
    await row('Order 1234 has not arrived').first().waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await row('Re: Order 1234').click();
    await page.getByRole('heading', { name: 'Re: Order 1234 has not arrived' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    const phone = await browser.page({ width: 375, height: 740 });
    await phone.goto(`${base}/login`);
    await phone.getByLabel('Email').waitFor();
    expect(await seriousViolations(phone)).toEqual([]);
    await logIn(phone, base, acme.ownerEmail, acme.password);
    await phone.locator('.messages li').first().waitFor();
    expect(await phone.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
    await phone.locator('.messages li a').first().click();
    await phone.locator('iframe.message-frame').waitFor();
    expect(await phone.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
    await phone.close();
  });

  it('switches workspaces: the other workspace\'s mailboxes, none of this one\'s', async () => {
    const other = await h.services.tenancy.admin.createWorkspace({ name: 'Globex' });
    await h.services.tenancy.admin.addMember({ workspace: other.workspace_id, email: acme.ownerEmail, role: 'member' });
    await page.reload();
    const switcher = page.getByLabel('Workspace');
    await switcher.waitFor();
    await switcher.selectOption({ label: 'Globex (member)' });
    await page.getByText('No mailboxes in this workspace yet.').waitFor();
    expect(await page.getByRole('link', { name: new RegExp(SUPPORT) }).count()).toBe(0);
    await switcher.selectOption({ label: 'Acme (owner)' });
    await page.getByRole('link', { name: new RegExp(SUPPORT) }).first().waitFor();
  });

  it('logs out, and the token no longer works', async () => {
    await openInbox();
    const token = await page.evaluate<string | null>("sessionStorage.getItem('mailroom.session')");
    expect(token).toMatch(/^mrs_/);
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByLabel('Email').waitFor();
    expect(page.url()).toBe(`${base}/login`);
    expect(await page.evaluate("sessionStorage.getItem('mailroom.session')")).toBeNull();
    const res = await fetch(`${base}/app/api/session`, { headers: { 'x-service-session': token ?? '' } });
    expect(res.status).toBe(401);
  });
});
