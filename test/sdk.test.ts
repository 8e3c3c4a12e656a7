import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMailroomClient, type MailroomClient, type Schema } from '../src/sdk/index.js';
import { listen } from './helpers/cli-client.js';
import { ROOT } from './helpers/cli.js';
import { TEST_DIALECT } from './helpers/database.js';
import { createTenant, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';

const run = promisify(execFile);
const SUPPORT = 'helpdesk@mailroom.localhost';
const SALES = 'orders@mailroom.localhost';

/** The README's SDK example, as written: the TypeScript block after its `sdk-example` marker. */
function readmeExample(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const block = /<!-- sdk-example:[^>]*-->\n```ts\n([\s\S]*?)\n```/.exec(readme);
  if (!block?.[1]) throw new Error('README.md has no ```ts block after <!-- sdk-example: … -->');
  return block[1];
}

describe(`the TypeScript SDK against a running server (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let url: string;
  let acme: Tenant;
  let mailroom: MailroomClient;

  beforeAll(async () => {
    h = await startMailHarness();
    url = await listen(h.app);
    acme = await createTenant(h, 'Acme');
    mailroom = createMailroomClient({ baseUrl: url, apiKey: acme.apiKey });
  });
  afterAll(async () => {
    await h.close();
  });

  it('creates mailboxes, reads the inbox and sends with an API key, typed by the route schemas', async () => {
    for (const address of [SUPPORT, SALES]) {
      const { data, error, response } = await mailroom.POST('/mailboxes', { body: { address } });
      expect(error).toBeUndefined();
      expect(response.status).toBe(201);
      expect(data?.address).toBe(address);
    }
    await h.send({ from: 'alice@sender.test', to: SUPPORT, subject: 'Order 1234 has not arrived', text: 'Can you check?' });

    const { data: inbox, error } = await mailroom.GET('/inbox', { params: { query: { mailbox: SUPPORT } } });
    if (error) throw new Error(`${error.error}: ${error.detail}`);
    // No cast: `inbox` is the route's answer type once `error` is ruled out.
    const first: Schema<'MessageListItem'> | undefined = inbox.messages[0];
    expect(first?.subject).toBe('Order 1234 has not arrived');
    expect(first?.from?.address).toBe('alice@sender.test');

    const { data: message } = await mailroom.GET('/messages/{message_id}', { params: { path: { message_id: first!.message_id } } });
    expect(message?.text?.trim()).toBe('Can you check?');

    const { data: queued, response } = await mailroom.POST('/send', { body: { from_mailbox: SUPPORT, to: SALES, subject: 'Hello', body: 'Hi' } });
    expect(response.status).toBe(202);
    expect(queued).toEqual({ message_id: expect.stringMatching(/^msg_/) as string, status: 'queued' });
  });

  it("answers a refusal as `error`, the server's {error, detail}", async () => {
    const stranger = createMailroomClient({ baseUrl: url, apiKey: 'mrk_not-a-key' });
    const denied = await stranger.GET('/mailboxes');
    expect(denied.response.status).toBe(401);
    expect(denied.data).toBeUndefined();
    expect(denied.error?.error).toMatch(/credential|api_key/);

    const missing = await mailroom.GET('/mailboxes/{address}', { params: { path: { address: 'nobody@mailroom.localhost' } } });
    expect(missing.response.status).toBe(404);
    expect(missing.error).toMatchObject({ error: expect.any(String) as string, detail: expect.any(String) as string });
  });

  it('logs in without a credential, then uses the session surface with the session token', async () => {
    const anonymous = createMailroomClient({ baseUrl: url });
    const { data: login } = await anonymous.POST('/app/api/login', { body: { email: acme.ownerEmail, password: acme.password } });
    expect(login?.session_token).toMatch(/^mrs_/);

    const app = createMailroomClient({ baseUrl: url, session: login!.session_token });
    const { data: session } = await app.GET('/app/api/session');
    expect(session?.user.email).toBe(acme.ownerEmail);
    // A list entry with a slash goes through the `{entry}` parameter as %2F.
    await app.POST('/app/api/lists/{direction}/{list_type}', { params: { path: { direction: 'inbound', list_type: 'block' } }, body: { entry: '203.0.113.0/24' } });
    const { data: entry } = await app.GET('/app/api/lists/{direction}/{list_type}/{entry}', {
      params: { path: { direction: 'inbound', list_type: 'block', entry: '203.0.113.0/24' } },
    });
    expect(entry).toMatchObject({ entry: '203.0.113.0/24', kind: 'ip' });
  });

  it('refuses two credentials at once', () => {
    // The types refuse it too; this is the check for a caller without them.
    expect(() => createMailroomClient({ baseUrl: url, apiKey: acme.apiKey, session: 'mrs_x' } as never)).toThrow(/one credential/);
  });

  it("runs the README's example as written: the inbox, then a send", async () => {
    const tsx = join(ROOT, 'node_modules/tsx/dist/cli.mjs');
    // In the project directory, `mailroom/sdk` is the package itself (its exports, the built dist/sdk).
    const { stdout } = await run(process.execPath, [tsx, '--input-type=module', '-e', readmeExample()], {
      cwd: ROOT,
      env: { ...process.env, MAILROOM_SERVER: url, API_KEY: acme.apiKey },
    });
    const lines = stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^msg_\w+ alice@sender\.test Order 1234 has not arrived$/);
    expect(lines.at(-1)).toMatch(/^msg_\w+ queued$/);
  });
});
