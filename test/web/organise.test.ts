import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen } from '../helpers/cli-client.js';
import { TEST_DIALECT } from '../helpers/database.js';
import { bearer, createTenant, type Tenant } from '../helpers/harness.js';
import { HAS_CHROMIUM, logIn, startBrowser, type Browser } from '../helpers/browser.js';
import { startMailHarness, type MailHarness } from '../helpers/mail.js';

const BOX = 'north@mailroom.localhost';
const BOX2 = 'south@mailroom.localhost';
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

describe.skipIf(!HAS_CHROMIUM)(`web app: labels, stars and every inbox in Chromium (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let base: string;
  let acme: Tenant;
  let browser: Browser;
  let page: Page;

  const api = (method: 'GET' | 'POST', url: string, payload?: object) => h.app.inject({ method, url, headers: bearer(acme.apiKey), ...(payload ? { payload } : {}) });
  const deliver = async (to: string, subject: string): Promise<string> => {
    h.clock.advance(1000);
    return (await h.send({ from: 'alice@sender.test', to, subject, text: `About ${subject}` })).response.match(/msg_[0-9a-z]{26}/)![0];
  };
  const sidebar = () => page.getByRole('navigation', { name: 'Mailboxes and folders' });
  const labelLink = (name: string | RegExp) => sidebar().getByRole('list', { name: 'Labels' }).getByRole('link', { name });
  const messages = () => page.getByRole('list', { name: 'Messages' });
  const row = (subject: string) => messages().getByRole('listitem').filter({ hasText: subject });

  beforeAll(async () => {
    h = await startMailHarness();
    base = await listen(h.app);
    acme = await createTenant(h, 'Acme');
    for (const address of [BOX, BOX2]) expect((await api('POST', '/mailboxes', { address })).statusCode).toBe(201);
    browser = await startBrowser();
    page = await browser.page();
    await logIn(page, base, acme.ownerEmail, acme.password);
  });
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  it('lists labels in the sidebar with unread counts that follow a read, and opens a label\'s messages', { timeout: 120_000 }, async () => {
    const a = await deliver(BOX, 'Offer for Globex');
    const b = await deliver(BOX2, 'Globex complaint');
    for (const id of [a, b]) expect((await api('POST', `/messages/${id}/labels`, { add: ['globex'] })).statusCode).toBe(200);
    await page.goto(`${base}/mail/${encodeURIComponent(BOX)}/inbox`);
    await labelLink('globex 2 unread').click();
    await page.getByRole('heading', { name: 'Label: globex' }).waitFor();
    await row('Offer for Globex').waitFor();
    await row('Globex complaint').waitFor();
    expect(await axe(page)).toEqual([]);

    await page.getByRole('checkbox', { name: 'Select Offer for Globex' }).click();
    await page.getByRole('toolbar', { name: 'Bulk actions' }).getByRole('button', { name: 'Mark read' }).click();
    await labelLink('globex 1 unread').waitFor();
    expect(((await api('GET', `/messages/${a}`)).json<{ read: boolean }>()).read).toBe(true);
  });

  it('changes a label\'s colour in settings, and the sidebar and the message rows show it', { timeout: 120_000 }, async () => {
    await page.goto(`${base}/settings/labels`);
    await page.getByRole('heading', { name: 'Labels', level: 1 }).waitFor();
    const table = page.getByRole('table', { name: 'Labels' });
    await table.getByRole('row', { name: /globex/ }).waitFor();
    expect(await axe(page)).toEqual([]);
    await page.getByLabel('Colour of globex').fill('#cc0000');
    await page.getByRole('button', { name: 'Save colour of globex' }).click();
    await expect.poll(async () => ((await api('GET', '/labels')).json<{ labels: Array<{ name: string; colour: string | null }> }>()).labels.find((l) => l.name === 'globex')?.colour).toBe('#cc0000');

    await page.goto(`${base}/mail/${encodeURIComponent(BOX)}/inbox`);
    // The colour is the dot's, the first child of the link and of the chip (aria-hidden, so found by position).
    const dot = (link: ReturnType<typeof labelLink>) => link.evaluate(firstChildColour);
    await expect.poll(() => dot(labelLink(/^globex/))).toBe('rgb(204, 0, 0)');
    const chip = row('Offer for Globex').getByText('globex', { exact: true });
    await expect.poll(() => chip.evaluate(firstChildColour)).toBe('rgb(204, 0, 0)');
  });

  it('stars a message with the row\'s toggle and lists it under Starred', { timeout: 120_000 }, async () => {
    const id = await deliver(BOX2, 'Contract to sign');
    await page.goto(`${base}/mail/${encodeURIComponent(BOX2)}/inbox`);
    const star = row('Contract to sign').getByRole('button', { name: 'Star Contract to sign' });
    expect(await star.getAttribute('aria-pressed')).toBe('false');
    await star.click();
    await expect.poll(() => star.getAttribute('aria-pressed')).toBe('true');
    expect(((await api('GET', `/messages/${id}`)).json<{ flagged: boolean }>()).flagged).toBe(true);
    expect(await axe(page)).toEqual([]);

    await sidebar().getByRole('link', { name: 'Starred' }).click();
    await page.getByRole('heading', { name: 'Starred' }).waitFor();
    await row('Contract to sign').waitFor();
    expect(await messages().getByRole('listitem').count()).toBe(1);
    expect(await axe(page)).toEqual([]);
    // Unstarred there, it leaves the list.
    await row('Contract to sign').getByRole('button', { name: 'Star Contract to sign' }).click();
    await row('Contract to sign').waitFor({ state: 'detached' });
  });

  it('shows every mailbox with its folders, and All inboxes lists the inboxes of both, each row naming its mailbox', { timeout: 120_000 }, async () => {
    await deliver(BOX, 'Sales weekly');
    await deliver(BOX2, 'Support weekly');
    await page.goto(`${base}/mail/${encodeURIComponent(BOX)}/inbox`);
    for (const address of [BOX, BOX2]) await sidebar().getByRole('list', { name: `Folders of ${address}` }).getByRole('link', { name: 'Archive' }).waitFor();
    await sidebar().getByRole('link', { name: 'All inboxes' }).click();
    await page.getByRole('heading', { name: 'All inboxes' }).waitFor();
    await row('Sales weekly').filter({ hasText: BOX }).waitFor();
    await row('Support weekly').filter({ hasText: BOX2 }).waitFor();
    expect(await axe(page)).toEqual([]);
    await row('Support weekly').getByRole('link').click();
    await page.getByRole('heading', { name: 'Support weekly' }).waitFor();
    expect(new URL(page.url()).pathname).toMatch(/^\/mail\/all\/msg_/);
  });
});

/** In the page: the background colour of an element's first child (the tests' tsconfig has no DOM types, hence the casts). */
function firstChildColour(el: unknown): string {
  const view = globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } };
  return view.getComputedStyle((el as { firstElementChild: unknown }).firstElementChild).backgroundColor;
}

/** axe-core's violations on the page as it is (ids), every impact. */
async function axe(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const result = await page.evaluate<{ violations: Array<{ id: string }> }>("axe.run(document, { iframes: false, resultTypes: ['violations'] })");
  return result.violations.map((v) => v.id);
}
