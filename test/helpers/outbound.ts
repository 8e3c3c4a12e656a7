import { beforeAll, expect } from 'vitest';
import { createWorker, type Worker } from '../../src/jobs/worker.js';
import { createLogger } from '../../src/lib/logger.js';
import { bearer, createTenant, memberSession, session, type Tenant } from './harness.js';
import { startMailHarness, type MailHarness } from './mail.js';
import { closeAfterTest, mailWorld, type MailWorld, type WorldOptions } from './world.js';

/** A message as `GET /app/api/sent` shows it. */
export interface SentItem {
  message_id: string;
  status: string;
  last_error: string | null;
  recipients: Array<{ address: string; status: string; response: string | null }>;
  attempts: Array<{ outcome: string; response: string; mx?: string | null; tls?: { version: string; cipher: string; verified: boolean } | null; mta_sts?: string | null }>;
}

export interface Sender {
  h: MailHarness;
  /** Send from newsletter@mailroom.localhost to `to`; resolves with the sent view once `until` holds (default: settled). */
  sendAndWait(to: string, until?: (item: SentItem) => boolean): Promise<SentItem>;
  close(): Promise<void>;
}

const settled = (item: SentItem) => !['queued', 'processing'].includes(item.status);
const FROM = 'newsletter@mailroom.localhost';

/** Send as `apiKey` and read the sent list with a member's session `token` until `until` holds. */
function sendAndWaitAs(h: MailHarness, apiKey: string, token: string): Sender['sendAndWait'] {
  return async (to, until = settled) => {
    const res = await h.app.inject({ method: 'POST', url: '/send', headers: bearer(apiKey), payload: { from_mailbox: FROM, to, subject: 'Hi', body: 'Hello' } });
    expect(res.statusCode, res.body).toBe(202);
    const id = res.json<{ message_id: string }>().message_id;
    const deadline = Date.now() + 10_000;
    for (;;) {
      const sent = await h.app.inject({ method: 'GET', url: '/app/api/sent', headers: session(token) });
      const item = sent.json<{ messages: SentItem[] }>().messages.find((m) => m.message_id === id);
      if (item && until(item)) return item;
      if (Date.now() > deadline) throw new Error(`message ${id} did not get there: ${JSON.stringify(item)}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };
}

/** A mail world that sends for one workspace (from newsletter@mailroom.localhost), for a describe block. */
export function senderWorld(options: WorldOptions = {}): { world: MailWorld; sendAndWait: Sender['sendAndWait'] } {
  const world = mailWorld(options);
  let send: Sender['sendAndWait'] | undefined;
  beforeAll(async () => {
    const tenant = await world.tenant('Sender', [FROM]);
    send = sendAndWaitAs(world.h, tenant.apiKey, await world.member(tenant, 'member'));
  });
  return {
    world,
    sendAndWait: (to, until) => {
      if (!send) throw new Error('the sender world is not made yet');
      return send(to, until);
    },
  };
}

/**
 * A service (mail harness plus a running worker) that sends for one workspace, started inside a test whose settings
 * are its own (a relay of that test); it is closed when the test finishes.
 */
export async function startSender(env: Record<string, string>): Promise<Sender> {
  const h = await startMailHarness(env);
  const tenant: Tenant = await createTenant(h, 'Sender');
  await h.app.inject({ method: 'POST', url: `/mailboxes?address=${FROM}`, headers: bearer(tenant.apiKey) });
  const token = (await memberSession(h, tenant.workspaceId, 'member')).token;
  const worker: Worker = createWorker(h.services.handlers, { queue: h.services.queue, logger: createLogger('silent'), leaseMs: h.config.leaseMs, pollMs: 20 });
  worker.start();
  let closed: Promise<void> | undefined;
  const stop = async () => {
    await worker.stop(2000);
    await h.close();
  };
  // A test may close it early (to stop its worker); the close when the test finishes is then a no-op.
  return closeAfterTest({ h, sendAndWait: sendAndWaitAs(h, tenant.apiKey, token), close: () => (closed ??= stop()) });
}
