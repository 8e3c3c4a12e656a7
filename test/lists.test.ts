import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, errorOf, login, session, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';
import { recordEvents, type RecordedEvents } from './helpers/world.js';

interface EntryBody {
  direction: string;
  list_type: string;
  entry: string;
  kind: string;
  reason: string | null;
  created_at: string;
}
interface EntryPage {
  entries: EntryBody[];
  total: number;
  limit: number;
  offset: number;
}
interface RejectedEvent {
  event_type: string;
  workspace_id: string;
  data: { mailbox: string; from: string; recipient: string; reason: string };
}

/** A workspace of its own (so its lists start empty), its owner's session and one mailbox. */
interface Scene {
  tenant: Tenant;
  token: string;
  mailbox: string;
}

describe(`allow and block lists (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  /** Events the service emits, recorded through its events service. */
  let recorded: RecordedEvents;
  let acme: Tenant;
  let acmeToken: string;
  let otherToken: string;
  let scenes = 0;

  const call = (method: 'GET' | 'POST' | 'DELETE', url: string, token: string | null, payload?: object): Promise<LightMyRequestResponse> =>
    h.app.inject({ method, url: `/app/api${url}`, headers: token === null ? {} : session(token), ...(payload ? { payload } : {}) });

  const add = async (token: string, list: string, entry: string, reason?: string): Promise<EntryBody> => {
    const res = await call('POST', `/lists/${list}`, token, reason === undefined ? { entry } : { entry, reason });
    expect(res.statusCode, res.body).toBe(201);
    return res.json<EntryBody>();
  };

  const scene = async (): Promise<Scene> => {
    scenes += 1;
    const tenant = await createTenant(h, `Scene ${scenes}`);
    const mailbox = `scene${scenes}@mailroom.localhost`;
    expect((await h.app.inject({ method: 'POST', url: `/mailboxes?address=${mailbox}`, headers: bearer(tenant.apiKey) })).statusCode).toBe(201);
    return { tenant, token: await login(h, tenant.ownerEmail, tenant.password), mailbox };
  };

  /** Deliver over real SMTP; true when the recipient was accepted and the mail stored, false on 550 5.7.1. */
  const deliver = async (from: string, to: string): Promise<boolean> => {
    try {
      const info = await h.send({ from, to, subject: `from ${from}`, text: 'hello' });
      expect(info.accepted).toEqual([to]);
      return true;
    } catch (err) {
      expect(err).toMatchObject({ responseCode: 550, response: expect.stringMatching(/^550 5\.7\.1 /) as unknown });
      return false;
    }
  };

  const messageCount = async (s: Scene): Promise<number> => {
    const res = await h.app.inject({ method: 'GET', url: `/mailboxes/${s.mailbox}`, headers: bearer(s.tenant.apiKey) });
    expect(res.statusCode).toBe(200);
    return res.json<{ message_count: number }>().message_count;
  };

  const rejections = async (workspaceId: string): Promise<RejectedEvent[]> =>
    Promise.resolve(recorded.events('message.rejected').filter((e) => e.workspace_id === workspaceId) as unknown as RejectedEvent[]);

  beforeAll(async () => {
    h = await startMailHarness();
    recorded = recordEvents(h.services);
    acme = await createTenant(h, 'Acme');
    const other = await createTenant(h, 'Other');
    acmeToken = await login(h, acme.ownerEmail, acme.password);
    otherToken = await login(h, other.ownerEmail, other.password);
  });
  afterAll(async () => h.close());

  describe('session CRUD', () => {
    it('creates, gets, lists and deletes an entry', async () => {
      const created = await call('POST', '/lists/inbound/block', acmeToken, { entry: 'Spammer@Bad.Example', reason: 'sends junk' });
      expect(created.statusCode).toBe(201);
      expect(created.json()).toEqual({
        direction: 'inbound',
        list_type: 'block',
        entry: 'spammer@bad.example',
        kind: 'address',
        reason: 'sends junk',
        created_at: new Date(h.clock.now()).toISOString(),
      });

      const got = await call('GET', '/lists/inbound/block/SPAMMER@bad.example', acmeToken);
      expect(got.statusCode).toBe(200);
      expect(got.json()).toEqual(created.json());

      const listed = await call('GET', '/lists/inbound/block', acmeToken);
      expect(listed.statusCode).toBe(200);
      expect(listed.json()).toEqual({ entries: [created.json()], total: 1, limit: 50, offset: 0 });
      // The other lists of the workspace are separate.
      expect((await call('GET', '/lists/inbound/allow', acmeToken)).json<EntryPage>().total).toBe(0);
      expect((await call('GET', '/lists/outbound/block', acmeToken)).json<EntryPage>().total).toBe(0);

      const deleted = await call('DELETE', '/lists/inbound/block/spammer@bad.example', acmeToken);
      expect(deleted.statusCode).toBe(200);
      expect(deleted.json()).toMatchObject({ ok: true });
      expect(errorOf(await call('GET', '/lists/inbound/block/spammer@bad.example', acmeToken))).toMatchObject({ status: 404, error: 'entry_not_found' });
      expect(errorOf(await call('DELETE', '/lists/inbound/block/spammer@bad.example', acmeToken))).toMatchObject({ status: 404, error: 'entry_not_found' });
      expect((await call('GET', '/lists/inbound/block', acmeToken)).json()).toEqual({ entries: [], total: 0, limit: 50, offset: 0 });
    });

    it('stores a reason as null when none is given, and works on outbound lists', async () => {
      const entry = await add(acmeToken, 'outbound/allow', 'Partner.Example');
      expect(entry).toEqual({ direction: 'outbound', list_type: 'allow', entry: 'partner.example', kind: 'domain', reason: null, created_at: new Date(h.clock.now()).toISOString() });
      expect((await call('DELETE', '/lists/outbound/allow/partner.example', acmeToken)).statusCode).toBe(200);
    });

    it('pages newest first with limit and offset, pages never overlapping', async () => {
      const added: string[] = [];
      for (let i = 0; i < 5; i += 1) {
        h.clock.advance(1000);
        added.push((await add(acmeToken, 'outbound/block', `page${i}.example`)).entry);
      }
      const newestFirst = [...added].reverse();
      const page = async (query: string) => {
        const res = await call('GET', `/lists/outbound/block${query}`, acmeToken);
        expect(res.statusCode, res.body).toBe(200);
        return res.json<EntryPage>();
      };
      expect(await page('?limit=2')).toMatchObject({ total: 5, limit: 2, offset: 0, entries: newestFirst.slice(0, 2).map((entry) => ({ entry })) });
      expect((await page('?limit=2&offset=2')).entries.map((e) => e.entry)).toEqual(newestFirst.slice(2, 4));
      expect((await page('?limit=2&offset=4')).entries.map((e) => e.entry)).toEqual(newestFirst.slice(4));
      expect(await page('?offset=10')).toEqual({ entries: [], total: 5, limit: 50, offset: 10 });
      expect((await page('?limit=500')).entries.map((e) => e.entry)).toEqual(newestFirst);
      for (const bad of ['limit=0', 'limit=501', 'limit=abc', 'offset=-1', 'other=1']) {
        expect(errorOf(await call('GET', `/lists/outbound/block?${bad}`, acmeToken)), bad).toMatchObject({ status: 400, error: 'invalid_request' });
      }
      for (const entry of added) expect((await call('DELETE', `/lists/outbound/block/${entry}`, acmeToken)).statusCode).toBe(200);
    });

    it('takes CIDRs and IPv6 entries with slashes, raw or percent-encoded in the path', async () => {
      const v4 = await add(acmeToken, 'inbound/block', '203.0.113.77/24', 'bad network');
      // Host bits are cleared: the entry is the network.
      expect(v4).toMatchObject({ entry: '203.0.113.0/24', kind: 'ip', reason: 'bad network' });
      const v6 = await add(acmeToken, 'inbound/block', '2001:DB8:ffff::1/32');
      expect(v6).toMatchObject({ entry: '2001:db8::/32', kind: 'ip' });
      const single = await add(acmeToken, 'inbound/allow', '198.51.100.7');
      expect(single).toMatchObject({ entry: '198.51.100.7', kind: 'ip' });

      for (const path of ['203.0.113.0/24', '203.0.113.0%2F24', '203.0.113.0%2f24']) {
        const res = await call('GET', `/lists/inbound/block/${path}`, acmeToken);
        expect(res.statusCode, path).toBe(200);
        expect(res.json()).toEqual(v4);
      }
      for (const path of ['2001:db8::/32', encodeURIComponent('2001:db8::/32'), '2001:DB8::/32']) {
        const res = await call('GET', `/lists/inbound/block/${path}`, acmeToken);
        expect(res.statusCode, path).toBe(200);
        expect(res.json()).toEqual(v6);
      }
      // A prefix of another length is another entry.
      expect(errorOf(await call('GET', '/lists/inbound/block/203.0.113.0/25', acmeToken))).toMatchObject({ status: 404, error: 'entry_not_found' });
      // The same network written with host bits is a duplicate.
      expect(errorOf(await call('POST', '/lists/inbound/block', acmeToken, { entry: '203.0.113.200/24' }))).toMatchObject({ status: 409, error: 'entry_exists' });

      expect((await call('DELETE', '/lists/inbound/block/203.0.113.0%2F24', acmeToken)).statusCode).toBe(200);
      expect((await call('DELETE', '/lists/inbound/block/2001:db8::/32', acmeToken)).statusCode).toBe(200);
      expect((await call('DELETE', '/lists/inbound/allow/198.51.100.7', acmeToken)).statusCode).toBe(200);
      for (const path of ['inbound/block/203.0.113.0/24', 'inbound/block/2001:db8::/32', 'inbound/allow/198.51.100.7']) {
        expect((await call('GET', `/lists/${path}`, acmeToken)).statusCode, path).toBe(404);
      }
    });

    it('normalises entries and refuses duplicates with 409', async () => {
      expect(await add(acmeToken, 'inbound/block', '  Mixed.Case@Example.COM ')).toMatchObject({ entry: 'mixed.case@example.com', kind: 'address' });
      expect(await add(acmeToken, 'inbound/block', 'Sub.Example.ORG')).toMatchObject({ entry: 'sub.example.org', kind: 'domain' });
      for (const entry of ['mixed.case@example.com', 'MIXED.CASE@EXAMPLE.COM', 'sub.example.org']) {
        expect(errorOf(await call('POST', '/lists/inbound/block', acmeToken, { entry })), entry).toMatchObject({ status: 409, error: 'entry_exists' });
      }
      // The same entry on another list of the workspace is no duplicate.
      expect(await add(acmeToken, 'inbound/allow', 'mixed.case@example.com')).toMatchObject({ list_type: 'allow' });
      expect(await add(acmeToken, 'outbound/block', 'mixed.case@example.com')).toMatchObject({ direction: 'outbound' });
      expect((await call('GET', '/lists/inbound/block', acmeToken)).json<EntryPage>().total).toBe(2);
      for (const path of ['inbound/block/mixed.case@example.com', 'inbound/block/sub.example.org', 'inbound/allow/mixed.case@example.com', 'outbound/block/mixed.case@example.com']) {
        expect((await call('DELETE', `/lists/${path}`, acmeToken)).statusCode, path).toBe(200);
      }
    });

    it('validates direction, list type, entry and body with 400', async () => {
      const cases: Array<[string, string, object | undefined, string]> = [
        ['POST', '/lists/sideways/block', { entry: 'a@b.example' }, 'invalid_direction'],
        ['GET', '/lists/sideways/block', undefined, 'invalid_direction'],
        ['GET', '/lists/sideways/block/a@b.example', undefined, 'invalid_direction'],
        ['DELETE', '/lists/sideways/block/a@b.example', undefined, 'invalid_direction'],
        ['POST', '/lists/inbound/grey', { entry: 'a@b.example' }, 'invalid_list_type'],
        ['GET', '/lists/inbound/grey', undefined, 'invalid_list_type'],
        ['GET', '/lists/inbound/grey/a@b.example', undefined, 'invalid_list_type'],
        ['DELETE', '/lists/outbound/grey/a@b.example', undefined, 'invalid_list_type'],
        ['POST', '/lists/outbound/block', { entry: '203.0.113.5' }, 'invalid_entry'],
        ['POST', '/lists/outbound/allow', { entry: '203.0.113.0/24' }, 'invalid_entry'],
        ['POST', '/lists/outbound/block', { entry: '2001:db8::/32' }, 'invalid_entry'],
        ['POST', '/lists/inbound/block', { entry: 'not an entry!' }, 'invalid_entry'],
        ['POST', '/lists/inbound/block', { entry: 'a@@b.example' }, 'invalid_entry'],
        ['POST', '/lists/inbound/block', { entry: '203.0.113.0/99' }, 'invalid_entry'],
        ['POST', '/lists/inbound/block', { entry: 'localhost' }, 'invalid_entry'],
        ['POST', '/lists/inbound/block', { entry: '300.1.2.3' }, 'invalid_entry'],
        ['POST', '/lists/inbound/block', { entry: 'a@b.example', colour: 'red' }, 'invalid_request'],
        ['POST', '/lists/inbound/block', {}, 'invalid_request'],
        ['POST', '/lists/inbound/block', { entry: 42 }, 'invalid_request'],
        ['POST', '/lists/inbound/block', { entry: '' }, 'invalid_request'],
        ['POST', '/lists/inbound/block', { entry: 'a@b.example', reason: 'x'.repeat(501) }, 'invalid_request'],
      ];
      for (const [method, url, payload, error] of cases) {
        const res = await call(method as 'GET', url, acmeToken, payload);
        expect(errorOf(res), `${method} ${url} ${JSON.stringify(payload)}`).toMatchObject({ status: 400, error });
      }
      // Nothing of the refused requests was stored.
      for (const list of ['inbound/block', 'inbound/allow', 'outbound/block', 'outbound/allow']) {
        expect((await call('GET', `/lists/${list}`, acmeToken)).json<EntryPage>().total, list).toBe(0);
      }
    });

    it("answers 404 for an absent entry and for another workspace's entry", async () => {
      expect(errorOf(await call('GET', '/lists/inbound/block/never@added.example', acmeToken))).toMatchObject({ status: 404, error: 'entry_not_found' });
      await add(acmeToken, 'inbound/block', 'private@acme.example');
      await add(acmeToken, 'inbound/block', '192.0.2.0/24');
      for (const path of ['private@acme.example', '192.0.2.0/24']) {
        expect(errorOf(await call('GET', `/lists/inbound/block/${path}`, otherToken)), path).toMatchObject({ status: 404, error: 'entry_not_found' });
        expect(errorOf(await call('DELETE', `/lists/inbound/block/${path}`, otherToken)), path).toMatchObject({ status: 404, error: 'entry_not_found' });
      }
      expect((await call('GET', '/lists/inbound/block', otherToken)).json()).toEqual({ entries: [], total: 0, limit: 50, offset: 0 });
      // The other workspace may list the same entry for itself; the owner's entry is untouched.
      expect(await add(otherToken, 'inbound/block', 'private@acme.example')).toMatchObject({ entry: 'private@acme.example' });
      expect((await call('DELETE', '/lists/inbound/block/private@acme.example', otherToken)).statusCode).toBe(200);
      expect((await call('GET', '/lists/inbound/block/private@acme.example', acmeToken)).statusCode).toBe(200);
      expect((await call('DELETE', '/lists/inbound/block/private@acme.example', acmeToken)).statusCode).toBe(200);
      expect((await call('DELETE', '/lists/inbound/block/192.0.2.0/24', acmeToken)).statusCode).toBe(200);
    });

    it('needs a session: 401 without one or with a bad one, and API keys do not reach lists', async () => {
      for (const token of [null, 'mrs_not-a-real-session-token']) {
        for (const [method, url, payload] of [
          ['GET', '/lists/inbound/block', undefined],
          ['POST', '/lists/inbound/block', { entry: 'a@b.example' }],
          ['GET', '/lists/inbound/block/a@b.example', undefined],
          ['DELETE', '/lists/inbound/block/a@b.example', undefined],
        ] as const) {
          const res = await call(method, url, token, payload);
          expect(res.statusCode, `${method} ${url} with ${token}`).toBe(401);
        }
      }
      const withKey = await h.app.inject({ method: 'GET', url: '/app/api/lists/inbound/block', headers: bearer(acme.apiKey) });
      expect(withKey.statusCode).toBe(401);
      expect((await call('GET', '/lists/inbound/block', acmeToken)).json<EntryPage>().total).toBe(0);
    });
  });

  describe('enforcement through real SMTP', () => {
    it('refuses a blocked sender address at RCPT with 550 5.7.1 and emits message.rejected', async () => {
      const s = await scene();
      await add(s.token, 'inbound/block', 'Blocked@Spam.Test', 'abuse');
      expect(await deliver('blocked@spam.test', s.mailbox)).toBe(false);
      // Addresses compare case-insensitively.
      expect(await deliver('BLOCKED@spam.TEST', s.mailbox)).toBe(false);
      expect(await deliver('neighbour@spam.test', s.mailbox)).toBe(true);
      expect(await messageCount(s)).toBe(1);

      const events = await rejections(s.tenant.workspaceId);
      expect(events).toHaveLength(2);
      expect(events[0]).toMatchObject({
        event_type: 'message.rejected',
        workspace_id: s.tenant.workspaceId,
        data: { mailbox: s.mailbox, from: 'blocked@spam.test', recipient: s.mailbox, reason: expect.stringContaining('blocked@spam.test') as unknown },
      });
      expect(events[1]?.data.from.toLowerCase()).toBe('blocked@spam.test');

      // Removing the entry lets the sender through again.
      expect((await call('DELETE', '/lists/inbound/block/blocked@spam.test', s.token)).statusCode).toBe(200);
      expect(await deliver('blocked@spam.test', s.mailbox)).toBe(true);
      expect(await messageCount(s)).toBe(2);
      expect(await rejections(s.tenant.workspaceId)).toHaveLength(2);
    });

    it('refuses a blocked domain and its subdomains, but not a look-alike domain', async () => {
      const s = await scene();
      await add(s.token, 'inbound/block', 'junk.test');
      expect(await deliver('anyone@junk.test', s.mailbox)).toBe(false);
      expect(await deliver('deep@mail.eu.junk.test', s.mailbox)).toBe(false);
      expect(await deliver('someone@notjunk.test', s.mailbox)).toBe(true);
      expect(await deliver('someone@junk.test.example', s.mailbox)).toBe(true);
      expect(await messageCount(s)).toBe(2);
      const events = await rejections(s.tenant.workspaceId);
      expect(events.map((e) => e.data.from)).toEqual(['anyone@junk.test', 'deep@mail.eu.junk.test']);
      for (const e of events) expect(e.data).toMatchObject({ mailbox: s.mailbox, recipient: s.mailbox, reason: expect.stringContaining('junk.test') as unknown });
    });

    it('refuses by connecting IP and by CIDR (the client connects from 127.0.0.1)', async () => {
      const s = await scene();
      const ipCases: Array<[string, boolean]> = [
        ['127.0.0.1', false],
        ['127.0.0.0/8', false],
        ['127.0.0.1/32', false],
        ['::ffff:127.0.0.1', false],
        ['10.0.0.0/8', true],
        ['127.0.0.2', true],
        ['::1', true],
        ['2001:db8::/32', true],
      ];
      for (const [entry, passes] of ipCases) {
        const added = await add(s.token, 'inbound/block', entry);
        expect(await deliver(`sender@ip-${passes ? 'ok' : 'blocked'}.test`, s.mailbox), entry).toBe(passes);
        expect((await call('DELETE', `/lists/inbound/block/${added.entry}`, s.token)).statusCode, entry).toBe(200);
      }
      expect(await messageCount(s)).toBe(4);
      const events = await rejections(s.tenant.workspaceId);
      expect(events).toHaveLength(4);
      for (const e of events) expect(e.data).toMatchObject({ mailbox: s.mailbox, from: 'sender@ip-blocked.test', recipient: s.mailbox, reason: expect.stringContaining('127.0.0.') as unknown });
    });

    it('lets an allow match win over a block match', async () => {
      const s = await scene();
      await add(s.token, 'inbound/block', '127.0.0.0/8');
      await add(s.token, 'inbound/block', 'bad@partner.test');
      await add(s.token, 'inbound/allow', 'partner.test');
      // Blocked by IP and by address, allowed by domain: allowed.
      expect(await deliver('bad@partner.test', s.mailbox)).toBe(true);
      expect(await deliver('good@sub.partner.test', s.mailbox)).toBe(true);
      // Blocked by IP and not on the allow list.
      expect(await deliver('stranger@other.test', s.mailbox)).toBe(false);
      // An allowed IP beats a blocked address.
      await add(s.token, 'inbound/allow', '127.0.0.1');
      await add(s.token, 'inbound/block', 'stranger@other.test');
      expect(await deliver('stranger@other.test', s.mailbox)).toBe(true);
      expect(await messageCount(s)).toBe(3);
      expect(await rejections(s.tenant.workspaceId)).toHaveLength(1);
    });

    it('with a non-empty allow list refuses every sender not on it (strict allow)', async () => {
      const s = await scene();
      expect(await deliver('before@anywhere.test', s.mailbox)).toBe(true);
      await add(s.token, 'inbound/allow', 'friend@trusted.test');
      expect(await deliver('friend@trusted.test', s.mailbox)).toBe(true);
      expect(await deliver('colleague@trusted.test', s.mailbox)).toBe(false);
      expect(await deliver('before@anywhere.test', s.mailbox)).toBe(false);
      const events = await rejections(s.tenant.workspaceId);
      expect(events.map((e) => e.data)).toEqual([
        expect.objectContaining({ mailbox: s.mailbox, from: 'colleague@trusted.test', recipient: s.mailbox, reason: expect.stringContaining('allow list') as unknown }),
        expect.objectContaining({ mailbox: s.mailbox, from: 'before@anywhere.test', recipient: s.mailbox, reason: expect.stringContaining('allow list') as unknown }),
      ]);
      // An outbound allow list does not make inbound strict; emptying the inbound one lifts it.
      await add(s.token, 'outbound/allow', 'elsewhere.test');
      expect((await call('DELETE', '/lists/inbound/allow/friend@trusted.test', s.token)).statusCode).toBe(200);
      expect(await deliver('colleague@trusted.test', s.mailbox)).toBe(true);
      expect(await messageCount(s)).toBe(3);
    });

    it('applies outbound lists never to inbound mail', async () => {
      const s = await scene();
      await add(s.token, 'outbound/block', 'outsider.test');
      expect(await deliver('someone@outsider.test', s.mailbox)).toBe(true);
      expect(await rejections(s.tenant.workspaceId)).toHaveLength(0);
    });

    it("keeps one workspace's lists away from another workspace's mailboxes", async () => {
      const strict = await scene();
      const open = await scene();
      await add(strict.token, 'inbound/block', '127.0.0.0/8');
      await add(strict.token, 'inbound/block', 'shared-sender.test');
      await add(strict.token, 'inbound/allow', 'only@allowed.test');
      expect(await deliver('x@shared-sender.test', open.mailbox)).toBe(true);
      expect(await deliver('x@shared-sender.test', strict.mailbox)).toBe(false);

      // One transaction to both: the refused recipient does not stop the other.
      const info = await h.send({ from: 'x@shared-sender.test', to: [strict.mailbox, open.mailbox], subject: 'to both', text: 'x' });
      expect(info.accepted).toEqual([open.mailbox]);
      expect(info.rejected).toEqual([strict.mailbox]);

      expect(await messageCount(open)).toBe(2);
      expect(await messageCount(strict)).toBe(0);
      expect(await rejections(open.tenant.workspaceId)).toHaveLength(0);
      const events = await rejections(strict.tenant.workspaceId);
      expect(events).toHaveLength(2);
      for (const e of events) expect(e).toMatchObject({ workspace_id: strict.tenant.workspaceId, data: { mailbox: strict.mailbox, recipient: strict.mailbox, from: 'x@shared-sender.test' } });
      // The open workspace's lists are empty, and the strict one's entries are invisible to it.
      expect((await call('GET', '/lists/inbound/block', open.token)).json<EntryPage>().total).toBe(0);
      expect((await call('GET', '/lists/inbound/block/shared-sender.test', open.token)).statusCode).toBe(404);
    });
  });
});
