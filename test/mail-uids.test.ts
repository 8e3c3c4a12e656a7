import { CompiledQuery } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asWork } from '../src/db/tables.js';
import * as mailUids from '../src/db/migrations/20261210000100_mail_uids.js';
import * as labelDefinitions from '../src/db/migrations/20261213000600_label_definitions.js';
import { createReceivedMailStore, type StoreInput } from '../src/modules/mail/mail.store.js';
import { parseMessage } from '../src/modules/messages/mime.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, errorOf, login, session, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);
const BOX = 'uids@mailroom.localhost';
const OTHER_BOX = 'elsewhere@mailroom.localhost';

/**
 * The mail store's UIDs, modseqs, flags and expunge log as mail clients will read them: through real SMTP ingest,
 * the HTTP API, the retention sweep, a workspace purge and the store's own operations, on the database under test.
 */
describe(`mail store: UIDs, modseq, flags, expunge log (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let acme: Tenant;
  let other: Tenant;
  let mailboxId: string;

  const db = () => h.services.database.db;
  const work = () => asWork(db());
  const store = () => createReceivedMailStore({ clock: h.clock, dialect: h.services.database.dialect });
  const api = (tenant: Tenant, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) =>
    h.app.inject({ method, url, headers: bearer(tenant.apiKey), ...(payload ? { payload } : {}) });
  const scope = (folder: string) => ({ workspaceId: acme.workspaceId, mailboxId, folder });

  let seq = 0;
  async function deliver(subject: string, to = BOX): Promise<string> {
    seq += 1;
    const info = await h.send({ from: `sender${seq}@sender.test`, to, subject, text: `body ${seq}`, messageId: `<m${seq}.${Date.now()}@sender.test>` });
    return /Stored as (.+)$/.exec(info.response)![1]!;
  }
  const rowOf = (id: string) =>
    db()
      .selectFrom('messages')
      .select(['uid', 'modseq', 'folder', 'read', 'flagged', 'answered', 'deleted', 'labels', 'thread_id', 'size'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
      .then((r) => ({ ...r, uid: Number(r.uid), modseq: Number(r.modseq) }));
  const counter = (folder: string, box = mailboxId) =>
    db()
      .selectFrom('folder_counts')
      .select(['modseq', 'uidnext', 'uidvalidity', 'total', 'unread'])
      .where('mailbox_id', '=', box)
      .where('folder', '=', folder)
      .executeTakeFirstOrThrow()
      .then((r) => ({ modseq: Number(r.modseq), uidnext: Number(r.uidnext), uidvalidity: Number(r.uidvalidity), total: Number(r.total), unread: Number(r.unread) }));
  const expunged = (folder: string, box = mailboxId) =>
    db()
      .selectFrom('mail_expunged')
      .select(['uid', 'modseq'])
      .where('mailbox_id', '=', box)
      .where('folder', '=', folder)
      .orderBy('uid')
      .execute()
      .then((rows) => rows.map((r) => ({ uid: Number(r.uid), modseq: Number(r.modseq) })));
  /** Every folder counter of the mailbox against its rows, and every thread's unread count against its messages. */
  async function countersTrue(): Promise<void> {
    for (const c of await db().selectFrom('folder_counts').select(['folder', 'total', 'unread']).where('mailbox_id', '=', mailboxId).execute()) {
      const rows = await db().selectFrom('messages').select('read').where('mailbox_id', '=', mailboxId).where('folder', '=', c.folder).execute();
      expect([c.folder, Number(c.total), Number(c.unread)]).toEqual([c.folder, rows.length, rows.filter((r) => r.read === 0).length]);
    }
    for (const t of await db().selectFrom('threads').select(['id', 'unread_count']).where('mailbox_id', '=', mailboxId).execute()) {
      const rows = await db().selectFrom('messages').select('read').where('thread_id', '=', t.id).execute();
      expect(Number(t.unread_count)).toBe(rows.filter((r) => r.read === 0).length);
    }
  }

  beforeAll(async () => {
    h = await startMailHarness();
    h.clock.set(T0);
    acme = await createTenant(h, 'Acme');
    other = await createTenant(h, 'Other');
    expect((await api(acme, 'POST', '/mailboxes', { address: BOX })).statusCode).toBe(201);
    expect((await api(other, 'POST', '/mailboxes', { address: OTHER_BOX })).statusCode).toBe(201);
    mailboxId = (await db().selectFrom('mailboxes').select('id').where('address', '=', BOX).executeTakeFirstOrThrow()).id;
  });
  afterAll(async () => {
    await h.close();
  });

  it('gives UIDs in arrival order, a new UID on every move, never one again after a delete or a move out; logs each removal', async () => {
    const [a, b, c] = [await deliver('first'), await deliver('second'), await deliver('third')];
    const inbox = await counter('inbox');
    expect([(await rowOf(a)).uid, (await rowOf(b)).uid, (await rowOf(c)).uid]).toEqual([1, 2, 3]);
    expect(inbox).toMatchObject({ uidnext: 4, total: 3, unread: 3 });
    expect(inbox.uidvalidity).toBeGreaterThan(1_700_000_000);
    // Each stored message carries the folder's modseq as it stored it; the last one the counter itself.
    expect((await rowOf(c)).modseq).toBe(inbox.modseq);
    expect((await rowOf(a)).modseq).toBeLessThan((await rowOf(b)).modseq);

    expect((await api(acme, 'POST', `/messages/${b}/move`, { folder: 'archive' })).statusCode).toBe(200);
    expect(await rowOf(b)).toMatchObject({ folder: 'archive', uid: 1, modseq: (await counter('archive')).modseq });
    expect(await expunged('inbox')).toEqual([{ uid: 2, modseq: (await counter('inbox')).modseq }]);

    expect((await api(acme, 'POST', `/messages/${b}/move`, { folder: 'inbox' })).statusCode).toBe(200);
    expect(await rowOf(b)).toMatchObject({ folder: 'inbox', uid: 4 });
    expect((await expunged('archive')).map((e) => e.uid)).toEqual([1]);

    expect((await api(acme, 'DELETE', `/messages/${a}`)).statusCode).toBe(200);
    const d = await deliver('fourth');
    expect((await rowOf(d)).uid).toBe(5);
    expect((await expunged('inbox')).map((e) => e.uid)).toEqual([1, 2]);

    const status = await store().folderStatus(work(), scope('inbox'));
    expect(status).toEqual({ uidvalidity: inbox.uidvalidity, uidnext: 6, highestmodseq: (await counter('inbox')).modseq, total: 3, unseen: 3, firstUnseenUid: 3 });
    // The folder's UIDVALIDITY never changed, and a folder never used gets its counter (and UIDVALIDITY) when asked.
    expect((await counter('inbox')).uidvalidity).toBe(inbox.uidvalidity);
    const drafts = await store().folderStatus(work(), scope('drafts'));
    expect(drafts).toMatchObject({ uidnext: 1, total: 0, unseen: 0, firstUnseenUid: null });
    expect((await store().folderStatus(work(), scope('drafts'))).uidvalidity).toBe(drafts.uidvalidity);

    const index = await store().folderIndex(work(), scope('inbox'));
    expect(index.map((e) => e.uid)).toEqual([3, 4, 5]);
    // The size rides with the entry: a session bounds its raw reads by it without asking.
    expect(index[0]).toEqual({ uid: 3, modseq: (await rowOf(c)).modseq, read: false, flagged: false, answered: false, deleted: false, draft: false, labels: [], size: Number((await rowOf(c)).size) });
    await countersTrue();
  });

  it('raises the modseq of a message and its folder with every change: read, flags, labels, move; HIGHESTMODSEQ is the counter', async () => {
    const id = await deliver('changes');
    const steps: Array<[string, () => Promise<unknown>]> = [
      ['read', () => api(acme, 'POST', `/messages/${id}/read`, { read: true })],
      ['unread', () => api(acme, 'POST', `/messages/${id}/read`, { read: false })],
      ['flag', () => api(acme, 'POST', `/messages/${id}/flags`, { flagged: true })],
      ['answer', () => api(acme, 'POST', `/messages/${id}/flags`, { answered: true })],
      ['label', () => api(acme, 'POST', `/messages/${id}/labels`, { add: ['work'] })],
      ['move', () => api(acme, 'POST', `/messages/${id}/move`, { folder: 'archive' })],
    ];
    let before = await rowOf(id);
    for (const [name, step] of steps) {
      await step();
      const after = await rowOf(id);
      // Modseqs are per folder: a move takes the target's, which its counter raised (as the source's).
      if (after.folder === before.folder) expect(after.modseq, name).toBeGreaterThan(before.modseq);
      else expect((await counter(before.folder)).modseq, name).toBeGreaterThan(before.modseq);
      expect(after.modseq, name).toBe((await counter(after.folder)).modseq);
      expect((await store().folderStatus(work(), scope(after.folder))).highestmodseq, name).toBe(after.modseq);
      before = after;
    }
    // What a client that knew the inbox at an earlier modseq learns: the message left (VANISHED), nothing else changed.
    const since = (await rowOf(id)).modseq;
    expect(await store().changedSince(work(), scope('archive'), since - 1)).toEqual([expect.objectContaining({ uid: (await rowOf(id)).uid, flagged: true, answered: true, labels: ['work'] })]);
    const inboxGone = await store().expungedSince(work(), scope('inbox'), (await counter('inbox')).modseq - 1);
    expect(inboxGone).toHaveLength(1);
    await countersTrue();
  });

  it('shows and sets flagged and answered through both APIs; another workspace gets a 404; bad input a 400', async () => {
    const id = await deliver('flags');
    const set = await api(acme, 'POST', `/messages/${id}/flags`, { flagged: true });
    expect(set.statusCode, set.body).toBe(200);
    expect(set.json()).toEqual({ ok: true, message_id: id, flagged: true, answered: false });
    expect((await api(acme, 'GET', `/messages/${id}`)).json()).toMatchObject({ flagged: true, answered: false });
    const page = await api(acme, 'GET', `/inbox?mailbox=${BOX}`);
    expect(page.json<{ messages: Array<{ message_id: string; flagged: boolean; answered: boolean }> }>().messages.find((m) => m.message_id === id)).toMatchObject({ flagged: true, answered: false });

    const token = await login(h, acme.ownerEmail, acme.password);
    const viaSession = await h.app.inject({ method: 'POST', url: `/app/api/messages/${id}/flags`, headers: session(token), payload: { flagged: false, answered: true } });
    expect(viaSession.json()).toEqual({ ok: true, message_id: id, flagged: false, answered: true });
    const listed = await h.app.inject({ method: 'GET', url: `/app/api/messages?mailbox=${BOX}`, headers: session(token) });
    expect(listed.json<{ messages: Array<{ message_id: string; flagged: boolean; answered: boolean }> }>().messages.find((m) => m.message_id === id)).toMatchObject({ flagged: false, answered: true });

    expect(errorOf(await api(other, 'POST', `/messages/${id}/flags`, { flagged: true })).status).toBe(404);
    expect((await rowOf(id)).flagged).toBe(0);
    for (const bad of [{ flagged: 'yes' }, { deleted: true }, { seen: true }]) expect(errorOf(await api(acme, 'POST', `/messages/${id}/flags`, bad)).status, JSON.stringify(bad)).toBe(400);
  });

  it('stores flags and keywords for UID ranges with UNCHANGEDSINCE, keeping counters true; EXPUNGE removes \\Deleted ones', async () => {
    const ids = [await deliver('s1'), await deliver('s2'), await deliver('s3')];
    const uids = await Promise.all(ids.map(async (id) => (await rowOf(id)).uid));
    // The client read the folder at `seen`; the second message changes after that.
    const seen = (await rowOf(ids[2]!)).modseq;
    await api(acme, 'POST', `/messages/${ids[1]}/flags`, { flagged: true });
    const result = await db()
      .transaction()
      .execute((trx) => store().storeFlags(asWork(trx), scope('inbox'), [[uids[0]!, uids[2]!]], { mode: 'add', flags: { read: true, deleted: true }, keywords: ['$Important'], unchangedSince: seen }));
    expect(result.failed).toEqual([uids[1]]);
    const modseq = (await counter('inbox')).modseq;
    expect(result.modified).toEqual([{ uid: uids[0], modseq }, { uid: uids[2], modseq }]);
    expect(await rowOf(ids[0]!)).toMatchObject({ read: 1, deleted: 1, labels: '["$Important"]', modseq });
    expect(await rowOf(ids[1]!)).toMatchObject({ read: 0, deleted: 0, labels: '[]' });
    expect((await db().selectFrom('message_labels').select('label').where('message_id', '=', ids[2]!).execute()).map((r) => r.label)).toEqual(['$Important']);
    await countersTrue();
    // Nothing to change: nothing written, the modseq stays.
    const again = await store().storeFlags(work(), scope('inbox'), [[uids[0]!, uids[0]!]], { mode: 'add', flags: { read: true }, keywords: [] });
    expect(again).toEqual({ modified: [], failed: [] });
    expect((await counter('inbox')).modseq).toBe(modseq);
    // Removing a keyword and \Seen; then EXPUNGE of the \Deleted ones logs their UIDs.
    await store().storeFlags(work(), scope('inbox'), [[uids[2]!, uids[2]!]], { mode: 'remove', flags: { read: true }, keywords: ['$Important'] });
    expect(await rowOf(ids[2]!)).toMatchObject({ read: 0, labels: '[]' });
    await countersTrue();
    const gone = await db().transaction().execute((trx) => store().expungeDeleted(asWork(trx), scope('inbox')));
    expect(gone.map((g) => Number(g.uid)).sort((x, y) => x - y)).toEqual([uids[0], uids[2]]);
    expect(await store().expungedSince(work(), scope('inbox'), modseq)).toEqual([uids[0], uids[2]]);
    await countersTrue();
  });

  it('moves many messages with one statement each way: N new UIDs in order, the old ones logged', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await deliver(`bulk ${i}`));
    const oldUids = await Promise.all(ids.map(async (id) => (await rowOf(id)).uid));
    const next = (await counter('archive')).uidnext;
    const moved = await db()
      .transaction()
      .execute((trx) => store().moveMessages(asWork(trx), acme.workspaceId, mailboxId, [...ids].reverse(), 'archive'));
    expect(moved).toEqual(ids.map((id, i) => ({ id, uid: next + i, from: 'inbox', direction: 'inbound' })));
    expect((await counter('archive')).uidnext).toBe(next + 5);
    expect((await expunged('inbox')).map((e) => e.uid)).toEqual(expect.arrayContaining(oldUids));
    const archiveModseq = (await counter('archive')).modseq;
    for (const id of ids) expect((await rowOf(id)).modseq).toBe(archiveModseq);
    await countersTrue();
  });

  it('finds a stored message by its Message-ID within the mailbox', async () => {
    const info = await h.send({ from: 'x@sender.test', to: BOX, subject: 'by id', text: 'x', messageId: '<append-me@sender.test>' });
    const id = /Stored as (.+)$/.exec(info.response)![1]!;
    const found = await store().findByMessageId(work(), { workspaceId: acme.workspaceId, mailboxId }, 'append-me@sender.test');
    expect(found.map(({ size: _size, ...rest }) => rest)).toEqual([{ id, folder: 'inbox', uid: (await rowOf(id)).uid }]);
    expect(found[0]!.size).toBe(Number((await db().selectFrom('messages').select('size').where('id', '=', id).executeTakeFirstOrThrow()).size));
    expect(await store().findByMessageId(work(), { workspaceId: other.workspaceId, mailboxId }, 'append-me@sender.test')).toEqual([]);
  });

  it('logs what the retention sweep removes, trims the log after its period, and a workspace purge leaves none', async () => {
    h.clock.set(T0);
    const id = await deliver('old trash');
    expect((await api(acme, 'POST', `/messages/${id}/move`, { folder: 'trash' })).statusCode).toBe(200);
    const uid = (await rowOf(id)).uid;
    h.clock.set(T0 + 31 * DAY);
    await h.services.retention.sweep.sweep();
    expect((await expunged('trash')).map((e) => e.uid)).toContain(uid);
    const trashModseq = (await counter('trash')).modseq;
    expect((await expunged('trash')).find((e) => e.uid === uid)!.modseq).toBe(trashModseq);
    // Another 31 days: the log rows of the first removals are past their period.
    h.clock.set(T0 + 62 * DAY);
    const report = await h.services.retention.sweep.sweep();
    expect(report.expunged).toBeGreaterThan(0);
    expect(await expunged('trash')).toEqual([]);
    expect(await expunged('inbox')).toEqual([]);

    // A workspace purge removes its expunge log with its mail.
    const gone = await deliver('to purge', OTHER_BOX);
    const otherBox = (await db().selectFrom('mailboxes').select('id').where('address', '=', OTHER_BOX).executeTakeFirstOrThrow()).id;
    expect((await api(other, 'DELETE', `/messages/${gone}`)).statusCode).toBe(200);
    expect(await expunged('inbox', otherBox)).toHaveLength(1);
    while ((await store().purgeMailBatch(work(), other.workspaceId, 100)) > 0);
    expect(await db().selectFrom('mail_expunged').select('uid').where('workspace_id', '=', other.workspaceId).execute()).toEqual([]);
  });

  it('lists a folder of 10,000 messages in UID order with one statement on the UID index', async () => {
    expect((await api(acme, 'POST', '/mailboxes', { address: 'big@mailroom.localhost' })).statusCode).toBe(201);
    const big = (await db().selectFrom('mailboxes').select('id').where('address', '=', 'big@mailroom.localhost').executeTakeFirstOrThrow()).id;
    const ws = acme.workspaceId;
    await db()
      .insertInto('threads')
      .values({ id: 'thr_big', workspace_id: ws, mailbox_id: big, subject: '', subject_key: '', participants: '[]', message_count: 10_000, unread_count: 5_000, labels: '[]', snippet: '', last_message_at: T0, created_at: T0, updated_at: T0 })
      .execute();
    // Rows written directly (the store's write path is tested above): UIDs in the reverse of insertion order.
    const rows = Array.from({ length: 10_000 }, (_, i) => ({
      id: `msg_big_${i}`, workspace_id: ws, mailbox_id: big, thread_id: 'thr_big', direction: 'inbound' as const, folder: 'archive', read: i % 2, labels: '[]',
      from_json: 'null', from_address: '', to_json: '[]', cc_json: '[]', subject: '', snippet: '', size: 10, date: null, internet_message_id: null, auth_json: '{}',
      attachments_json: '[]', envelope_json: '{}', created_at: T0 + i, updated_at: T0 + i, uid: 10_000 - i, modseq: 1, flagged: 0, answered: 0, deleted: 0,
    }));
    for (let i = 0; i < rows.length; i += 500) await db().insertInto('messages').values(rows.slice(i, i + 500)).execute();
    const started = performance.now();
    const index = await store().folderIndex(work(), { workspaceId: ws, mailboxId: big, folder: 'archive' });
    const elapsed = performance.now() - started;
    expect(index.map((e) => e.uid)).toEqual(Array.from({ length: 10_000 }, (_, i) => i + 1));
    expect(elapsed).toBeLessThan(3_000);
    if (TEST_DIALECT === 'sqlite') {
      const query = db().selectFrom('messages').select(['uid', 'modseq', 'read']).where('workspace_id', '=', ws).where('mailbox_id', '=', big).where('folder', '=', 'archive').orderBy('uid').compile();
      const plan = await db().executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${query.sql}`, [...query.parameters]));
      expect(plan.rows.map((r) => r.detail).join('; ')).toMatch(/USING INDEX messages_uid_idx/);
      expect(plan.rows.map((r) => r.detail).join('; ')).not.toMatch(/TEMP B-TREE/);
    }
    // These rows have no stored source, so a FETCH of bytes finds none of them; without bytes, each range is read.
    const ranged = await store().messagesByUid(work(), { workspaceId: ws, mailboxId: big, folder: 'archive' }, [[5, 7], [9_999, Number.MAX_SAFE_INTEGER]], 'raw');
    expect(ranged.map((r) => r.uid)).toEqual([]);
    const plain = await store().messagesByUid(work(), { workspaceId: ws, mailboxId: big, folder: 'archive' }, [[5, 7], [9_999, Number.MAX_SAFE_INTEGER]]);
    expect(plain.map((r) => [r.uid, r.id])).toEqual([[5, 'msg_big_9995'], [6, 'msg_big_9994'], [7, 'msg_big_9993'], [9_999, 'msg_big_1'], [10_000, 'msg_big_0']]);
    while ((await db().deleteFrom('messages').where('mailbox_id', '=', big).executeTakeFirst()).numDeletedRows > 0n);
  });

  it('numbers existing messages when migrating: UIDs in (created_at, id) order per folder, uidnext past them', async () => {
    // Messages arrive out of date order; the migration runs again over them as it would over an older database.
    const at = [T0 + 3000, T0 + 1000, T0 + 2000];
    const ids: string[] = [];
    for (const t of at) {
      h.clock.set(t);
      ids.push(await deliver(`migrate ${t}`));
    }
    await db().deleteFrom('mail_expunged').execute();
    // A later migration indexes `flagged`, which this one's down drops (SQLite refuses while an index reads it).
    await labelDefinitions.down(db());
    await mailUids.down(db());
    await mailUids.up(db());
    await labelDefinitions.up(db());
    const rows = await db().selectFrom('messages').select(['id', 'uid', 'created_at', 'modseq', 'folder']).where('mailbox_id', '=', mailboxId).where('folder', '=', 'inbox').orderBy('uid').execute();
    const byDate = [...rows].sort((x, y) => Number(x.created_at) - Number(y.created_at) || (x.id < y.id ? -1 : 1));
    expect(rows.map((r) => r.id)).toEqual(byDate.map((r) => r.id));
    expect(rows.map((r) => Number(r.uid))).toEqual(rows.map((_, i) => i + 1));
    const inbox = await counter('inbox');
    expect(inbox.uidnext).toBe(rows.length + 1);
    for (const row of rows) expect(Number(row.modseq)).toBe(inbox.modseq);
    // New mail continues after them.
    const next = await deliver('after migration');
    expect((await rowOf(next)).uid).toBe(rows.length + 1);
  });
});

