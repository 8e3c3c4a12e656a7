import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen } from '../helpers/cli-client.js';
import { TEST_DIALECT } from '../helpers/database.js';
import { createTenant, memberSession, session, startHarness, type Harness, type Tenant } from '../helpers/harness.js';
import { HAS_CHROMIUM, logIn, startBrowser, type Browser } from '../helpers/browser.js';

describe.skipIf(!HAS_CHROMIUM)(`web app: the audit log page in Chromium (${TEST_DIALECT})`, () => {
  let h: Harness;
  let base: string;
  let acme: Tenant;
  let browser: Browser;
  let page: Page;

  /** The action column of the table as shown. */
  const actions = async (p: Page) => p.locator('table.admin-table tbody tr td:nth-child(2)').allTextContents();

  beforeAll(async () => {
    h = await startHarness();
    h.clock.set(Date.now());
    base = await listen(h.app);
    acme = await createTenant(h, 'Acme');
    // Other's entries must never show in Acme's log.
    await createTenant(h, 'Other');
    const token = (await memberSession(h, acme.workspaceId, 'owner')).token;
    // 60 list entries: more than a page (50) of the log.
    for (let i = 0; i < 60; i++) {
      const res = await h.app.inject({ method: 'POST', url: '/app/api/lists/inbound/block', headers: session(token), payload: { entry: `spam${i}.example` } });
      expect(res.statusCode).toBe(201);
    }
    browser = await startBrowser();
    page = await browser.page();
    await logIn(page, base, acme.ownerEmail, acme.password);
  });
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  it('is linked from the settings of an owner, and pages newest first', async () => {
    await page.goto(`${base}/settings/mailboxes`);
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('heading', { level: 1, name: 'Audit log' }).waitFor();
    await page.getByRole('cell', { name: 'list.entry_added' }).first().waitFor();
    expect(await actions(page)).toEqual(Array<string>(50).fill('list.entry_added'));
    await page.getByRole('cell', { name: 'spam59.example', exact: false }).first().waitFor();
    expect(await page.getByRole('button', { name: 'Newer' }).isDisabled()).toBe(true);

    await page.getByRole('button', { name: 'Older' }).click();
    await page.getByText('Page 2, newest first').waitFor();
    // 10 more list entries, then the operator's: the member added, the key, the owner, the workspace.
    await expect.poll(() => actions(page)).toEqual([...Array<string>(10).fill('list.entry_added'), 'member.added', 'api_key.created', 'member.added', 'workspace.created']);
    expect(await page.getByRole('button', { name: 'Older' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Newer' }).click();
    await page.getByText('Page 1, newest first').waitFor();
    await expect.poll(async () => (await actions(page)).length).toBe(50);
  });

  it('filters by action family and by actor', async () => {
    await page.goto(`${base}/settings/audit-log`);
    await page.getByLabel('Action').selectOption({ label: 'Members and roles' });
    await expect.poll(() => actions(page)).toEqual(['member.added', 'member.added']);
    await page.getByLabel('Action').selectOption({ label: 'Every action' });
    await page.getByLabel('Actor').fill('operator');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => actions(page)).toEqual(['member.added', 'api_key.created', 'member.added', 'workspace.created']);
    await page.getByRole('cell', { name: 'Operator (command line)' }).first().waitFor();
    await page.getByLabel('Actor').fill('nobody@example.com');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No entries match these filters.').waitFor();
  });

  it('is not in a member\'s navigation, and its address says which role it needs', async () => {
    const member = await memberSession(h, acme.workspaceId, 'member');
    const tab = await browser.page();
    await logIn(tab, base, member.email, 'correct horse battery');
    await tab.goto(`${base}/settings/mailboxes`);
    await tab.getByRole('heading', { level: 1, name: 'Mailboxes' }).waitFor();
    expect(await tab.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Audit log' }).count()).toBe(0);
    await tab.goto(`${base}/settings/audit-log`);
    await tab.getByRole('alert').filter({ hasText: "You can't manage audit log: this page needs the owner or admin role" }).waitFor();
    expect(await tab.getByRole('main').getByRole('button').count()).toBe(0);
    await tab.close();
  });
});
