import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen } from '../helpers/cli-client.js';
import { TEST_DIALECT } from '../helpers/database.js';
import { bearer, createTenant, type Tenant } from '../helpers/harness.js';
import { HAS_CHROMIUM, logIn, startBrowser, type Browser } from '../helpers/browser.js';
import { startMailHarness, type MailHarness } from '../helpers/mail.js';

const SUPPORT = 'support@mailroom.localhost';

describe.skipIf(!HAS_CHROMIUM)(`web app: webmail in Chromium (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let base: string;
  let acme: Tenant;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    h = await startMailHarness();
    base = await listen(h.app);
    acme = await createTenant(h, 'Acme');
    const res = await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(acme.apiKey), payload: { address: SUPPORT } });
    expect(res.statusCode).toBe(201);
    browser = await startBrowser();
    page = await browser.page();
  });
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  it('logs in and shows the inbox of the first mailbox', async () => {
    await logIn(page, base, acme.ownerEmail, acme.password);
    await page.waitForURL(`${base}/mail/${encodeURIComponent(SUPPORT)}/inbox`);
    await expect(page.getByRole('heading', { name: 'Inbox' }).isVisible()).resolves.toBe(true);
  });

  it('shows mail sent over SMTP in the open inbox without a reload', async () => {
    await page.locator('.live.on').waitFor();
    await h.send({ from: 'Alice Example <alice@sender.test>', to: SUPPORT, subject: 'Order 1234 has not arrived', text: 'Hello, where is it?' });
    const row = page.locator('.messages li', { hasText: 'Order 1234 has not arrived' });
    await row.waitFor({ timeout: 10_000 });
    await expect(row.getAttribute('class')).resolves.toContain('unread');
    await expect(page.getByRole('link', { name: /support@mailroom\.localhost.*1/ }).count()).resolves.toBe(1);
  });

  it('logs out, and the token no longer works', async () => {
    const token = await page.evaluate(() => sessionStorage.getItem('mailroom.session'));
    expect(token).toMatch(/^mrs_/);
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByLabel('Email').waitFor();
    expect(page.url()).toBe(`${base}/login`);
    await expect(page.evaluate(() => sessionStorage.getItem('mailroom.session'))).resolves.toBeNull();
    const res = await fetch(`${base}/app/api/session`, { headers: { 'x-service-session': token ?? '' } });
    expect(res.status).toBe(401);
  });
});
