import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MessageService, VersionedMessagePage } from '../src/modules/messages/message.service.js';
import type { TenantContext } from '../src/modules/tenancy/tenancy.types.js';
import { createPageCache, pageKey, sendMessagePage } from '../src/transports/http/page-cache.js';
import { MessagePage, SHARED_SCHEMAS } from '../src/transports/http/schemas.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';

interface Page {
  messages: Array<{ message_id: string; subject: string; read: boolean; labels: string[] }>;
  total: number;
}

describe('page cache (least recently used, by bytes)', () => {
  const body = (n: number) => Buffer.alloc(n, 0x20);

  it('keeps pages within its budget, dropping the least recently used first', () => {
    const cache = createPageCache(100);
    cache.set('a', 'v1', body(40));
    cache.set('b', 'v1', body(40));
    expect(cache.get('a')?.version).toBe('v1'); // a is now the most recently used
    cache.set('c', 'v1', body(40)); // 120 > 100: b goes
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')?.body.length).toBe(40);
    expect(cache.get('c')?.body.length).toBe(40);
    expect(cache.bytes).toBe(80);
  });

  it('replaces a page kept under the same key, and keeps nothing larger than its budget', () => {
    const cache = createPageCache(100);
    cache.set('a', 'v1', body(60));
    cache.set('a', 'v2', body(30));
    expect(cache.get('a')).toMatchObject({ version: 'v2' });
    expect(cache.bytes).toBe(30);
    cache.set('a', 'v3', body(101));
    expect(cache.get('a')).toBeUndefined();
    expect(cache.bytes).toBe(0);
    const off = createPageCache(0);
    off.set('a', 'v1', body(1));
    expect(off.get('a')).toBeUndefined();
  });

  it('keys pages by every parameter that decides their answer', () => {
    const q = { mailbox: 'a@x.test', folder: 'inbox', limit: 50, offset: 0 };
    const keys = [
      pageKey('/inbox', 'ws_1', q),
      pageKey('/inbox', 'ws_2', q),
      pageKey('/inbox', 'ws_1', { ...q, mailbox: 'b@x.test' }),
      pageKey('/inbox', 'ws_1', { ...q, folder: undefined }),
      pageKey('/inbox', 'ws_1', { ...q, unread: true }),
      pageKey('/inbox', 'ws_1', { ...q, unread: false }),
      pageKey('/inbox', 'ws_1', { ...q, limit: 5 }),
      pageKey('/inbox', 'ws_1', { ...q, offset: 5 }),
      pageKey('/inbox', 'ws_1', { ...q, label: 'work' }),
      pageKey('/inbox', 'ws_1', { ...q, thread_id: 'thr_1' }),
      pageKey('/app/api/messages', 'ws_1', q),
    ];
    expect(new Set(keys).size).toBe(keys.length);
  });
});

describe('answering pages through the cache (HTTP layer)', () => {
  it('reads only the version while it stands, keeps no page without one, and keeps the bytes the serializer wrote', async () => {
    let version: string | undefined = 'v1';
    const calls = { list: 0, pageVersion: 0 };
    const service: Pick<MessageService, 'list' | 'pageVersion'> = {
      list: async (_tenant, query): Promise<VersionedMessagePage> => {
        calls.list++;
        return { messages: [], total: calls.list, limit: query.limit, offset: query.offset, version };
      },
      pageVersion: async () => {
        calls.pageVersion++;
        return version;
      },
    };
    const pages = createPageCache(1024);
    const tenant: TenantContext = { workspaceId: 'ws_1', role: 'api_key', userId: null };
    const app = Fastify();
    for (const schema of SHARED_SCHEMAS) app.addSchema(schema);
    app.get('/page', { schema: { response: { 200: MessagePage } } }, (_request, reply) => sendMessagePage(reply, pages, service, tenant, { mailbox: 'a@x.test', limit: 50, offset: 0 }));
    const get = async () => {
      const res = await app.inject({ method: 'GET', url: '/page' });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      return res.body;
    };
    try {
      // Written by the route's schema (no `version`), and kept as written.
      expect(await get()).toBe('{"messages":[],"total":1,"limit":50,"offset":0}');
      expect(pages.bytes).toBe(47);
      expect(await get()).toBe('{"messages":[],"total":1,"limit":50,"offset":0}');
      expect(calls).toEqual({ list: 1, pageVersion: 1 });
      // A new version: read again and kept under it.
      version = 'v2';
      expect(await get()).toBe('{"messages":[],"total":2,"limit":50,"offset":0}');
      expect(calls).toEqual({ list: 2, pageVersion: 2 });
      // No version (a delivery on its way): answered, never kept, so read every time.
      version = undefined;
      expect(await get()).toBe('{"messages":[],"total":3,"limit":50,"offset":0}');
      expect(await get()).toBe('{"messages":[],"total":4,"limit":50,"offset":0}');
      expect(calls).toEqual({ list: 4, pageVersion: 4 });
      expect(pages.get(pageKey('/page', 'ws_1', { mailbox: 'a@x.test', limit: 50, offset: 0 }))?.version).toBe('v2');
    } finally {
      await app.close();
    }
  });
});

