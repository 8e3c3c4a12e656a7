import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/** Debian's Chromium (apt-get install chromium); Playwright's own browser download cannot work here. */
export const CHROMIUM = '/usr/bin/chromium';
export const HAS_CHROMIUM = existsSync(CHROMIUM);
if (!HAS_CHROMIUM) console.warn(`browser tests skipped: ${CHROMIUM} is missing (apt-get install -y chromium)`);

const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

export interface Browser {
  context: BrowserContext;
  /** A new tab at the given size (375 px wide is a phone). */
  page(viewport?: { width: number; height: number }): Promise<Page>;
  close(): Promise<void>;
}

/** A headless Chromium with a fresh profile of its own, deleted on close. */
export async function startBrowser(): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'mailroom-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    acceptDownloads: true,
    viewport: { width: 1280, height: 800 },
  });
  return {
    context,
    async page(viewport) {
      const page = await context.newPage();
      if (viewport) await page.setViewportSize(viewport);
      return page;
    },
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * Log in through the form and wait for the mail view. Folders list one row per message unless `conversations` is
 * asked for: the tests of single messages read the list that way (the user's setting, kept in the browser).
 */
export async function logIn(page: Page, base: string, email: string, password: string, options: { conversations?: boolean } = {}): Promise<void> {
  await page.goto(`${base}/`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('navigation', { name: 'Mailboxes and folders' }).waitFor();
  if (options.conversations) return;
  await page.evaluate(
    `fetch('/app/api/session', { headers: { 'x-service-session': sessionStorage.getItem('mailroom.session') } })
      .then((r) => r.json()).then((s) => localStorage.setItem('mailroom.conversations.' + s.user.user_id, 'off'))`,
  );
  await page.reload();
  await page.getByRole('navigation', { name: 'Mailboxes and folders' }).waitFor();
}
