import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_TEXT_BYTES } from '../src/modules/messages/received-event.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, memberSession, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';
import { startReceiver, type WebhookReceiver } from './helpers/webhook-receiver.js';
import { startWorker, webhookApi } from './helpers/webhooks.js';
import { recordEvents, type RecordedEvents } from './helpers/world.js';

/**
 * A `message.received` event carries the text body (at most 64 KiB of UTF-8, never a character cut),
 * whether it was cut, and each attachment's metadata with the API-key path that downloads it. Mail arrives over real
 * SMTP; the event is read as a webhook receiver gets it.
 */

interface ReceivedData {
  message_id: string;
  subject: string;
  text: string | null;
  truncated: boolean;
  attachments: Array<{ attachment_id: string; filename: string; content_type: string; size: number; inline: boolean; content_id: string | null; download_path: string }>;
}

describe(`message.received carries the body and the attachments (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  /** Events the service emits, recorded through its events service. */
  let recorded: RecordedEvents;
  let worker: ReturnType<typeof startWorker>;
  let receiver: WebhookReceiver;
  let tenant: Tenant;

  /** Send over SMTP and return the event's data as the webhook receiver got it. */
  async function receive(message: Parameters<MailHarness['send']>[0]): Promise<ReceivedData> {
    const seen = receiver.received.length;
    await h.send({ from: 'alice@sender.test', to: 'desk@mailroom.localhost', ...message });
    const requests = await receiver.waitFor(seen + 1);
    const event = JSON.parse(requests[seen]!.body) as { event_type: string; data: ReceivedData };
    expect(event.event_type).toBe('message.received');
    return event.data;
  }

  beforeAll(async () => {
    h = await startMailHarness({ MAILROOM_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' });
    recorded = recordEvents(h.services);
    h.clock.set(Date.now());
    worker = startWorker(h, 20);
    receiver = await startReceiver();
    tenant = await createTenant(h, 'Received');
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes?address=desk@mailroom.localhost', headers: bearer(tenant.apiKey) })).statusCode).toBe(201);
    const api = webhookApi(h, (await memberSession(h, tenant.workspaceId, 'member')).token);
    await api.add({ url: `${receiver.url}/received`, event_types: ['message.received'] });
  });
  afterAll(async () => {
    await worker?.close();
    await receiver?.close();
    await h.services.webhooks.close();
    await h.close();
  });

  it('cuts a long text body at 64 KiB of UTF-8 on a character boundary, and lists downloadable attachments', async () => {
    // 1 + 2×n bytes: the limit falls inside an "é", which is left out whole.
    const text = `a${'é'.repeat(40_000)}\nthe end`;
    const report = randomBytes(20_000);
    const logo = randomBytes(3000);
    const data = await receive({
      subject: 'Long one',
      text,
      attachments: [
        { filename: 'report.bin', content: report, contentType: 'application/octet-stream' },
        { filename: 'logo.png', content: logo, contentType: 'image/png', cid: 'logo@sender.test', contentDisposition: 'inline' },
      ],
    });
    expect(data.truncated).toBe(true);
    expect(data.text).toBe(`a${'é'.repeat(Math.floor((EVENT_TEXT_BYTES - 1) / 2))}`);
    expect(Buffer.byteLength(data.text!, 'utf8')).toBe(EVENT_TEXT_BYTES - 1);
    expect(text.startsWith(data.text!)).toBe(true);

    expect(data.attachments).toHaveLength(2);
    const byName = new Map(data.attachments.map((a) => [a.filename, a]));
    expect(byName.get('report.bin')).toMatchObject({ content_type: 'application/octet-stream', size: report.length, inline: false });
    expect(byName.get('logo.png')).toMatchObject({ content_type: 'image/png', size: logo.length, inline: true, content_id: 'logo@sender.test' });
    for (const [attachment, bytes] of [[byName.get('report.bin')!, report], [byName.get('logo.png')!, logo]] as const) {
      expect(attachment.download_path).toBe(`/messages/${data.message_id}/attachments/${attachment.attachment_id}`);
      const download = await h.app.inject({ method: 'GET', url: attachment.download_path, headers: bearer(tenant.apiKey) });
      expect(download.statusCode).toBe(200);
      expect(download.rawPayload.equals(bytes)).toBe(true);
      // The path is authenticated: no credential, no bytes.
      expect((await h.app.inject({ method: 'GET', url: attachment.download_path })).statusCode).toBe(401);
    }
    // The event stays bounded: 64 KiB of text and the list, not the 80 KB body.
    const stored = recorded.payloads('message.received').filter((payload) => (JSON.parse(payload) as { workspace_id: string }).workspace_id === tenant.workspaceId);
    expect(Math.max(...stored.map((payload) => Buffer.byteLength(payload)))).toBeLessThan(EVENT_TEXT_BYTES + 8 * 1024);
  });

  it('carries a short body whole (truncated: false) and no attachments', async () => {
    const data = await receive({ subject: 'Short one', text: 'Short and sweet: ünïcode ✓ and 😀.' });
    expect(data).toMatchObject({ subject: 'Short one', truncated: false, attachments: [] });
    expect(data.text!.trimEnd()).toBe('Short and sweet: ünïcode ✓ and 😀.');
    // The very text the message API shows.
    const message = await h.app.inject({ method: 'GET', url: `/messages/${data.message_id}`, headers: bearer(tenant.apiKey) });
    expect(data.text).toBe(message.json<{ text: string }>().text);
  });

  it('gives the text of the HTML body when the message has no text part', async () => {
    const data = await receive({ subject: 'HTML only', html: '<html><body><p>Hello <b>there</b> &amp; welcome</p><style>p{}</style></body></html>' });
    expect(data.truncated).toBe(false);
    expect(data.text!.replace(/\s+/g, ' ').trim()).toBe('Hello there & welcome');
  });
});
