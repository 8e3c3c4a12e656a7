import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen } from '../helpers/cli-client.js';
import { TEST_DIALECT } from '../helpers/database.js';
import { bearer, createTenant, type Tenant } from '../helpers/harness.js';
import { HAS_CHROMIUM, logIn, startBrowser, type Browser } from '../helpers/browser.js';
import { startMailHarness, type MailHarness } from '../helpers/mail.js';
import { newMailOf } from '../../web/src/newmail.js';

const DESK = 'desk@mailroom.localhost';
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * Wraps the browser's Notification constructor (not the app's code) so the test sees each notification the app
 * creates, and can click it as the system would; and lets the test put the tab in the background, which headless
 * Chromium has no way to do (another tab in front, a minimised window: every page stays 'visible').
 */
const RECORD_NOTIFICATIONS = `(() => {
  const Real = window.Notification;
  window.__notes = [];
  class Recorded extends Real {
    constructor(title, options) {
      super(title, options);
      window.__notes.push({ title, body: options && options.body, note: this });
    }
  }
  Object.defineProperty(Recorded, 'permission', { get: () => Real.permission });
  Recorded.requestPermission = (...args) => Real.requestPermission(...args);
  window.Notification = Recorded;
  // Headless Chromium shows every tab as visible: the test says when this one is in the background.
  let hidden = false;
  Object.defineProperty(Document.prototype, 'visibilityState', { get: () => (hidden ? 'hidden' : 'visible') });
  Object.defineProperty(Document.prototype, 'hidden', { get: () => hidden });
  window.__setHidden = (value) => {
    hidden = value;
    document.dispatchEvent(new Event('visibilitychange'));
  };
})();`;

interface Note {
  title: string;
  body: string;
}
const notes = (page: Page) => page.evaluate<Note[]>('window.__notes.map(({ title, body }) => ({ title, body }))');

async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const result = await page.evaluate<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: unknown }> }> }>(
    "axe.run(document, { iframes: false, resultTypes: ['violations'] })",
  );
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${JSON.stringify(v.nodes.map((n) => n.target))}`);
}

describe('which events make a notification', () => {
  const event = (data: object, type = 'message.received') => ({ type, data: JSON.stringify({ event_type: type, data }) });
  const mail = { message_id: 'msg_1', mailbox: DESK, folder: 'inbox', direction: 'inbound', subject: 'Hello', from: { name: 'Alice', address: 'alice@sender.test' } };
  const own = new Set([DESK]);

  it('takes sender and subject of mail that arrived', () => {
    expect(newMailOf(event(mail), own)).toEqual({ messageId: 'msg_1', mailbox: DESK, folder: 'inbox', sender: 'Alice', subject: 'Hello' });
  });
  it('leaves out spam, mail from the own mailboxes, other events and test events', () => {
    expect(newMailOf(event({ ...mail, folder: 'spam' }), own)).toBeNull();
    expect(newMailOf(event({ ...mail, from: { name: 'Me', address: 'DESK@mailroom.localhost' } }), own)).toBeNull();
    expect(newMailOf(event(mail, 'message.sent'), own)).toBeNull();
    expect(newMailOf(event({ test: true, webhook_id: 'whk_1' }), own)).toBeNull();
    expect(newMailOf({ type: 'message.received', data: 'not json' }, own)).toBeNull();
  });
});

describe.skipIf(!HAS_CHROMIUM)(`web app: desktop notifications in Chromium (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let base: string;
  let acme: Tenant;
  let browser: Browser;
  let page: Page;

  const deliver = async (mail: Parameters<MailHarness['send']>[0]): Promise<string> => {
    h.clock.advance(1000);
    return (await h.send({ from: 'Alice Example <alice@sender.test>', to: DESK, ...mail })).response.match(/msg_[0-9a-z]{26}/)![0];
  };

  beforeAll(async () => {
    h = await startMailHarness();
    base = await listen(h.app);
    acme = await createTenant(h, 'Acme');
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(acme.apiKey), payload: { address: DESK } })).statusCode).toBe(201);
    browser = await startBrowser();
    await browser.context.grantPermissions(['notifications'], { origin: base });
    await browser.context.addInitScript(RECORD_NOTIFICATIONS);
    page = await browser.page();
    await logIn(page, base, acme.ownerEmail, acme.password);
  });
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  it('shows nothing until the user turns them on', async () => {
    await page.goto(`${base}/mail/${encodeURIComponent(DESK)}/inbox`);
    await page.getByText('Live', { exact: true }).waitFor();
    await page.evaluate('window.__setHidden(true)');
    await deliver({ subject: 'Before the setting', text: 'x' });
    await page.getByRole('list', { name: 'Messages' }).getByText('Before the setting').waitFor();
    expect(await notes(page)).toEqual([]);
  });

  it('turns them on in the settings, and names sender and subject of new mail while the tab is hidden', async () => {
    await page.goto(`${base}/settings/notifications`);
    const box = page.getByRole('checkbox', { name: 'Desktop notifications for new mail' });
    await box.check();
    await page.getByRole('status').filter({ hasText: 'On:' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await page.goto(`${base}/mail/${encodeURIComponent(DESK)}/inbox`);
    await page.getByText('Live', { exact: true }).waitFor();

    // While the tab is in front, the new row is enough.
    await deliver({ subject: 'Seen in the list', text: 'x' });
    await page.getByRole('list', { name: 'Messages' }).getByText('Seen in the list').waitFor();
    expect(await notes(page)).toEqual([]);

    await page.evaluate('window.__setHidden(true)');
    // Mail from the user's own mailbox is not news to them.
    await deliver({ from: DESK, subject: 'Note to self', text: 'x' });
    const id = await deliver({ from: 'Bob Builder <bob@sender.test>', subject: 'Quarterly numbers', text: 'The body stays private.' });
    await expect.poll(() => notes(page)).toEqual([{ title: 'Bob Builder', body: 'Quarterly numbers' }]);

    // A click on it brings the tab forward on the message.
    await page.evaluate("window.__notes[0].note.dispatchEvent(new Event('click'))");
    await page.getByRole('heading', { name: 'Quarterly numbers' }).waitFor();
    expect(page.url()).toContain(`/inbox/${id}`);
  });

  it('stops when turned off', async () => {
    await page.goto(`${base}/settings/notifications`);
    await page.getByRole('checkbox', { name: 'Desktop notifications for new mail' }).uncheck();
    await page.getByRole('status').filter({ hasText: 'Off.' }).waitFor();
    await page.goto(`${base}/mail/${encodeURIComponent(DESK)}/inbox`);
    await page.getByText('Live', { exact: true }).waitFor();
    await page.evaluate('window.__setHidden(true)');
    await deliver({ subject: 'After turning off', text: 'x' });
    await page.getByRole('list', { name: 'Messages' }).getByText('After turning off').waitFor();
    expect(await notes(page)).toEqual([]);
  });
});