/** PostgreSQL: concurrent stores into one folder, from separate connections and from one group commit. */
describe.runIf(TEST_DIALECT === 'postgres')('mail store: UIDs under concurrency (postgres)', () => {
  let h: MailHarness;
  let tenant: Tenant;
  let mailboxId: string;
  const db = () => h.services.database.db;
  const store = () => createReceivedMailStore({ clock: h.clock, dialect: h.services.database.dialect });

  async function input(n: number): Promise<StoreInput> {
    const raw = Buffer.from(`From: a${n}@sender.test\r\nTo: ${BOX}\r\nSubject: concurrent ${n}\r\nMessage-ID: <c${n}.${Date.now()}@sender.test>\r\n\r\nbody ${n}\r\n`);
    return {
      workspaceId: tenant.workspaceId,
      mailboxId,
      mailboxAddress: BOX,
      direction: 'inbound',
      folder: 'inbox',
      read: false,
      raw,
      parsed: await parseMessage(raw),
      auth: { spf: 'none', dkim: 'none', dmarc: 'none' },
      envelope: {},
    };
  }
  const uidsOf = async (ids: readonly string[]) => (await db().selectFrom('messages').select(['id', 'uid']).where('id', 'in', [...ids]).execute()).map((r) => Number(r.uid));

  beforeAll(async () => {
    h = await startMailHarness();
    tenant = await createTenant(h, 'Concurrent');
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(tenant.apiKey), payload: { address: BOX } })).statusCode).toBe(201);
    mailboxId = (await db().selectFrom('mailboxes').select('id').where('address', '=', BOX).executeTakeFirstOrThrow()).id;
  });
  afterAll(async () => h.close());

  it('transactions on separate connections give distinct UIDs, in commit order, with no gap', async () => {
    const inputs = await Promise.all(Array.from({ length: 24 }, (_, i) => input(i)));
    const rows = await Promise.all(inputs.map((one) => db().transaction().execute((trx) => store().storeCopy(asWork(trx), one))));
    const uids = await uidsOf(rows.map((r) => r.id));
    expect(new Set(uids).size).toBe(24);
    expect([...uids].sort((a, b) => a - b)).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));
    const counter = await db().selectFrom('folder_counts').select(['uidnext', 'total']).where('mailbox_id', '=', mailboxId).where('folder', '=', 'inbox').executeTakeFirstOrThrow();
    expect([Number(counter.uidnext), Number(counter.total)]).toEqual([25, 24]);
  });

  it('units of one group commit get increasing UIDs in their order', async () => {
    const inputs = await Promise.all(Array.from({ length: 16 }, (_, i) => input(100 + i)));
    const ids = await Promise.all(inputs.map((one) => h.services.commits.run(async (trx) => (await store().storeCopy(trx, one)).id)));
    const uids = await uidsOf(ids);
    const byId = new Map((await db().selectFrom('messages').select(['id', 'uid']).where('id', 'in', ids).execute()).map((r) => [r.id, Number(r.uid)]));
    expect(new Set(uids).size).toBe(16);
    // Units run in the order they were given (one key): each later one has the higher UID.
    const ordered = ids.map((id) => byId.get(id)!);
    expect(ordered).toEqual([...ordered].sort((a, b) => a - b));
    expect(Math.min(...ordered)).toBe(25);
  });

  it('storing a message costs no extra round trip: the counter bump rides on the thread lookup', async () => {
    const one = await input(999);
    const { default: pg } = await import('pg');
    const prototype = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
    const original = prototype.query;
    const sent: string[] = [];
    prototype.query = function (this: unknown, ...args: unknown[]) {
      const config = args[0];
      const text = typeof config === 'string' ? config : String((config as { text?: unknown }).text);
      // A NOTIFY goes on its own after a commit it announces (an earlier test's, too): not one of the store's.
      if (!text.startsWith('select pg_notify(')) sent.push(text);
      return original.apply(this, args);
    };
    try {
      await db().transaction().execute((trx) => store().storeCopy(asWork(trx), one));
    } finally {
      prototype.query = original;
    }
    // begin; the thread lookup carrying the bump; every write of the message in one statement; commit.
    expect(sent).toHaveLength(4);
    expect(sent[1]).toMatch(/^with "mr_w0" as \(insert into "folder_counts" /);
    expect(sent[2]).toMatch(/insert into "messages"/);
  });
});
