import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen } from '../helpers/cli-client.js';
import { TEST_DIALECT } from '../helpers/database.js';
import { bearer, createTenant, type Tenant } from '../helpers/harness.js';
import { HAS_CHROMIUM, logIn, startBrowser, type Browser } from '../helpers/browser.js';
import { startMailHarness, type MailHarness } from '../helpers/mail.js';

const BOX = 'support-with-a-long-name@mailroom.localhost';
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const PHONE = { width: 375, height: 740 };
/** A word no line break helps: what a pasted link or a tracking id puts in a subject. */
const UNBROKEN = `https://example.test/${'x'.repeat(90)}`;

async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const result = await page.evaluate<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: unknown }> }> }>(
    "axe.run(document, { iframes: false, resultTypes: ['violations'] })",
  );
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${JSON.stringify(v.nodes.map((n) => n.target))}`);
}

/** Nothing wider than the phone: the page does not scroll sideways. */
const pageWidth = (page: Page) => page.evaluate<number>('document.documentElement.scrollWidth');

/** What sticks out past the right edge, to say where a page is too wide. */
const widest = (page: Page) =>
  page.evaluate<string>(`[...document.querySelectorAll('main *')].filter((e) => e.getBoundingClientRect().right > innerWidth + 0.5)
    .map((e) => e.tagName.toLowerCase() + (e.className ? '.' + String(e.className).split(' ').join('.') : '')).slice(-3).join(', ')`);

/** Every button of the group is at least 24 px both ways (WCAG 2.2 target size, minimum). */
async function smallTargets(group: Locator): Promise<string[]> {
  const small: string[] = [];
  for (const button of await group.getByRole('button').all()) {
    const box = await button.boundingBox();
    if (box && (box.width < 24 || box.height < 24)) small.push(`${await button.textContent()}: ${box.width}×${box.height}`);
  }
  return small;
}

describe.skipIf(!HAS_CHROMIUM)(`web app at phone width, 375 px (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let base: string;
  let acme: Tenant;
  let browser: Browser;
  let page: Page;
  const ids: Record<string, string> = {};

  const deliver = async (mail: Parameters<MailHarness['send']>[0]): Promise<string> => {
    h.clock.advance(1000);
    return (await h.send({ from: 'Alexandria Longname-Example <alexandria@sender.test>', to: BOX, ...mail })).response.match(/msg_[0-9a-z]{26}/)![0];
  };
  const inbox = () => page.goto(`${base}/mail/${encodeURIComponent(BOX)}/inbox`);
  const fits = async (what: string) => expect(await pageWidth(page), what).toBeLessThanOrEqual(PHONE.width);

  beforeAll(async () => {
    h = await startMailHarness();
    base = await listen(h.app);
    acme = await createTenant(h, 'Acme');
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(acme.apiKey), payload: { address: BOX } })).statusCode).toBe(201);
    ids.first = await deliver({ subject: `Order 1234 has not arrived ${UNBROKEN}`, text: `Where is it? ${UNBROKEN}`, messageId: '<order@sender.test>' });
    ids.reply = await deliver({ subject: 'Re: Order 1234 has not arrived', text: 'Any news?', inReplyTo: '<order@sender.test>' });
    browser = await startBrowser();
    page = await browser.page(PHONE);
  });
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  it('lists conversations with the bulk bar, the folders reachable', async () => {
    await logIn(page, base, acme.ownerEmail, acme.password, { conversations: true });
    await inbox();
    const list = page.getByRole('listbox', { name: 'Conversations' });
    await list.getByRole('option').first().focus();
    await page.keyboard.press('x');
    const bar = page.getByRole('toolbar', { name: 'Bulk actions' });
    await bar.waitFor();
    await fits('conversation list with the bulk bar');
    expect(await smallTargets(bar)).toEqual([]);
    expect(await page.getByRole('navigation', { name: 'Mailboxes and folders' }).getByRole('link', { name: /Archive/ }).isVisible()).toBe(true);
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('shows the thread page', async () => {
    await page.getByRole('listbox', { name: 'Conversations' }).getByRole('option').first().click();
    await page.getByRole('list', { name: 'Messages of the conversation' }).waitFor();
    await page.locator('iframe.message-frame').first().waitFor();
    await fits('thread page');
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('lists one row per message with the bulk bar', async () => {
    await inbox();
    await page.getByRole('checkbox', { name: 'Conversation view' }).uncheck();
    await page.getByRole('checkbox', { name: /^Select Re: Order 1234/ }).check();
    const bar = page.getByRole('toolbar', { name: 'Bulk actions' });
    await bar.waitFor();
    await fits('message list with the bulk bar');
    expect(await smallTargets(bar)).toEqual([]);
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('shows a message, its authentication details and its original', async () => {
    await page.goto(`${base}/mail/${encodeURIComponent(BOX)}/inbox/${ids.first}`);
    await page.getByRole('button', { name: /^Authentication:/ }).click();
    await page.getByRole('definition').first().waitFor();
    await fits('message with the authentication details');
    await page.getByRole('button', { name: 'Show original' }).click();
    await page.getByLabel('Raw source').waitFor();
    await fits('message with its original');
    expect(await seriousViolations(page)).toEqual([]);
    // While reading, the folders are one Back away.
    await page.getByRole('button', { name: /Back/ }).first().click();
    await page.getByRole('navigation', { name: 'Mailboxes and folders' }).waitFor();
  });

  it('writes a message in the rich editor', async () => {
    await page.goto(`${base}/mail/${encodeURIComponent(BOX)}/compose`);
    await page.getByRole('toolbar', { name: 'Formatting' }).waitFor();
    await page.getByRole('textbox', { name: 'Message', exact: true }).click();
    await page.keyboard.type(`A long line ${UNBROKEN}`);
    await fits('compose');
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('shows every settings page', async () => {
    await page.goto(`${base}/settings/mailboxes`);
    const nav = page.getByRole('navigation', { name: 'Settings' });
    await nav.waitFor();
    const sections = await nav.getByRole('link').all();
    const hrefs = await Promise.all(sections.map((l) => l.getAttribute('href')));
    expect(hrefs.length).toBeGreaterThan(10);
    const wide: string[] = [];
    for (const href of hrefs) {
      await page.goto(`${base}${href}`);
      await page.getByRole('heading', { level: 1 }).waitFor();
      await page.waitForLoadState('networkidle');
      const width = await pageWidth(page);
      if (width > PHONE.width) wide.push(`${href}: ${width} (${await widest(page)})`);
    }
    expect(wide).toEqual([]);
  });
});
