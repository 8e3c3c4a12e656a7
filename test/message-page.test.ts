import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/lib/logger.js';
import { createHttpApp } from '../src/main.js';
import { asWork } from '../src/db/tables.js';
import { systemClock } from '../src/lib/clock.js';
import { createReceivedMailStore } from '../src/modules/mail/mail.store.js';
import type { MessageService } from '../src/modules/messages/message.service.js';
import { toMessageListView } from '../src/modules/messages/message.views.js';
import { MessageListItem } from '../src/transports/http/schemas.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, login, session, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';

/**
 * A message's list view has one writer: `toMessageListView` makes it, the route's response schema writes it
 * (kept pages are the bytes it wrote). Every message of every page, answered or kept, must be exactly the list
 * view of its row: the whole corpus of real-world shapes (names and subjects that need escaping, attachments
 * with and without content ids, no date, no Message-ID), read and unread, labelled, moved; and whatever the
 * schema does not name is never written.
 */
describe(`message pages written by the response schema from the list views (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let acme: Tenant;
  let sessionToken: string;
  const MAILBOX = 'pages@mailroom.localhost';
  const FIXTURES = new URL('./fixtures/eml/', import.meta.url);
  const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.eml'));
  // The mail store's own read of a message row, which the pages' views must match.
  const mail = () => createReceivedMailStore({ clock: systemClock, dialect: h.services.database.dialect });

  beforeAll(async () => {
    h = await startMailHarness();
    acme = await createTenant(h);
    sessionToken = await login(h, acme.ownerEmail, acme.password);
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(acme.apiKey), payload: { address: MAILBOX } })).statusCode).toBe(201);
    for (const file of files) await h.sendRaw(readFileSync(new URL(file, FIXTURES)), { from: 'sender@example.net', to: [MAILBOX] });
  });
  afterAll(async () => h.close());

  /** The page's body as text and parsed, with each message checked against the list view of its stored row. */
  async function checkPage(url: string, headers: Record<string, string>): Promise<{ ids: string[]; total: number }> {
    const res = await h.app.inject({ method: 'GET', url, headers });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    const page = res.json<{ messages: Array<{ message_id: string }>; total: number; limit: number; offset: number }>();
    expect(Object.keys(page).sort()).toEqual(['limit', 'messages', 'offset', 'total']);
    for (const message of page.messages) {
      const row = await mail().findMessage(asWork(h.services.database.db), acme.workspaceId, message.message_id);
      expect(row, message.message_id).toBeDefined();
      // JSON round trip of the view: what the serializer would have written.
      expect(message).toEqual(JSON.parse(JSON.stringify(toMessageListView(row!))));
    }
    return { ids: page.messages.map((m) => m.message_id), total: page.total };
  }

  it('writes every corpus message exactly as its list view, on both surfaces', async () => {
    const all = await checkPage(`/inbox?mailbox=${MAILBOX}&limit=500`, bearer(acme.apiKey));
    expect(all.ids).toHaveLength(files.length);
    expect(all.total).toBe(files.length);
    const viaSession = await checkPage(`/app/api/messages?mailbox=${MAILBOX}&limit=500`, session(sessionToken));
    expect(viaSession.ids).toEqual(all.ids);
  });

  it('follows reads, labels and moves, and pages with every filter', async () => {
    const { ids } = await checkPage(`/inbox?mailbox=${MAILBOX}&limit=500`, bearer(acme.apiKey));
    const [first, second, third] = ids as [string, string, string];
    expect((await h.app.inject({ method: 'POST', url: `/messages/${first}/read`, headers: bearer(acme.apiKey) })).statusCode).toBe(200);
    expect((await h.app.inject({ method: 'POST', url: `/app/api/messages/${second}/labels`, headers: session(sessionToken), payload: { add: ['work', 'x.y:z'] } })).statusCode).toBe(200);
    expect((await h.app.inject({ method: 'POST', url: `/messages/${third}/move?folder=archive`, headers: bearer(acme.apiKey) })).statusCode).toBe(200);

    const inbox = await checkPage(`/inbox?mailbox=${MAILBOX}&limit=7&offset=1`, bearer(acme.apiKey));
    expect(inbox.ids).toEqual(ids.filter((id) => id !== third).slice(1, 8));
    expect((await checkPage(`/inbox?mailbox=${MAILBOX}&folder=archive`, bearer(acme.apiKey))).ids).toEqual([third]);
    expect((await checkPage(`/app/api/messages?label=work`, session(sessionToken))).ids).toEqual([second]);
    const unread = await checkPage(`/app/api/messages?mailbox=${MAILBOX}&unread=true&limit=500`, session(sessionToken));
    expect(unread.ids).not.toContain(first);
    expect(unread.total).toBe(files.length - 1);
    const read = await checkPage(`/app/api/messages?unread=false`, session(sessionToken));
    expect(read.ids).toEqual([first]);
    const threadId = (await mail().findMessage(asWork(h.services.database.db), acme.workspaceId, second))!.thread_id;
    expect((await checkPage(`/app/api/messages?thread_id=${threadId}`, session(sessionToken))).ids).toContain(second);
    // Past the end: an empty page, still well-formed.
    expect(await checkPage(`/inbox?mailbox=${MAILBOX}&offset=10000`, bearer(acme.apiKey))).toEqual({ ids: [], total: files.length - 1 });
  });

  it('never writes a field the response schema does not name, answered or kept', async () => {
    // A service that hands the routes more than a view holds: the serializer, not the service, is the guard.
    const messages = h.services.messages;
    const leaky: MessageService = {
      ...messages,
      list: async (tenant, query) => {
        const page = await messages.list(tenant, query);
        return Object.assign(page, { secret: 'leak-page-q9zx', messages: page.messages.map((m) => ({ ...m, envelope_json: 'leak-message-q9zx' })) });
      },
    };
    const app = await createHttpApp(h.config, { ...h.services, messages: leaky }, createLogger('silent'));
    try {
      const named = Object.keys(MessageListItem.properties);
      for (const [url, headers] of [
        [`/inbox?mailbox=${MAILBOX}&limit=500`, bearer(acme.apiKey)],
        [`/app/api/messages?mailbox=${MAILBOX}&limit=500`, session(sessionToken)],
        [`/app/api/messages?label=work`, session(sessionToken)],
      ] as const) {
        // Twice: the second answer of a single mailbox's page is the kept one.
        for (let i = 0; i < 2; i++) {
          const res = await app.inject({ method: 'GET', url, headers });
          expect(res.statusCode, res.body).toBe(200);
          expect(res.body).not.toMatch(/q9zx|"version"|envelope_json/);
          const page = res.json<{ messages: Array<Record<string, unknown>> }>();
          expect(Object.keys(page).sort(), url).toEqual(['limit', 'messages', 'offset', 'total']);
          expect(page.messages.length, url).toBeGreaterThan(0);
          for (const message of page.messages) expect(named, url).toEqual(expect.arrayContaining(Object.keys(message)));
        }
      }
    } finally {
      await app.close();
    }
  });
});
