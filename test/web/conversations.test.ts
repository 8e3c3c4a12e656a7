import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen } from '../helpers/cli-client.js';
import { TEST_DIALECT } from '../helpers/database.js';
import { bearer, createTenant, type Tenant } from '../helpers/harness.js';
import { HAS_CHROMIUM, logIn, startBrowser, type Browser } from '../helpers/browser.js';
import { startMailHarness, type MailHarness } from '../helpers/mail.js';

const DESK = 'desk@mailroom.localhost';
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const result = await page.evaluate<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: unknown }> }> }>(
    "axe.run(document, { iframes: false, resultTypes: ['violations'] })",
  );
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${JSON.stringify(v.nodes.map((n) => n.target))}`);
}

describe.skipIf(!HAS_CHROMIUM)(`web app: conversations in Chromium (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let base: string;
  let acme: Tenant;
  let browser: Browser;
  let page: Page;
  const ids: Record<string, string> = {};

  const deliver = async (mail: Parameters<MailHarness['send']>[0]): Promise<string> => {
    h.clock.advance(1000);
    return (await h.send({ from: 'Alice Example <alice@sender.test>', to: DESK, ...mail })).response.match(/msg_[0-9a-z]{26}/)![0];
  };
  const post = async (url: string, payload: object) => expect((await h.app.inject({ method: 'POST', url, headers: bearer(acme.apiKey), payload })).statusCode).toBe(200);
  const folder = (name: string) => page.goto(`${base}/mail/${encodeURIComponent(DESK)}/${name}`);
  const conversations = () => page.getByRole('listbox', { name: 'Conversations' });
  const option = (text: string | RegExp) => conversations().getByRole('option').filter({ hasText: text });
  const stack = () => page.getByRole('list', { name: 'Messages of the conversation' });

  beforeAll(async () => {
    h = await startMailHarness();
    base = await listen(h.app);
    acme = await createTenant(h, 'Acme');
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(acme.apiKey), payload: { address: DESK } })).statusCode).toBe(201);
    ids.order = await deliver({ subject: 'Order 1234', text: 'Where is my order?', messageId: '<order-1234@sender.test>' });
    ids.reply = await deliver({ from: 'Carol <carol@sender.test>', subject: 'Re: Order 1234', text: 'Here is the receipt.', inReplyTo: '<order-1234@sender.test>' });
    await post(`/messages/${ids.order}/read`, { read: true });
    browser = await startBrowser();
    page = await browser.page();
    await logIn(page, base, acme.ownerEmail, acme.password, { conversations: true });
  });
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  it('shows a conversation of two messages as one row with its count', async () => {
    await option('Order 1234').waitFor();
    expect(await conversations().getByRole('option').count()).toBe(1);
    const row = option('Order 1234');
    expect(await row.textContent()).toContain('Alice, Carol 2 messages');
    expect(await row.textContent()).toContain('Here is the receipt.');
    expect(await row.getAttribute('class')).toContain('unread');
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('opens the conversation stacked, the older read message collapsed, and expands it', async () => {
    await option('Order 1234').click();
    await page.getByRole('heading', { name: 'Order 1234', exact: true }).waitFor();
    expect(await stack().getByRole('listitem').count()).toBe(2);
    const older = stack().getByRole('button', { name: /Alice Example.*Where is my order\?/ });
    expect(await older.getAttribute('aria-expanded')).toBe('false');
    await page.frameLocator('iframe.message-frame').getByText('Here is the receipt.').waitFor();
    expect(await page.locator('iframe.message-frame').count()).toBe(1);
    // Each open message has its own reply and forward.
    expect(await page.getByRole('toolbar', { name: 'Actions for the message from Carol' }).getByRole('button', { name: 'Reply', exact: true }).count()).toBe(1);
    await older.focus();
    await page.keyboard.press('Enter');
    await page.frameLocator('iframe.message-frame').first().getByText('Where is my order?').waitFor();
    expect(await page.locator('iframe.message-frame').count()).toBe(2);
    expect(await seriousViolations(page)).toEqual([]);
    // Opening read the newer message: the row is read now.
    await folder('inbox');
    await page.waitForFunction("!document.querySelector('[role=option].unread')");
  });

  it('follows a message moved to Archive in both folders', async () => {
    await page.goto(`${base}/mail/${encodeURIComponent(DESK)}/inbox/${ids.reply}`);
    await page.getByRole('heading', { name: 'Re: Order 1234' }).waitFor();
    await page.getByRole('button', { name: 'Archive', exact: true }).click();
    // Back in the inbox, its row now stands for the one message left there.
    await option('Where is my order?').waitFor();
    expect(await option('Order 1234').textContent()).not.toContain('messages');
    await folder('archive');
    await option('Here is the receipt.').waitFor();
    expect(await conversations().getByRole('option').count()).toBe(1);
    await post(`/messages/${ids.reply}/move`, { folder: 'inbox' });
  });

  it('lists one row per message when the setting is off', async () => {
    await folder('inbox');
    await option(/Alice, Carol 2 messages/).waitFor();
    await page.getByRole('checkbox', { name: 'Conversation view' }).uncheck();
    const messages = page.getByRole('list', { name: 'Messages' });
    await messages.getByRole('listitem').filter({ hasText: 'Re: Order 1234' }).waitFor();
    expect(await messages.getByRole('listitem').filter({ hasText: 'Order 1234' }).count()).toBe(2);
    // The choice is kept across a reload.
    await page.reload();
    await messages.getByRole('listitem').filter({ hasText: 'Re: Order 1234' }).waitFor();
    await page.getByRole('checkbox', { name: 'Conversation view' }).check();
    await option('Order 1234').waitFor();
  });

  it('moves the selection with the arrow keys and opens with Enter', async () => {
    await deliver({ from: 'bob@sender.test', subject: 'Lunch', text: 'noon?' });
    await folder('inbox');
    const first = conversations().getByRole('option').first();
    await first.waitFor();
    expect(await conversations().getByRole('option').count()).toBe(2);
    // One tab stop: the selected row.
    expect(await conversations().locator('[tabindex="0"]').count()).toBe(1);
    await first.focus();
    expect(await first.getAttribute('aria-selected')).toBe('true');
    await page.keyboard.press('ArrowDown');
    const second = conversations().getByRole('option').nth(1);
    expect(await second.getAttribute('aria-selected')).toBe('true');
    // Focus follows the selection: the focused element is the selected row.
    expect(await page.evaluate<string | null>("document.activeElement.getAttribute('aria-selected')")).toBe('true');
    expect(await page.evaluate<string>('document.activeElement.textContent')).toContain('Order 1234');
    expect(await second.textContent()).toContain('Order 1234');
    await page.keyboard.press('ArrowUp');
    expect(await first.getAttribute('aria-selected')).toBe('true');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Order 1234', exact: true }).waitFor();
    expect(page.url()).toMatch(/\/inbox\/thr_/);
  });
  it('opens a conversation of 50 messages with every one reachable', async () => {
    let previous = '<long-0@sender.test>';
    const long: string[] = [await deliver({ subject: 'Long talk', text: 'message 0', messageId: previous })];
    for (let i = 1; i < 50; i += 1) {
      const messageId = `<long-${i}@sender.test>`;
      long.push(await deliver({ subject: 'Re: Long talk', text: `message ${i}`, messageId, inReplyTo: previous }));
      previous = messageId;
    }
    for (const id of long.slice(0, 49)) await post(`/messages/${id}/read`, { read: true });
    await folder('inbox');
    await option('Long talk').waitFor();
    expect(await option('Long talk').textContent()).toContain('50 messages');
    await option('Long talk').click();
    await page.getByRole('heading', { name: 'Long talk', exact: true }).waitFor();
    expect(await stack().getByRole('listitem').count()).toBe(50);
    expect(await stack().getByRole('button', { expanded: false }).count()).toBe(49);
    await page.frameLocator('iframe.message-frame').getByText('message 49').waitFor();
    await stack().getByRole('button', { name: /message 0\b/ }).click();
    await page.frameLocator('iframe.message-frame').first().getByText('message 0').waitFor();
  });
});
