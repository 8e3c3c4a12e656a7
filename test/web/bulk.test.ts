import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen } from '../helpers/cli-client.js';
import { TEST_DIALECT } from '../helpers/database.js';
import { bearer, createTenant, type Tenant } from '../helpers/harness.js';
import { HAS_CHROMIUM, logIn, startBrowser, type Browser } from '../helpers/browser.js';
import { startMailHarness, type MailHarness } from '../helpers/mail.js';

const BOX = 'team@mailroom.localhost';
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

describe.skipIf(!HAS_CHROMIUM)(`web app: bulk actions and undo in Chromium (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let base: string;
  let acme: Tenant;
  let browser: Browser;
  let page: Page;

  const deliver = async (subject: string): Promise<string> =>
    (await h.send({ from: 'alice@sender.test', to: BOX, subject, text: `About ${subject}` })).response.match(/msg_[0-9a-z]{26}/)![0];
  const folderOf = async (id: string): Promise<string> =>
    (await h.app.inject({ method: 'GET', url: `/messages/${id}`, headers: bearer(acme.apiKey) })).json<{ folder: string }>().folder;
  const inboxTotal = async (): Promise<number> =>
    (await h.app.inject({ method: 'GET', url: `/inbox?mailbox=${BOX}&limit=1`, headers: bearer(acme.apiKey) })).json<{ total: number }>().total;
  const row = (subject: string) => page.getByRole('list', { name: 'Messages' }).getByRole('listitem').filter({ hasText: subject });
  const openInbox = () => page.goto(`${base}/mail/${encodeURIComponent(BOX)}/inbox`);

  beforeAll(async () => {
    h = await startMailHarness();
    base = await listen(h.app);
    acme = await createTenant(h, 'Acme');
    const res = await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(acme.apiKey), payload: { address: BOX } });
    expect(res.statusCode).toBe(201);
    browser = await startBrowser();
    page = await browser.page();
    await logIn(page, base, acme.ownerEmail, acme.password);
  });
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  it('checks two rows with a shift-click, archives them, and Undo brings them back', { timeout: 120_000 }, async () => {
    const older = await deliver('Quarterly report');
    const newer = await deliver('Team lunch');
    await deliver('Keep me here');
    await openInbox();
    await page.getByRole('checkbox', { name: 'Select Team lunch' }).click();
    await page.getByRole('checkbox', { name: 'Select Quarterly report' }).click({ modifiers: ['Shift'] });
    const bar = page.getByRole('toolbar', { name: 'Bulk actions' });
    await bar.getByText('2 selected').waitFor();
    await bar.getByRole('button', { name: 'Archive' }).click();
    await row('Team lunch').waitFor({ state: 'detached' });
    await row('Quarterly report').waitFor({ state: 'detached' });
    expect(await row('Keep me here').count()).toBe(1);
    expect([await folderOf(older), await folderOf(newer)]).toEqual(['archive', 'archive']);
    const toast = page.getByRole('status').filter({ hasText: '2 messages archived' });
    await toast.getByRole('button', { name: 'Undo' }).click();
    await row('Team lunch').waitFor();
    await row('Quarterly report').waitFor();
    expect([await folderOf(older), await folderOf(newer)]).toEqual(['inbox', 'inbox']);
  });

  it('keeps the Undo of the last action across a reload', async () => {
    const id = await deliver('Reload survivor');
    await openInbox();
    await page.getByRole('checkbox', { name: 'Select Reload survivor' }).click();
    await page.getByRole('toolbar', { name: 'Bulk actions' }).getByRole('button', { name: 'Delete' }).click();
    await row('Reload survivor').waitFor({ state: 'detached' });
    expect(await folderOf(id)).toBe('trash');
    await page.reload();
    await page.getByRole('status').filter({ hasText: '1 message deleted' }).getByRole('button', { name: 'Undo' }).click();
    await row('Reload survivor').waitFor();
    expect(await folderOf(id)).toBe('inbox');
  });

  it('archives every message the list matches, over two pages, with "select all matching", and undoes it', { timeout: 180_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bulk-web-'));
    const mbox = Array.from({ length: 55 }, (_, i) =>
      `From a@sender.test Mon Nov 30 10:00:00 2026\nFrom: a@sender.test\nTo: ${BOX}\nSubject: Newsletter ${i}\nMessage-ID: <news-${i}@sender.test>\nDate: Mon, 30 Nov 2026 10:00:00 +0000\n\nissue ${i}\n`,
    ).join('\n');
    writeFileSync(join(dir, 'inbox.mbox'), mbox);
    await h.services.mailTransfer.importMailbox({ address: BOX, workspaceId: acme.workspaceId }, join(dir, 'inbox.mbox'), { folder: 'inbox' });
    rmSync(dir, { recursive: true, force: true });
    const total = await inboxTotal();
    expect(total).toBeGreaterThan(50);
    await openInbox();
    await page.getByRole('checkbox', { name: 'Select all on this page' }).click();
    const bar = page.getByRole('toolbar', { name: 'Bulk actions' });
    await bar.getByRole('button', { name: `Select all ${total} matching` }).click();
    await bar.getByText(`All ${total} matching selected`).waitFor();
    expect(await axeSerious(page)).toEqual([]);
    await bar.getByRole('button', { name: 'Archive' }).click();
    await page.getByText('No messages here.').waitFor();
    expect(await inboxTotal()).toBe(0);
    await page.getByRole('status').filter({ hasText: `${total} messages archived` }).getByRole('button', { name: 'Undo' }).click();
    await row('Newsletter').first().waitFor();
    expect(await inboxTotal()).toBe(total);
  });
});

/** axe-core's serious and critical violations on the page as it is. */
async function axeSerious(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const result = await page.evaluate<{ violations: Array<{ id: string; impact: string }> }>("axe.run(document, { iframes: false, resultTypes: ['violations'] })");
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id);
}
