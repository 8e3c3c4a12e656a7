import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen } from '../helpers/cli-client.js';
import { bearer, createTenant, login, session, type Tenant } from '../helpers/harness.js';
import { HAS_CHROMIUM, logIn, startBrowser, type Browser } from '../helpers/browser.js';
import { startMailHarness, type MailHarness } from '../helpers/mail.js';

/**
 * `npm run screenshots`: the README's pictures of the app, light and dark, written to
 * docs/screenshots/. Not a test: skipped unless MAILROOM_SCREENSHOTS=1, so `npm test` never rewrites the files.
 */
const OUT = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));
const SUPPORT = 'helpdesk@mailroom.localhost';
const DOMAIN = 'acme.example';

describe.skipIf(!HAS_CHROMIUM || process.env.MAILROOM_SCREENSHOTS !== '1')('screenshots of the web app', () => {
  let h: MailHarness;
  let base: string;
  let acme: Tenant;
  let browser: Browser;
  let page: Page;
  let threadId = '';

  const send = (mail: Parameters<MailHarness['send']>[0]) => h.send({ to: SUPPORT, ...mail });

  beforeAll(async () => {
    h = await startMailHarness({ MAILROOM_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' });
    h.clock.set(Date.now());
    base = await listen(h.app);
    acme = await createTenant(h, 'Acme');
    await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(acme.apiKey), payload: { address: SUPPORT } });
    const first = await send({ from: 'Alice Example <alice@sender.test>', subject: 'Order 1234 has not arrived', text: 'Hello, my order 1234 has not arrived yet. Could you look into it?', messageId: '<order-1234@sender.test>' });
    threadId = first.response.match(/msg_[0-9a-z]{26}/)![0];
    await send({ from: 'Alice Example <alice@sender.test>', subject: 'Re: Order 1234 has not arrived', text: 'Here is the receipt.', inReplyTo: '<order-1234@sender.test>', attachments: [{ filename: 'receipt.pdf', content: Buffer.from('%PDF-1.4\n'), contentType: 'application/pdf' }] });
    const bob = await send({ from: 'Bob Martin <bob@partner.test>', subject: 'Quarterly report', html: '<p>The <b>quarterly report</b> is ready for review.</p>' });
    await send({ from: 'Carol <carol@customer.test>', subject: 'Invoice INV-2026-17', text: 'Please find the invoice attached.' });
    const token = await login(h, acme.ownerEmail, acme.password);
    const post = (url: string, payload: object) => h.app.inject({ method: 'POST', url, headers: session(token), payload });
    expect((await post('/app/api/sending-domains', { domain: DOMAIN })).statusCode).toBe(201);
    expect((await post('/app/api/webhooks', { url: 'http://127.0.0.1:9/mailroom', event_types: ['message.received', 'message.bounced'] })).statusCode).toBe(201);
    // Organised as a user would: a coloured label on the order's conversation, the report starred.
    const put = await h.app.inject({ method: 'PUT', url: '/app/api/labels/orders', headers: session(token), payload: { colour: '#2f855a' } });
    expect(put.statusCode, put.body).toBe(200);
    expect((await post(`/app/api/messages/${threadId}/labels`, { add: ['orders'] })).statusCode).toBe(200);
    expect((await post(`/app/api/messages/${bob.response.match(/msg_[0-9a-z]{26}/)![0]}/flags`, { flagged: true })).statusCode).toBe(200);
    mkdirSync(OUT, { recursive: true });
    browser = await startBrowser();
    page = await browser.page({ width: 1280, height: 760 });
    await logIn(page, base, acme.ownerEmail, acme.password, { conversations: true });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  const views: Array<[name: string, path: () => string, ready: (page: Page) => Promise<unknown>]> = [
    ['inbox', () => `/mail/${encodeURIComponent(SUPPORT)}/inbox`, (p) => p.getByText('Quarterly report').first().waitFor()],
    ['thread', () => `/mail/${encodeURIComponent(SUPPORT)}/inbox/${threadId}`, (p) => p.getByRole('heading', { name: 'Order 1234 has not arrived' }).first().waitFor()],
    ['compose', () => `/mail/${encodeURIComponent(SUPPORT)}/compose`, (p) => p.getByLabel('Subject').waitFor()],
    // The domain as a check left it: each record's status and why.
    ['domains', () => '/settings/domains', async (p) => {
      await p.getByRole('button', { name: `Verify ${DOMAIN}` }).click();
      await p.getByText(`${DOMAIN} is pending`).waitFor();
      await p.evaluate('window.scrollTo(0, 0)');
    }],
    ['webhooks', () => '/settings/webhooks', (p) => p.getByText('http://127.0.0.1:9/mailroom').first().waitFor()],
    ['labels', () => '/settings/labels', (p) => p.getByText('orders').first().waitFor()],
  ];

  for (const scheme of ['light', 'dark'] as const) {
    it.each(views)(`%s (${scheme})`, async (name, path, ready) => {
      await page.emulateMedia({ colorScheme: scheme });
      await page.goto(`${base}${path()}`);
      await ready(page);
      await page.waitForTimeout(300);
      await page.screenshot({ path: `${OUT}${name}-${scheme}.png` });
    });
  }
});
