import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen } from '../helpers/cli-client.js';
import { TEST_DIALECT } from '../helpers/database.js';
import { bearer, createTenant, type Tenant } from '../helpers/harness.js';
import { HAS_CHROMIUM, logIn, startBrowser, type Browser } from '../helpers/browser.js';
import { startMailHarness, type MailHarness } from '../helpers/mail.js';

const BOX = 'team@mailroom.localhost';
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const result = await page.evaluate<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: unknown }> }> }>(
    "axe.run(document, { iframes: false, resultTypes: ['violations'] })",
  );
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${JSON.stringify(v.nodes.map((n) => n.target))}`);
}

describe.skipIf(!HAS_CHROMIUM)(`web app: bulk actions on conversations in Chromium (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let base: string;
  let acme: Tenant;
  let browser: Browser;
  let page: Page;
  const bulkRequests: string[] = [];
  const ids: Record<string, string> = {};

  const deliver = async (subject: string, extra: { messageId?: string; inReplyTo?: string } = {}): Promise<string> => {
    h.clock.advance(1000);
    return (await h.send({ from: 'alice@sender.test', to: BOX, subject, text: `About ${subject}`, ...extra })).response.match(/msg_[0-9a-z]{26}/)![0];
  };
  const view = async (id: string) =>
    (await h.app.inject({ method: 'GET', url: `/messages/${id}`, headers: bearer(acme.apiKey) })).json<{ folder: string; read: boolean }>();
  const conversations = () => page.getByRole('listbox', { name: 'Conversations' });
  const option = (text: string) => conversations().getByRole('option').filter({ hasText: text });
  const bar = () => page.getByRole('toolbar', { name: 'Bulk actions' });

  beforeAll(async () => {
    h = await startMailHarness();
    base = await listen(h.app);
    acme = await createTenant(h, 'Acme');
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(acme.apiKey), payload: { address: BOX } })).statusCode).toBe(201);
    ids.a1 = await deliver('Budget', { messageId: '<budget@sender.test>' });
    ids.a2 = await deliver('Re: Budget', { inReplyTo: '<budget@sender.test>' });
    ids.aArchived = await deliver('Re: Budget', { inReplyTo: '<budget@sender.test>' });
    ids.b1 = await deliver('Offsite', { messageId: '<offsite@sender.test>' });
    ids.b2 = await deliver('Re: Offsite', { inReplyTo: '<offsite@sender.test>' });
    ids.c = await deliver('Keep me here');
    await h.app.inject({ method: 'POST', url: `/messages/${ids.aArchived}/move`, headers: bearer(acme.apiKey), payload: { folder: 'archive' } });
    browser = await startBrowser();
    page = await browser.page();
    page.on('request', (r) => {
      if (r.method() === 'POST' && r.url().includes('/app/api/messages/bulk')) bulkRequests.push(r.url());
    });
    await logIn(page, base, acme.ownerEmail, acme.password, { conversations: true });
  });
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  it('checks conversations with x and Space, marks every message they have in the folder read in one request, and undoes it', async () => {
    await page.goto(`${base}/mail/${encodeURIComponent(BOX)}/inbox`);
    await option('Offsite').waitFor();
    expect(await conversations().getByRole('option').count()).toBe(3);
    await conversations().getByRole('option').first().focus();
    await option('Offsite').focus();
    await page.keyboard.press('x');
    expect(await option('Offsite').getAttribute('aria-checked')).toBe('true');
    await option('Budget').focus();
    await page.keyboard.press(' ');
    expect(await option('Budget').getAttribute('aria-checked')).toBe('true');
    expect(await option('Keep me here').getAttribute('aria-checked')).toBe('false');
    await bar().getByText('2 selected').waitFor();
    expect(await seriousViolations(page)).toEqual([]);

    bulkRequests.length = 0;
    await bar().getByRole('button', { name: 'Mark read' }).click();
    await page.getByRole('status').filter({ hasText: '4 messages marked read' }).waitFor();
    expect(bulkRequests).toHaveLength(1);
    for (const id of [ids.a1, ids.a2, ids.b1, ids.b2]) expect((await view(id!)).read).toBe(true);
    // Only this folder's share of the thread, and nothing of the unchecked one.
    expect((await view(ids.aArchived!)).read).toBe(false);
    expect((await view(ids.c!)).read).toBe(false);

    await page.getByRole('button', { name: 'Undo' }).click();
    await page.getByRole('button', { name: 'Undo' }).waitFor({ state: 'detached' });
    for (const id of [ids.a1, ids.a2, ids.b1, ids.b2]) expect((await view(id!)).read).toBe(false);
  });

  it('archives checked conversations whole, and Undo brings them back to the inbox', async () => {
    await option('Budget').focus();
    await page.keyboard.press('x');
    await bar().getByText('1 selected').waitFor();
    bulkRequests.length = 0;
    await bar().getByRole('button', { name: 'Archive' }).click();
    await option('Budget').waitFor({ state: 'detached' });
    expect(bulkRequests).toHaveLength(1);
    expect([(await view(ids.a1!)).folder, (await view(ids.a2!)).folder]).toEqual(['archive', 'archive']);
    await page.getByRole('status').filter({ hasText: '2 messages archived' }).getByRole('button', { name: 'Undo' }).click();
    await option('Budget').waitFor();
    expect([(await view(ids.a1!)).folder, (await view(ids.a2!)).folder, (await view(ids.aArchived!)).folder]).toEqual(['inbox', 'inbox', 'archive']);
  });

  it('checks the whole page from the box over the list', async () => {
    await page.getByRole('checkbox', { name: 'Select all on this page' }).check();
    await bar().getByText('3 selected').waitFor();
    expect(await conversations().locator('[aria-checked="true"]').count()).toBe(3);
    await bar().getByRole('button', { name: 'Clear selection' }).click();
    await bar().waitFor({ state: 'detached' });
  });
});
