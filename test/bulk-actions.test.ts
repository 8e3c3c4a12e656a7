import type { LightMyRequestResponse } from 'fastify';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, errorOf, login, session, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';

interface View { message_id: string; folder: string; read: boolean; flagged: boolean; labels: string[] }
interface Previous { folder: string; read: boolean; flagged: boolean; labels: string[] }
interface Result { message_id: string; ok: boolean; error?: string; previous?: Previous }
interface Answer { action: string; results: Result[]; undo: { items: Array<{ message_id: string } & Previous> } }
type Credential = { key: string } | { token: string };

describe(`bulk actions and undo (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let acme: Tenant;
  let other: Tenant;
  let acmeToken: string;
  const BOX = 'bulk@mailroom.localhost';
  const OTHER_BOX = 'bulk-other@mailroom.localhost';
  let foreignId = '';

  const call = (method: 'GET' | 'POST', url: string, credential: Credential, payload?: object): Promise<LightMyRequestResponse> =>
    h.app.inject({
      method,
      url: 'key' in credential ? url : `/app/api${url}`,
      headers: 'key' in credential ? bearer(credential.key) : session(credential.token),
      ...(payload ? { payload } : {}),
    });
  const key = (): Credential => ({ key: acme.apiKey });
  const ses = (): Credential => ({ token: acmeToken });
  const ok = async <T>(res: Promise<LightMyRequestResponse>): Promise<T> => {
    const r = await res;
    expect(r.statusCode, r.body).toBe(200);
    return r.json<T>();
  };
  const bulk = (credential: Credential, body: object) => ok<Answer>(call('POST', '/messages/bulk', credential, body));
  const view = (id: string) => ok<View>(call('GET', `/messages/${id}`, key()));
  const deliver = async (to: string, subject: string): Promise<string> => {
    h.clock.advance(1000);
    const info = await h.send({ from: 'sender@sender.test', to, subject, text: `body of ${subject}` });
    return /Stored as (.+)$/.exec(info.response)![1]!;
  };

  beforeAll(async () => {
    h = await startMailHarness();
    acme = await createTenant(h, 'Acme');
    other = await createTenant(h, 'Other');
    acmeToken = await login(h, acme.ownerEmail, acme.password);
    expect((await call('POST', `/mailboxes?address=${BOX}`, key())).statusCode).toBe(201);
    expect((await call('POST', `/mailboxes?address=${OTHER_BOX}`, { key: other.apiKey })).statusCode).toBe(201);
    foreignId = await deliver(OTHER_BOX, 'foreign one');
  });
  afterAll(async () => h.close());

  it('archives, spams, moves and marks messages on both surfaces, a foreign id a per-item not_found', async () => {
    const a = await deliver(BOX, 'first');
    const b = await deliver(BOX, 'second');
    for (const credential of [key(), ses()]) {
      const archived = await bulk(credential, { action: 'archive', message_ids: [a, b, foreignId, 'msg_nope'] });
      expect(archived.results).toEqual([
        { message_id: a, ok: true, previous: { folder: 'inbox', read: false, flagged: false, labels: [] } },
        { message_id: b, ok: true, previous: { folder: 'inbox', read: false, flagged: false, labels: [] } },
        { message_id: foreignId, ok: false, error: 'message_not_found' },
        { message_id: 'msg_nope', ok: false, error: 'message_not_found' },
      ]);
      expect((await view(a)).folder).toBe('archive');
      expect((await bulk(credential, { action: 'spam', message_ids: [a] })).results[0]?.previous?.folder).toBe('archive');
      expect((await view(a)).folder).toBe('spam');
      await bulk(credential, { action: 'move', folder: 'inbox', message_ids: [a, b] });
      expect([(await view(a)).folder, (await view(b)).folder]).toEqual(['inbox', 'inbox']);
      await bulk(credential, { action: 'read', message_ids: [a, b] });
      expect((await view(b)).read).toBe(true);
      await bulk(credential, { action: 'unread', message_ids: [a, b] });
      expect((await view(b)).read).toBe(false);
      await bulk(credential, { action: 'flag', message_ids: [a] });
      expect((await view(a)).flagged).toBe(true);
      await bulk(credential, { action: 'unflag', message_ids: [a] });
      expect((await view(a)).flagged).toBe(false);
    }
    // The other workspace's message is as it was.
    expect(await ok<View>(call('GET', `/messages/${foreignId}`, { key: other.apiKey }))).toMatchObject({ folder: 'inbox', read: false });
  });

  it('labels messages and undoes the change', async () => {
    const a = await deliver(BOX, 'labelled');
    await ok(call('POST', `/messages/${a}/labels`, key(), { add: ['keep', 'old'] }));
    const labelled = await bulk(ses(), { action: 'label', message_ids: [a], add: ['new'], remove: ['old'] });
    expect(labelled.results[0]).toMatchObject({ ok: true, previous: { labels: ['keep', 'old'] } });
    expect((await view(a)).labels).toEqual(['keep', 'new']);
    await ok(call('POST', '/messages/bulk/restore', ses(), labelled.undo));
    expect((await view(a)).labels).toEqual(['keep', 'old']);
  });

  it('deletes to trash (undoable) and from trash for good (not undoable)', async () => {
    const a = await deliver(BOX, 'to delete');
    await ok(call('POST', `/messages/${a}/read`, key()));
    const deleted = await bulk(key(), { action: 'delete', message_ids: [a] });
    expect(deleted.undo.items).toEqual([{ message_id: a, folder: 'inbox', read: true, flagged: false, labels: [] }]);
    expect((await view(a)).folder).toBe('trash');
    const restored = await ok<Answer>(call('POST', '/messages/bulk/restore', key(), deleted.undo));
    expect(restored.results).toEqual([{ message_id: a, ok: true, previous: { folder: 'trash', read: true, flagged: false, labels: [] } }]);
    expect(await view(a)).toMatchObject({ folder: 'inbox', read: true });
    await bulk(key(), { action: 'delete', message_ids: [a] });
    const gone = await bulk(key(), { action: 'delete', message_ids: [a] });
    expect(gone.results).toEqual([{ message_id: a, ok: true }]);
    expect(gone.undo.items).toEqual([]);
    expect((await call('GET', `/messages/${a}`, key())).statusCode).toBe(404);
  });

  it('archives every message a search selects, over more than one page, and undoes it', { timeout: 180_000 }, async () => {
    // Imported as an mbox file: 130 messages over SMTP would take the test's time.
    const dir = mkdtempSync(join(tmpdir(), 'bulk-'));
    const mbox = Array.from({ length: 130 }, (_, i) =>
      `From sender@sender.test Mon Nov 30 10:00:00 2026\nFrom: sender@sender.test\nTo: ${BOX}\nSubject: paged item ${i}\nMessage-ID: <paged-${i}@sender.test>\nDate: Mon, 30 Nov 2026 10:00:00 +0000\n\nbody ${i}\n`,
    ).join('\n');
    writeFileSync(join(dir, 'inbox.mbox'), mbox);
    const summary = await h.services.mailTransfer.importMailbox({ address: BOX, workspaceId: acme.workspaceId }, join(dir, 'inbox.mbox'), { folder: 'inbox' });
    rmSync(dir, { recursive: true, force: true });
    expect(summary).toMatchObject({ imported: 130 });
    const listed = await ok<{ messages: Array<{ message_id: string }>; total: number }>(call('GET', `/inbox?mailbox=${BOX}&q=paged&limit=500`, key()));
    expect(listed.total).toBe(130);
    const ids = listed.messages.map((m) => m.message_id);
    const selection = { mailbox: BOX, folder: 'inbox', q: 'paged' };
    const archived = await bulk(ses(), { action: 'archive', selection });
    expect(archived.results.map((r) => r.message_id).sort()).toEqual([...ids].sort());
    expect(archived.results.every((r) => r.ok)).toBe(true);
    const left = await ok<{ total: number }>(call('GET', `/inbox?mailbox=${BOX}&q=paged&folder=inbox`, key()));
    expect(left.total).toBe(0);
    await ok(call('POST', '/messages/bulk/restore', key(), archived.undo));
    const back = await ok<{ total: number }>(call('GET', `/inbox?mailbox=${BOX}&q=paged&folder=inbox`, key()));
    expect(back.total).toBe(130);
    // A selection without q: the list's filters.
    const read = await bulk(key(), { action: 'read', selection: { mailbox: BOX, folder: 'inbox', unread: true } });
    expect(read.results.length).toBeGreaterThanOrEqual(130);
    expect((await view(ids[0]!)).read).toBe(true);
  });

  it("one workspace's bulk request cannot touch the other's messages", async () => {
    const mine = await deliver(BOX, 'private matter');
    const otherKey = { key: other.apiKey };
    const attempt = await bulk(otherKey, { action: 'delete', message_ids: [mine] });
    expect(attempt.results).toEqual([{ message_id: mine, ok: false, error: 'message_not_found' }]);
    const restore = await ok<Answer>(call('POST', '/messages/bulk/restore', otherKey, { items: [{ message_id: mine, folder: 'spam' }] }));
    expect(restore.results).toEqual([{ message_id: mine, ok: false, error: 'message_not_found' }]);
    const all = await bulk(otherKey, { action: 'archive', selection: { q: 'private' } });
    expect(all.results).toEqual([]);
    expect((await call('POST', '/messages/bulk', otherKey, { action: 'archive', selection: { mailbox: BOX } })).statusCode).toBe(404);
    expect(await view(mine)).toMatchObject({ folder: 'inbox', read: false });
  });

  it("acts on the named threads' messages of a folder only, and undoes it", async () => {
    h.clock.advance(1000);
    const first = /Stored as (.+)$/.exec((await h.send({ from: 'sender@sender.test', to: BOX, subject: 'Thread A', text: 'a1', messageId: '<thread-a@sender.test>' })).response)![1]!;
    h.clock.advance(1000);
    const second = /Stored as (.+)$/.exec((await h.send({ from: 'sender@sender.test', to: BOX, subject: 'Re: Thread A', text: 'a2', inReplyTo: '<thread-a@sender.test>' })).response)![1]!;
    const archivedBefore = /Stored as (.+)$/.exec((await h.send({ from: 'sender@sender.test', to: BOX, subject: 'Re: Thread A', text: 'a3', inReplyTo: '<thread-a@sender.test>' })).response)![1]!;
    const bystander = await deliver(BOX, 'Thread B');
    const threadId = (await ok<{ thread_id: string }>(call('GET', `/messages/${first}`, key()))).thread_id;
    expect((await ok<{ thread_id: string }>(call('GET', `/messages/${second}`, key()))).thread_id).toBe(threadId);
    await bulk(key(), { action: 'archive', message_ids: [archivedBefore] });

    const done = await bulk(ses(), { action: 'read', selection: { mailbox: BOX, folder: 'inbox', thread_ids: [threadId, threadId, 'thr_nope'] } });
    expect(done.results.map((r) => r.message_id).sort()).toEqual([first, second].sort());
    expect(await view(bystander)).toMatchObject({ read: false });
    expect(await view(archivedBefore)).toMatchObject({ folder: 'archive', read: false });
    await ok(call('POST', '/messages/bulk/restore', ses(), done.undo));
    expect(await view(first)).toMatchObject({ read: false });

    // Another workspace names the thread in vain.
    expect((await bulk({ key: other.apiKey }, { action: 'archive', selection: { thread_ids: [threadId] } })).results).toEqual([]);
    const tooMany = await call('POST', '/messages/bulk', key(), { action: 'archive', selection: { thread_ids: Array.from({ length: 101 }, (_, i) => `thr_${i}`) } });
    expect(errorOf(tooMany).error).toBe('invalid_request');
    const none = await call('POST', '/messages/bulk', key(), { action: 'archive', selection: { thread_ids: [] } });
    expect(errorOf(none).error).toBe('invalid_request');
  });

  it('refuses requests out of bounds or malformed before changing anything', async () => {
    const tooMany = Array.from({ length: 1001 }, (_, i) => `msg_${i}`);
    const refusals: Array<[object, string]> = [
      [{ action: 'archive', message_ids: tooMany }, 'invalid_request'],
      [{ action: 'archive', message_ids: [] }, 'invalid_request'],
      [{ action: 'archive' }, 'invalid_request'],
      [{ action: 'archive', message_ids: ['msg_1'], selection: {} }, 'invalid_request'],
      [{ action: 'move', message_ids: ['msg_1'] }, 'invalid_request'],
      [{ action: 'move', folder: 'junk', message_ids: ['msg_1'] }, 'invalid_folder'],
      [{ action: 'label', message_ids: ['msg_1'] }, 'invalid_request'],
      [{ action: 'archive', folder: 'inbox', message_ids: ['msg_1'] }, 'invalid_request'],
      [{ action: 'explode', message_ids: ['msg_1'] }, 'invalid_action'],
      [{ action: 'archive', selection: { q: '"open' } }, 'invalid_query'],
    ];
    for (const [body, error] of refusals) {
      const res = await call('POST', '/messages/bulk', key(), body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(errorOf(res).error).toBe(error);
    }
    const restoreTooMany = await call('POST', '/messages/bulk/restore', ses(), { items: tooMany.map((message_id) => ({ message_id })) });
    expect(restoreTooMany.statusCode).toBe(400);
    const badFolder = await call('POST', '/messages/bulk/restore', ses(), { items: [{ message_id: 'msg_1', folder: 'junk' }] });
    expect(errorOf(badFolder).error).toBe('invalid_folder');
  });
});