for (const cacheMb of ['32', '0']) {
  const cached = cacheMb !== '0';
  describe(`pages of a mailbox with MAILROOM_PAGE_CACHE_MB=${cacheMb} (${TEST_DIALECT})`, () => {
    let h: MailHarness;
    let acme: Tenant;
    const BOX = 'cache@mailroom.localhost';

    const page = async (query = ''): Promise<Page> => {
      const res = await h.app.inject({ method: 'GET', url: `/inbox?mailbox=${BOX}${query}`, headers: bearer(acme.apiKey) });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      return res.json<Page>();
    };
    const deliver = async (subject: string): Promise<string> => {
      h.clock.advance(1000);
      const info = await h.send({ from: 'ann@corp.test', to: BOX, subject, text: subject });
      return /Stored as (msg_\w+)/.exec(info.response)![1]!;
    };
    /** Change a stored message behind the service's back: no folder's modseq moves. */
    const rewriteSubject = async (id: string, subject: string) =>
      h.services.database.db.updateTable('messages').set({ subject }).where('workspace_id', '=', acme.workspaceId).where('id', '=', id).execute();

    beforeAll(async () => {
      h = await startMailHarness({ MAILROOM_PAGE_CACHE_MB: cacheMb });
      acme = await createTenant(h, 'Acme');
      expect((await h.app.inject({ method: 'POST', url: `/mailboxes?address=${BOX}`, headers: bearer(acme.apiKey) })).statusCode).toBe(201);
    });
    afterAll(async () => h.close());

    it(cached ? 'answers a page again while no message of its folders changed, and anew after any change' : 'reads every page anew', async () => {
      const inject = (url: string) => h.app.inject({ method: 'POST', url, headers: bearer(acme.apiKey) });
      const subjects = async (query = '') => (await page(query)).messages.map((m) => m.subject);
      const first = await deliver('First');
      expect(await subjects()).toEqual(['First']);
      // A kept answer is the bytes the route's serializer wrote for the page, sent again as they were.
      const answer = async () => h.app.inject({ method: 'GET', url: `/inbox?mailbox=${BOX}`, headers: bearer(acme.apiKey) });
      const [written, again] = [await answer(), await answer()];
      expect(again.rawPayload.equals(written.rawPayload)).toBe(true);
      expect(again.headers['content-length']).toBe(written.headers['content-length']);

      // Only a change that raises no modseq shows whether a page was read again.
      await rewriteSubject(first, 'Rewritten');
      expect(await subjects()).toEqual([cached ? 'First' : 'Rewritten']);
      // New mail in the folder is seen at once.
      const second = await deliver('Second');
      expect(await subjects()).toEqual(['Second', 'Rewritten']);
      expect((await inject(`/messages/${second}/move?folder=archive`)).statusCode).toBe(200);
      expect(await subjects()).toEqual(['Rewritten']);
      expect(await subjects('&folder=archive')).toEqual(['Second']);

      // A change in another folder leaves this folder's pages alone.
      await rewriteSubject(first, 'Rewritten twice');
      expect((await inject(`/messages/${second}/read`)).statusCode).toBe(200);
      expect((await page('&folder=archive')).messages).toMatchObject([{ subject: 'Second', read: true }]);
      expect(await subjects()).toEqual([cached ? 'Rewritten' : 'Rewritten twice']);

      // A change through the service raises the folder's modseq: the page is read again.
      expect((await inject(`/messages/${first}/read`)).statusCode).toBe(200);
      expect((await page()).messages).toMatchObject([{ message_id: first, subject: 'Rewritten twice', read: true }]);
      const third = await deliver('Third');
      expect((await page()).messages.map((m) => m.message_id)).toEqual([third, first]);
      expect((await page()).total).toBe(2);
    });

    it('never answers with the page of a mailbox that was deleted and created again at its address', async () => {
      const address = 'again@mailroom.localhost';
      const inject = (method: 'GET' | 'POST' | 'DELETE', url: string) => h.app.inject({ method, url, headers: bearer(acme.apiKey) });
      const stored = async (subject: string) => {
        h.clock.advance(1000);
        const info = await h.send({ from: 'ann@corp.test', to: address, subject, text: subject });
        return /Stored as (msg_\w+)/.exec(info.response)![1]!;
      };
      expect((await inject('POST', `/mailboxes?address=${address}`)).statusCode).toBe(201);
      await stored('Old mailbox');
      expect((await inject('GET', `/inbox?mailbox=${address}`)).json<Page>().messages.map((m) => m.subject)).toEqual(['Old mailbox']);
      expect((await inject('DELETE', `/mailboxes/${address}`)).statusCode).toBe(200);
      expect((await inject('GET', `/inbox?mailbox=${address}`)).statusCode).toBe(404);
      expect((await inject('POST', `/mailboxes?address=${address}`)).statusCode).toBe(201);
      // The new mailbox's inbox reaches the same modseq (one change) as the old one had.
      const fresh = await stored('New mailbox');
      expect((await inject('GET', `/inbox?mailbox=${address}`)).json<Page>().messages).toMatchObject([{ message_id: fresh, subject: 'New mailbox' }]);
    });
  });
}
