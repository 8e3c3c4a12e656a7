import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asWork } from '../../src/db/tables.js';
import { createSuppressionStore } from '../../src/modules/mail/suppression.store.js';
import { listen } from '../helpers/cli-client.js';
import { TEST_DIALECT } from '../helpers/database.js';
import { bearer, createTenant, login, memberSession, session, type Tenant } from '../helpers/harness.js';
import { HAS_CHROMIUM, logIn, startBrowser, type Browser } from '../helpers/browser.js';
import { startMailHarness, type MailHarness } from '../helpers/mail.js';
import { startReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { startWorker } from '../helpers/webhooks.js';

const SUPPORT = 'helpdesk@mailroom.localhost';
const DOMAIN = 'acme-admin.example';
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's serious and critical violations on the page as it is. */
async function seriousViolations(page: Page): Promise<string[]> {
  // Evaluated over CDP, which the page's CSP does not govern (it refuses inline script tags).
  await page.evaluate(AXE);
  const result = await page.evaluate<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: unknown }> }> }>(
    "axe.run(document, { resultTypes: ['violations'] })",
  );
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${JSON.stringify(v.nodes.map((n) => n.target))}`);
}

describe.skipIf(!HAS_CHROMIUM)(`web app: workspace settings in Chromium (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let base: string;
  let acme: Tenant;
  let browser: Browser;
  let page: Page;
  let receiver: WebhookReceiver;
  let worker: ReturnType<typeof startWorker>;

  const settings = async (p: Page, section: string, title: string) => {
    await p.goto(`${base}/settings/${section}`);
    await p.getByRole('heading', { level: 1, name: title }).waitFor();
  };
  const api = (url: string, token: string, method: 'GET' | 'POST' | 'DELETE' = 'GET') => h.app.inject({ method, url, headers: session(token) });

  beforeAll(async () => {
    // Webhooks to the loopback receiver need its network exempted from the address rules (docs/api.md).
    h = await startMailHarness({ MAILROOM_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' });
    h.clock.set(Date.now());
    base = await listen(h.app);
    acme = await createTenant(h, 'Acme');
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(acme.apiKey), payload: { address: SUPPORT } })).statusCode).toBe(201);
    receiver = await startReceiver();
    worker = startWorker(h, 20);
    browser = await startBrowser();
    page = await browser.page();
    await logIn(page, base, acme.ownerEmail, acme.password);
  });
  afterAll(async () => {
    await browser?.close();
    await worker?.close();
    await receiver?.close();
    await h?.services.webhooks.close();
    await h?.close();
  });

  it('creates a sending domain, shows its records copy-ready, and verifies it against the loopback DNS', async () => {
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('heading', { level: 1, name: 'Mailboxes' }).waitFor();
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Sending domains' }).click();
    await page.getByLabel('Domain', { exact: true }).fill(DOMAIN);
    await page.getByRole('button', { name: 'Add domain' }).click();
    const value = await page.getByRole('textbox', { name: 'Verification record value', exact: true }).inputValue();
    expect(value).toMatch(/^mailroom-verification=\S+$/);
    expect(await page.getByRole('textbox', { name: 'Verification record name', exact: true }).inputValue()).toBe(`_mailroom-verification.${DOMAIN}`);
    expect(await page.getByRole('textbox', { name: 'DKIM record value', exact: true }).inputValue()).toMatch(/^v=DKIM1; k=rsa; p=/);
    await page.getByRole('button', { name: 'Copy verification record value' }).waitFor();
    expect(await page.getByRole('textbox', { name: 'SPF record value', exact: true }).inputValue()).toBe('v=spf1 include:mailroom.localhost ~all');
    const dkim = { name: await page.getByRole('textbox', { name: 'DKIM record name', exact: true }).inputValue(), value: await page.getByRole('textbox', { name: 'DKIM record value', exact: true }).inputValue() };
    const card = page.locator('.card', { hasText: DOMAIN });
    /** The checks table's row for a record: its status and its reason. */
    const row = async (record: string) => {
      const cells = card.getByRole('row', { name: new RegExp(`^${record.replace(/[()]/g, '\\$&')} `) }).getByRole('cell');
      return { status: await cells.nth(0).textContent(), reason: await cells.nth(2).textContent() };
    };
    // Each check is followed by a wait for the summary it should end with.
    const verify = (label = `Verify ${DOMAIN}`) => page.getByRole('button', { name: label }).click();
    // Before anything is published, verify says per record what is missing.
    await verify();
    await card.getByText(`${DOMAIN} is pending: the verification record is not published yet; DKIM: missing`).waitFor();
    expect(await row('Verification')).toEqual({ status: 'missing', reason: `no TXT record at _mailroom-verification.${DOMAIN} yet: publish it (a new record can take a while to show in DNS)` });
    expect((await row('DKIM')).status).toBe('missing');
    expect((await row('SPF (advice)')).reason).toMatch(/^no SPF record at acme-admin\.example\. Not required/);
    expect(await seriousViolations(page)).toEqual([]);

    // A new verification value: the first one no longer verifies, the new one does.
    await page.getByRole('button', { name: `New verification value for ${DOMAIN}` }).click();
    await page.getByRole('button', { name: 'Make a new value (the earlier one stops working)' }).click();
    await card.getByText('A new value: the earlier one no longer verifies.').waitFor();
    const renewed = await page.getByRole('textbox', { name: 'Verification record value', exact: true }).inputValue();
    expect(renewed).toMatch(/^mailroom-verification=\S+$/);
    expect(renewed).not.toBe(value);
    h.dns.set(`_mailroom-verification.${DOMAIN}`, { TXT: [value] });
    await verify();
    await card.getByText(`${DOMAIN} is pending: the verification record does not hold this domain's token; DKIM: missing`).waitFor();
    expect(await row('Verification')).toMatchObject({ status: 'mismatch' });
    expect(await card.locator('.found').first().textContent()).toBe(`Found: ${value}`);

    // Verified with DKIM still missing: it says so, and checks again once the record is published.
    h.dns.set(`_mailroom-verification.${DOMAIN}`, { TXT: [renewed] });
    await verify();
    await card.getByText(new RegExp(`^${DOMAIN.replace('.', '\\.')} is verified, but its DKIM record is missing`)).waitFor();
    expect(await page.locator('.status.verified').textContent()).toBe('verified');
    expect((await row('DKIM')).status).toBe('missing');
    h.dns.set(dkim.name, { TXT: [dkim.value] });
    await verify(`Check DNS of ${DOMAIN}`);
    await card.getByText(`${DOMAIN} is verified and its DKIM record is published`).waitFor();
    expect(await row('DKIM')).toMatchObject({ status: 'ok' });
    expect(await seriousViolations(page)).toEqual([]);
    await page.emulateMedia({ colorScheme: 'dark' });
    expect(await seriousViolations(page)).toEqual([]);
    await page.emulateMedia({ colorScheme: 'light' });
  });

  it('creates a mailbox in the verified domain, which then cannot be deleted; a domain without mailboxes can', async () => {
    await settings(page, 'mailboxes', 'Mailboxes');
    await page.getByLabel('Address').fill(`auth@${DOMAIN}`);
    await page.getByRole('button', { name: 'Create mailbox' }).click();
    await page.getByRole('cell', { name: `auth@${DOMAIN}` }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);

    await settings(page, 'domains', 'Sending domains');
    await page.getByRole('button', { name: `Delete ${DOMAIN}` }).click();
    await page.getByRole('button', { name: `Delete ${DOMAIN} for good` }).click();
    await page.getByRole('alert').filter({ hasText: `${DOMAIN} still has 1 mailbox (auth@${DOMAIN}); delete the mailboxes first (their service tokens go with them) (409 domain_in_use)` }).waitFor();
    await page.getByLabel('Domain', { exact: true }).fill('throwaway.example');
    await page.getByRole('button', { name: 'Add domain' }).click();
    await page.getByRole('button', { name: 'Delete throwaway.example' }).click();
    await page.getByRole('button', { name: 'Cancel' }).click();
    expect(await page.getByRole('heading', { level: 3, name: /^throwaway\.example/ }).count()).toBe(1);
    await page.getByRole('button', { name: 'Delete throwaway.example' }).click();
    await page.getByRole('button', { name: 'Delete throwaway.example for good' }).click();
    await expect.poll(() => page.getByRole('heading', { level: 3, name: /^throwaway\.example/ }).count()).toBe(0);
    expect(await page.getByRole('heading', { level: 3, name: new RegExp(`^${DOMAIN.replace('.', '\\.')}`) }).count()).toBe(1);
  });

  it('shows a service token once (not after a reload), rotates and revokes it', async () => {
    await settings(page, 'service-tokens', 'Service tokens');
    await page.getByLabel('Name').fill('login codes');
    await expect.poll(() => page.getByLabel('Mailbox it sends from').inputValue()).toBe(`auth@${DOMAIN}`);
    await page.getByRole('button', { name: 'Create token' }).click();
    const token = await page.getByRole('textbox', { name: 'Token login codes', exact: true }).inputValue();
    expect(token).toMatch(/^mst_/);
    await page.getByText('It is shown this once').waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await page.reload();
    await page.getByRole('cell', { name: 'login codes', exact: true }).waitFor();
    expect(await page.content()).not.toContain(token);
    await page.getByRole('button', { name: 'Rotate login codes', exact: true }).click();
    await page.getByRole('button', { name: 'Rotate login codes (the old credential stops now)' }).click();
    const rotated = await page.getByRole('textbox', { name: 'Token login codes', exact: true }).inputValue();
    expect(rotated).toMatch(/^mst_/);
    expect(rotated).not.toBe(token);
    await page.getByRole('button', { name: 'I have copied it' }).click();
    expect(await page.content()).not.toContain(rotated);
    await page.getByRole('button', { name: 'Revoke login codes' }).click();
    await page.getByRole('button', { name: 'Really revoke login codes' }).click();
    await page.getByText('No service tokens yet.').waitFor();
  });

  it('shows an API key once; it works on the API-key surface until revoked', async () => {
    await settings(page, 'api-keys', 'API keys');
    await page.getByLabel('Name').fill('CI deploys');
    await page.getByRole('button', { name: 'Create API key' }).click();
    const key = await page.getByRole('textbox', { name: 'API key CI deploys', exact: true }).inputValue();
    expect(key).toMatch(/^mrk_/);
    expect((await h.app.inject({ method: 'GET', url: '/mailboxes', headers: bearer(key) })).statusCode).toBe(200);
    await page.reload();
    await page.getByRole('cell', { name: 'CI deploys', exact: true }).waitFor();
    expect(await page.content()).not.toContain(key);
    await page.getByRole('button', { name: 'Revoke CI deploys' }).click();
    await page.getByRole('button', { name: 'Really revoke CI deploys' }).click();
    await page.getByText(/^Revoked /).waitFor();
    expect((await h.app.inject({ method: 'GET', url: '/mailboxes', headers: bearer(key) })).statusCode).toBe(401);
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('shows an app password once; a mail client logs in with it until it is revoked', async () => {
    await settings(page, 'app-passwords', 'App passwords');
    await page.getByText('No mail-client server is turned on in this service yet.').waitFor();
    await page.getByLabel('Name').fill('Phone');
    await page.getByLabel('Mailbox').selectOption(SUPPORT);
    await page.getByRole('button', { name: 'Create app password' }).click();
    const password = await page.getByRole('textbox', { name: `App password Phone for ${SUPPORT}`, exact: true }).inputValue();
    expect(password).toMatch(/^[a-z2-9]{4}(-[a-z2-9]{4}){3}$/);
    expect(await h.services.appPasswords.service.verify(SUPPORT, password, '127.0.0.1')).toMatchObject({ ok: true });
    await page.reload();
    await page.getByRole('cell', { name: 'Phone', exact: true }).waitFor();
    expect(await page.content()).not.toContain(password);
    await page.getByRole('button', { name: 'Revoke Phone' }).click();
    await page.getByRole('button', { name: 'Really revoke Phone' }).click();
    await page.getByText('No app passwords yet.').waitFor();
    expect(await h.services.appPasswords.service.verify(SUPPORT, password, '127.0.0.1')).toMatchObject({ ok: false, reason: 'invalid' });
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('creates a webhook, sends a test event, and shows it in the delivery log', async () => {
    await settings(page, 'webhooks', 'Webhooks');
    await page.getByLabel('Endpoint URL').fill(`${receiver.url}/hook`);
    await page.getByLabel('message.received').check();
    await page.getByRole('button', { name: 'Create webhook' }).click();
    expect(await page.getByRole('textbox', { name: 'Signing secret', exact: true }).inputValue()).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'I have copied it' }).click();
    const card = page.locator('.card', { hasText: `${receiver.url}/hook` });
    await card.getByText('Events: message.received').waitFor();
    await card.getByLabel('Test event').selectOption('message.bounced');
    await card.getByRole('button', { name: 'Send test event' }).click();
    const [hit] = await receiver.waitFor(1);
    expect(JSON.parse(hit!.body)).toMatchObject({ event_type: 'message.bounced', data: { test: true } });
    const log = card.getByRole('region', { name: `Deliveries to ${receiver.url}/hook` });
    await log.getByRole('cell', { name: '204 (delivered)', exact: true }).waitFor();
    await log.getByText('message.bounced').waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    // The dark theme (from the system setting) keeps its contrast too.
    await page.emulateMedia({ colorScheme: 'dark' });
    expect(await seriousViolations(page)).toEqual([]);
    await page.emulateMedia({ colorScheme: 'light' });
    // A failing answer shows its status and error, newest first.
    receiver.answer = () => ({ status: 500, body: 'broken' });
    await card.getByRole('button', { name: 'Send test event' }).click();
    await log.getByRole('cell', { name: '500 (failed)', exact: true }).waitFor();
    expect(await log.locator('tbody tr').first().textContent()).toContain('HTTP 500: broken');
    receiver.answer = () => ({ status: 204 });
    // Replay sends the failed event again, with its own event id; recover finds nothing else missed (test events are not).
    const failedId = (JSON.parse(receiver.received.at(-1)!.body) as { event_id: string }).event_id;
    const sameId = (r: { headers: Record<string, unknown> }) => r.headers['webhook-id'] === failedId;
    await log.getByRole('button', { name: `Replay ${failedId}` }).first().click();
    await card.getByText(`Event ${failedId} queued again.`).waitFor();
    await receiver.waitFor(2, 10_000, sameId);
    await card.getByRole('button', { name: 'Recover' }).click();
    await card.getByText('Nothing to recover.').waitFor();
    // 410 Gone: the service disables the endpoint, and the card says why until it is turned back on.
    receiver.answer = () => ({ status: 410 });
    await card.getByRole('button', { name: 'Send test event' }).click();
    await log.getByRole('cell', { name: '410 (failed)', exact: true }).waitFor();
    await settings(page, 'webhooks', 'Webhooks');
    await card.getByText(/Disabled by the service .*: the endpoint answered HTTP 410 Gone to event evt_/).waitFor();
    expect(await card.getByLabel('Active').isChecked()).toBe(false);
    receiver.answer = () => ({ status: 204 });
    await card.getByLabel('Active').check();
    await card.getByText(/Disabled by the service/).waitFor({ state: 'detached' });
    expect(await seriousViolations(page)).toEqual([]);
    await card.getByLabel('Active').uncheck();
    await expect.poll(async () => (await api('/app/api/webhooks', await login(h, acme.ownerEmail, acme.password))).json<{ webhooks: Array<{ active: boolean }> }>().webhooks[0]?.active).toBe(false);
  });

  it('adds and removes allow/block list entries per direction', async () => {
    await settings(page, 'lists', 'Allow and block lists');
    await page.getByLabel('Entry').fill('Spammer@Bad.Example');
    await page.getByLabel('Reason (optional)').fill('sends junk');
    await page.getByRole('button', { name: 'Add entry' }).click();
    await page.getByRole('cell', { name: 'spammer@bad.example', exact: true }).waitFor();
    await page.getByLabel('Direction').selectOption('outbound');
    await page.getByText('The outbound block list is empty.').waitFor();
    await page.getByLabel('Entry').fill('203.0.113.7');
    await page.getByRole('button', { name: 'Add entry' }).click();
    await page.getByText('IP addresses and CIDRs are for inbound lists only').waitFor();
    await page.getByLabel('Direction').selectOption('inbound');
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Remove spammer@bad.example' }).click();
    await page.getByText('The inbound block list is empty.').waitFor();
  });

  it('lists suppressions by reason, adds one by hand and lifts one', async () => {
    // A hard bounce as the bounce path records it (test/suppressions.test.ts covers that path).
    const row = { workspace_id: acme.workspaceId, address: 'bounced@example.com', reason: 'hard_bounce' as const, detail: 'smtp; 550 5.1.1 no such user', status_code: '5.1.1', message_id: 'msg_01jd0000000000000000000000', created_at: h.clock.now() };
    expect(await createSuppressionStore().suppressOne(asWork(h.services.database.db), row)).toBe(true);
    await settings(page, 'suppressions', 'Suppressions');
    await page.getByRole('cell', { name: 'bounced@example.com', exact: true }).waitFor();
    await page.getByLabel('Address').fill('Gone@Example.com');
    await page.getByLabel('Note (optional)').fill('asked by phone');
    await page.getByRole('button', { name: 'Suppress' }).click();
    await page.getByRole('cell', { name: 'gone@example.com', exact: true }).waitFor();
    await page.getByText('2 suppressed').waitFor();
    await page.getByLabel('Show').selectOption('hard_bounce');
    await page.getByText('1 suppressed').waitFor();
    expect(await page.getByRole('cell', { name: 'gone@example.com', exact: true }).count()).toBe(0);
    expect(await page.getByRole('cell', { name: '5.1.1', exact: true }).count()).toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Remove bounced@example.com' }).click();
    await page.getByText('No address is suppressed for this reason.').waitFor();
    const left = (await api('/app/api/suppressions', await login(h, acme.ownerEmail, acme.password))).json<{ suppressions: Array<{ address: string }> }>();
    expect(left.suppressions.map((x) => x.address)).toEqual(['gone@example.com']);
  });

  it('shows the usage beside the quotas, unlimited where none is set', async () => {
    await h.services.quotas.set(acme.workspaceId, 'mailboxes', '25');
    await h.services.quotas.set(acme.workspaceId, 'stored_bytes', String(2 * 1024 * 1024));
    await settings(page, 'usage', 'Usage');
    const row = (title: string) => page.getByRole('row', { name: new RegExp(`^${title} `) });
    await row('Mailboxes').getByRole('cell', { name: '25', exact: true }).waitFor();
    await row('Stored mail').getByRole('cell', { name: '2.0 MiB', exact: true }).waitFor();
    await row('Sent this hour').getByRole('cell', { name: 'Unlimited', exact: true }).waitFor();
    expect(await row('API requests a minute').getByRole('cell', { name: '—', exact: true }).count()).toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
    await h.services.quotas.set(acme.workspaceId, 'mailboxes', 'default');
    await h.services.quotas.set(acme.workspaceId, 'stored_bytes', 'default');
  });

  it('sets how long trash and spam keep messages, and shows what the service keeps', async () => {
    await settings(page, 'retention', 'Retention');
    await page.getByText('Events (stream and webhook replay)').waitFor();
    await page.getByLabel('Trash: days after a message\'s last change (1–3650)').fill('7');
    await page.getByLabel('Never delete spam').check();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved. The next sweep (within minutes) applies it.').waitFor();
    const saved = (await api('/app/api/retention', await login(h, acme.ownerEmail, acme.password))).json<{ trash_days: number | null; spam_days: number | null }>();
    expect([saved.trash_days, saved.spam_days]).toEqual([7, null]);
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('adds a member, changes roles, and shows the last-owner 409 in place', async () => {
    await settings(page, 'members', 'Members and roles');
    await page.getByLabel('Email').fill('newbie@example.com');
    await page.getByLabel('Role', { exact: true }).selectOption('admin');
    await page.getByLabel('Password for a new user').fill('newbie-s3cret');
    await page.getByRole('button', { name: 'Add member' }).click();
    await page.getByText('newbie@example.com added as admin (new user).').waitFor();
    await page.getByLabel('Role of newbie@example.com').selectOption('member');
    await expect.poll(async () => (await api('/app/api/members', await login(h, 'newbie@example.com', 'newbie-s3cret'))).json<{ members: Array<{ email: string; role: string }> }>().members.find((m) => m.email === 'newbie@example.com')?.role).toBe('member');
    await page.getByLabel(`Role of ${acme.ownerEmail}`).selectOption('admin');
    await page.getByRole('alert').filter({ hasText: '409 last_owner' }).waitFor();
    expect(await page.getByLabel(`Role of ${acme.ownerEmail}`).inputValue()).toBe('owner');
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('enforces member roles in the UI and the API; a member changes their own password', async () => {
    const member = await memberSession(h, acme.workspaceId, 'member');
    const tab = await browser.page({ width: 375, height: 740 });
    await logIn(tab, base, member.email, 'correct horse battery');
    await settings(tab, 'mailboxes', 'Mailboxes');
    const nav = tab.getByRole('navigation', { name: 'Settings' });
    expect(await nav.getByRole('link').allTextContents()).toEqual(['Mailboxes', 'Signatures', 'Labels', 'App passwords', 'Webhooks', 'Allow and block lists', 'Suppressions', 'Usage', 'Members and roles', 'Retention', 'Notifications', 'Your password']);
    expect(await tab.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
    // Reached by its address, a page the role may not use says so, with nothing to fill in or press.
    await settings(tab, 'domains', 'Sending domains');
    await tab.getByRole('alert').filter({ hasText: "You can't manage sending domains" }).waitFor();
    expect(await tab.getByRole('main').getByRole('button').count()).toBe(0);
    expect(await tab.getByRole('main').getByRole('textbox').count()).toBe(0);
    const forced = await tab.evaluate<number>(
      "fetch('/app/api/api-keys', { method: 'POST', headers: { 'x-service-session': sessionStorage.getItem('mailroom.session'), 'content-type': 'application/json' }, body: '{}' }).then((r) => r.status)",
    );
    expect(forced).toBe(403);
    expect((await api('/app/api/service-tokens', member.token)).statusCode).toBe(403);
    await settings(tab, 'members', 'Members and roles');
    await tab.getByRole('cell', { name: acme.ownerEmail, exact: true }).waitFor();
    expect(await tab.getByRole('button', { name: 'Add member' }).count()).toBe(0);
    expect(await tab.getByRole('combobox').count()).toBe(0);
    expect(await seriousViolations(tab)).toEqual([]);
    expect(await tab.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
    await settings(tab, 'password', 'Your password');
    await tab.getByLabel('Current password').fill('wrong password!');
    await tab.getByLabel('New password (at least 8 characters)').fill('a-longer-s3cret');
    await tab.getByLabel('New password again').fill('a-longer-s3cret');
    await tab.getByRole('button', { name: 'Change password' }).click();
    await tab.getByRole('alert').filter({ hasText: '403 wrong_password' }).waitFor();
    await tab.getByLabel('Current password').fill('correct horse battery');
    await tab.getByRole('button', { name: 'Change password' }).click();
    await tab.getByText('Password changed. 1 other session(s) ended.').waitFor();
    expect((await api('/app/api/session', member.token)).statusCode).toBe(401);
    expect((await h.app.inject({ method: 'POST', url: '/app/api/login', payload: { email: member.email, password: 'correct horse battery' } })).statusCode).toBe(401);
    expect(await seriousViolations(tab)).toEqual([]);
    await tab.close();
  });
});
