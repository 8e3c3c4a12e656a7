import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen } from '../helpers/cli-client.js';
import { TEST_DIALECT } from '../helpers/database.js';
import { bearer, createTenant, memberSession, type Tenant } from '../helpers/harness.js';
import { HAS_CHROMIUM, logIn, startBrowser, type Browser } from '../helpers/browser.js';
import { startMailHarness, type MailHarness } from '../helpers/mail.js';

const SUPPORT = 'truth@mailroom.localhost';
const COUNTED = 'counted@mailroom.localhost';
/** expect.poll's wait: its default second is short for a page reload on a busy machine. */
const WAIT = { timeout: 15_000 };
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
/** A valid 1×1 PNG. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');

async function seriousViolations(page: Page): Promise<string[]> {
  // Evaluated over CDP, which the page's CSP does not govern.
  await page.evaluate(AXE);
  const result = await page.evaluate<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: unknown }> }> }>(
    "axe.run(document, { iframes: false, resultTypes: ['violations'] })",
  );
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${JSON.stringify(v.nodes.map((n) => n.target))}`);
}

describe.skipIf(!HAS_CHROMIUM)(`web app: the message's truth (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let base: string;
  let acme: Tenant;
  let browser: Browser;
  let page: Page;
  const failures: string[] = [];

  const deliver = async (mail: Parameters<MailHarness['send']>[0], to = SUPPORT): Promise<string> =>
    (await h.send({ from: 'Alice Example <alice@sender.test>', to, ...mail })).response.match(/msg_[0-9a-z]{26}/)![0];
  const open = (id: string, mailbox = SUPPORT) => page.goto(`${base}/mail/${encodeURIComponent(mailbox)}/inbox/${id}`);
  const frameHeight = async () => (await page.locator('iframe.message-frame').boundingBox())?.height ?? 0;

  beforeAll(async () => {
    h = await startMailHarness();
    base = await listen(h.app);
    acme = await createTenant(h, 'Acme');
    for (const address of [SUPPORT, COUNTED]) {
      const res = await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(acme.apiKey), payload: { address } });
      expect(res.statusCode).toBe(201);
    }
    // sender.test authorises this host and publishes DMARC; forged.test authorises no host.
    h.dns.set('sender.test', { TXT: ['v=spf1 ip4:127.0.0.1 -all'] });
    h.dns.set('_dmarc.sender.test', { TXT: ['v=DMARC1; p=none'] });
    h.dns.set('forged.test', { TXT: ['v=spf1 -all'] });
    h.dns.set('_dmarc.forged.test', { TXT: ['v=DMARC1; p=none'] });
    browser = await startBrowser();
    page = await browser.page();
    page.on('response', (r) => {
      if (r.status() >= 400) failures.push(`${r.status()} ${r.url()}`);
    });
    page.on('console', (m) => {
      if (m.type() === 'error') failures.push(`console: ${m.text()}`);
    });
    await logIn(page, base, acme.ownerEmail, acme.password);
  });
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  it('shows the authentication results as a badge, with each check behind a disclosure', async () => {
    const good = await deliver({ subject: 'Authenticated', text: 'From who it says.' });
    const forged = await deliver({ from: 'Mallory <ceo@forged.test>', subject: 'Forged', text: 'Trust me.' });
    await open(good);
    const badge = page.getByRole('button', { name: 'Authentication: passed' });
    await badge.waitFor();
    expect(await badge.getAttribute('aria-expanded')).toBe('false');
    const details = page.locator('dl[aria-label="Authentication results"]');
    expect(await details.isVisible()).toBe(false);
    await badge.click();
    expect(await badge.getAttribute('aria-expanded')).toBe('true');
    expect((await details.innerText()).replace(/\s+/g, ' ')).toBe('SPF pass DKIM none DMARC pass');
    expect(await seriousViolations(page)).toEqual([]);
    await open(forged);
    await page.getByRole('button', { name: 'Authentication: failed' }).click();
    expect((await details.innerText()).replace(/\s+/g, ' ')).toBe('SPF fail DKIM none DMARC fail');
  });

  it('shows the original: its header fields, its source, and an .eml download of the raw bytes', async () => {
    const id = await deliver({ subject: 'Order 77: where?', text: 'Source, please.', headers: { 'X-Order': '77' } });
    await open(id);
    await page.getByRole('button', { name: 'Show original' }).click();
    await page.getByRole('heading', { name: 'Original message' }).waitFor();
    const headers = page.getByRole('table', { name: 'Header fields' });
    expect(await headers.getByRole('row', { name: /^X-Order 77$/ }).count()).toBe(1);
    expect(await headers.getByRole('rowheader', { name: 'Received-SPF' }).count()).toBe(1);
    expect(await page.getByLabel('Raw source').innerText()).toContain('Source, please.');
    expect(await seriousViolations(page)).toEqual([]);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download original (.eml)' }).click()]);
    expect(download.suggestedFilename()).toBe('Order 77 where.eml');
    const raw = await h.app.inject({ method: 'GET', url: `/messages/${id}/raw`, headers: bearer(acme.apiKey) });
    expect(raw.statusCode).toBe(200);
    expect(readFileSync(await download.path()).equals(raw.rawPayload)).toBe(true);
    await page.getByRole('button', { name: 'Hide original' }).click();
    await page.frameLocator('iframe.message-frame').getByText('Source, please.').waitFor();
  });

  it('previews an image attachment in a frame that runs no script and fetches nothing', async () => {
    const id = await deliver({
      subject: 'Photos',
      text: 'See attached.',
      attachments: [
        { filename: 'pixel.png', content: PNG, contentType: 'image/png' },
        { filename: 'terms.pdf', content: Buffer.from('%PDF-1.4 terms\n'), contentType: 'application/pdf' },
      ],
    });
    await open(id);
    await page.getByRole('button', { name: 'Download terms.pdf' }).waitFor();
    await page.getByRole('button', { name: 'Preview pixel.png' }).click();
    const frame = page.getByTitle('Preview of pixel.png');
    await frame.waitFor();
    expect(await frame.getAttribute('sandbox')).toBe('');
    const srcdoc = (await frame.getAttribute('srcdoc')) ?? '';
    expect(srcdoc).toMatch(/<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:;[^"]*script-src 'none'/);
    const image = page.frameLocator('iframe.preview-frame').locator('img');
    await expect.poll(() => image.evaluate((img: { naturalWidth: number }) => img.naturalWidth), WAIT).toBe(1);
    expect(await image.getAttribute('src')).toMatch(/^data:image\/png;base64,/);
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('sizes the body frame to its content', async () => {
    const short = await deliver({ subject: 'Short', text: 'Thanks!' });
    const long = await deliver({ subject: 'Long', text: Array.from({ length: 150 }, (_, i) => `Line ${i + 1} of a long letter.`).join('\n') });
    await open(short);
    await page.frameLocator('iframe.message-frame').getByText('Thanks!').waitFor();
    await expect.poll(frameHeight, WAIT).toBeLessThan(120);
    const shortHeight = await frameHeight();
    await open(long);
    await page.frameLocator('iframe.message-frame').getByText('Line 150 of a long letter.').waitFor();
    await expect.poll(frameHeight, WAIT).toBeGreaterThan(shortHeight * 10);
    // The frame shows all of it: its document has nothing left to scroll.
    const inner = await page.frameLocator('iframe.message-frame').locator('html').evaluate((html: { scrollHeight: number; clientHeight: number }) => html.scrollHeight - html.clientHeight);
    expect(inner).toBeLessThanOrEqual(0);
  });

  it('shows the open folder\'s unread count in the tab title, and updates it after reading', async () => {
    const first = await deliver({ subject: 'Count me', text: 'one' }, COUNTED);
    await deliver({ subject: 'Count me too', text: 'two' }, COUNTED);
    await page.goto(`${base}/mail/${encodeURIComponent(COUNTED)}/inbox`);
    await expect.poll(() => page.title(), WAIT).toBe('(2) Inbox — Mailroom');
    await open(first, COUNTED);
    await expect.poll(() => page.title(), WAIT).toBe('(1) Inbox — Mailroom');
    await page.goto(`${base}/mail/${encodeURIComponent(COUNTED)}/archive`);
    await expect.poll(() => page.title(), WAIT).toBe('Archive — Mailroom');
  });

  it('serves the favicon the page links, and the pages above requested nothing that failed', async () => {
    const href = await page.locator('link[rel="icon"]').getAttribute('href');
    expect(href).toMatch(/^\/assets\/favicon-[\w-]+\.svg$/);
    const res = await h.app.inject({ method: 'GET', url: href ?? '' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^image\/svg\+xml/);
    expect(failures).toEqual([]);
  });

  it('tells a member who opens an admin page that they cannot manage it, with nothing to create', async () => {
    const member = await memberSession(h, acme.workspaceId, 'member');
    const tab = await browser.page();
    await logIn(tab, base, member.email, 'correct horse battery');
    for (const [section, title] of [['api-keys', 'API keys'], ['domains', 'Sending domains'], ['service-tokens', 'Service tokens'], ['audit-log', 'Audit log']] as const) {
      await tab.goto(`${base}/settings/${section}`);
      await tab.getByRole('heading', { level: 1, name: title }).waitFor();
      await tab.getByRole('alert').filter({ hasText: `You can't manage ${title.toLowerCase()}` }).waitFor();
      expect(await tab.getByRole('main').getByRole('button').count()).toBe(0);
    }
    expect(await tab.getByRole('button', { name: 'Create API key' }).count()).toBe(0);
    expect(await seriousViolations(tab)).toEqual([]);
    await tab.close();
  });
});
