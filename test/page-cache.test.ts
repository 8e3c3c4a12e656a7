import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPageCache, pageKey } from '../src/modules/messages/page-cache.js';
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

  it('keys pages by every parameter that decides their rows', () => {
    const keys = [
      pageKey('ws_1', 'a@x.test', 'inbox', undefined, 50, 0),
      pageKey('ws_2', 'a@x.test', 'inbox', undefined, 50, 0),
      pageKey('ws_1', 'b@x.test', 'inbox', undefined, 50, 0),
      pageKey('ws_1', 'a@x.test', undefined, undefined, 50, 0),
      pageKey('ws_1', 'a@x.test', 'inbox', true, 50, 0),
      pageKey('ws_1', 'a@x.test', 'inbox', false, 50, 0),
      pageKey('ws_1', 'a@x.test', 'inbox', undefined, 5, 0),
      pageKey('ws_1', 'a@x.test', 'inbox', undefined, 50, 5),
    ];
    expect(new Set(keys).size).toBe(keys.length);
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
