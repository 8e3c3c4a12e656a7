import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { cliUser, listen } from './helpers/cli-client.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, errorOf, memberSession, session, type Tenant } from './helpers/harness.js';
import type { MailHarness } from './helpers/mail.js';
import type { SmtpPeer } from './helpers/smtp-peer.js';
import { mailWorld } from './helpers/world.js';

type Item = { index: number; message_id?: string; status?: string; status_code?: number; error?: { error: string; detail: string } };
type BatchAnswer = { messages: Item[]; queued: number; failed: number };

/**
 * Commits in a SQLite write-ahead log: frames of the log's current generation (its salt) that end a transaction
 * (a non-zero database size in the frame header). Each is one commit, and with synchronous=FULL one fsync.
 */
function walCommits(databasePath: string): number {
  const file = `${databasePath}-wal`;
  if (!existsSync(file)) return 0;
  const wal = readFileSync(file);
  if (wal.length < 32) return 0;
  const pageSize = wal.readUInt32BE(8);
  const salt = wal.subarray(16, 24);
  let commits = 0;
  for (let at = 32; at + 24 + pageSize <= wal.length; at += 24 + pageSize) {
    if (!wal.subarray(at + 8, at + 16).equals(salt)) break;
    if (wal.readUInt32BE(at + 4) !== 0) commits++;
  }
  return commits;
}

describe(`batch send (${TEST_DIALECT})`, () => {
  const world = mailWorld({ env: { MAILROOM_DELIVERY_RETRY_BASE_MS: '60000' } });
  let h: MailHarness;
  let peer: SmtpPeer;
  let acme: Tenant;
  let other: Tenant;
  let member: string;

  beforeAll(async () => {
    ({ h, peer } = world);
    acme = await world.tenant('Acme');
    other = await world.tenant('Other');
    await h.app.inject({ method: 'POST', url: '/mailboxes?address=newsletter@mailroom.localhost', headers: bearer(acme.apiKey) });
    await h.app.inject({ method: 'POST', url: '/mailboxes?address=theirs@mailroom.localhost', headers: bearer(other.apiKey) });
    member = (await memberSession(h, acme.workspaceId, 'member')).token;
  });

  const message = (n: number | string, extra: Record<string, unknown> = {}) => ({ from_mailbox: 'newsletter@mailroom.localhost', to: `rcpt-${n}@peer.test`, subject: `Batch ${n}`, body: `Hello ${n}`, ...extra });
  const batch = (payload: unknown, headers: Record<string, string> = bearer(acme.apiKey), url = '/send/batch') => h.app.inject({ method: 'POST', url, headers, payload: payload as Record<string, unknown> });
  const db = () => h.services.database.db;
  const statusOf = async (id: string) => (await world.message(acme, id))?.status;
  /** Messages the world's workspaces have sent or queued (each send stores its copy in `sent` with the delivery). */
  const sentTotal = async () => (await world.sentCount(acme)) + (await world.sentCount(other));
  async function delivered(id: string): Promise<void> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const status = await statusOf(id);
      if (status === 'accepted') return;
      if (status === 'failed' || Date.now() > deadline) throw new Error(`${id} is ${status}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  const receivedBy = (recipient: string) => peer.accepted.filter((m) => m.recipients.includes(recipient));

  it('queues every message of a batch, answers in order, and each reaches the peer', async () => {
    const res = await batch({ messages: [1, 2, 3, 4, 5].map((n) => message(`all-${n}`, n === 3 ? { html: '<p>three</p>', from_name: 'Acme News' } : {})) });
    expect(res.statusCode).toBe(200);
    const answer = res.json<BatchAnswer>();
    expect(answer).toMatchObject({ queued: 5, failed: 0 });
    expect(answer.messages.map((m) => [m.index, m.status])).toEqual([0, 1, 2, 3, 4].map((i) => [i, 'queued']));
    const ids = answer.messages.map((m) => m.message_id!);
    expect(new Set(ids).size).toBe(5);
    for (const id of ids) await delivered(id);
    for (const n of [1, 2, 3, 4, 5]) {
      const got = receivedBy(`rcpt-all-${n}@peer.test`);
      expect(got).toHaveLength(1);
      expect(got[0]!.raw.toString()).toContain(`Subject: Batch all-${n}`);
      expect(got[0]!.raw.toString()).toContain(`Message-ID: <${ids[n - 1]}@mailroom.localhost>`);
    }
    expect(receivedBy('rcpt-all-3@peer.test')[0]!.raw.toString()).toContain('From: Acme News <newsletter@mailroom.localhost>');
    // Each is an ordinary sent message: in `sent`, with its own message.sent event.
    const sent = (await Promise.all(ids.map((id) => world.message(acme, id)))).filter((m) => m?.folder === 'sent').length;
    expect(sent).toBe(5);
    const events = world.events('message.sent').filter((e) => ids.some((id) => JSON.stringify(e).includes(id)));
    expect(events).toHaveLength(5);
  });

  it('answers a bad message with its own error in its place; the good ones around it are queued and delivered', async () => {
    const owner = (await memberSession(h, acme.workspaceId, 'owner')).token;
    expect((await h.app.inject({ method: 'POST', url: '/app/api/lists/outbound/block', headers: session(owner), payload: { entry: 'blocked@peer.test' } })).statusCode).toBe(201);
    const { subject: _dropped, ...noSubject } = message('bad-subject');
    const res = await batch({
      messages: [
        message('mix-0'),
        noSubject,
        message('bad-address', { to: 'not an address' }),
        message('mix-3'),
        message('unknown-from', { from_mailbox: 'nobody@mailroom.localhost' }),
        message('theirs', { from_mailbox: 'theirs@mailroom.localhost' }),
        message('blocked', { to: 'blocked@peer.test' }),
        message('extra-field', { priority: 'high' }),
        'not an object',
        message('mix-9'),
      ],
    });
    expect(res.statusCode).toBe(200);
    const answer = res.json<BatchAnswer>();
    expect(answer).toMatchObject({ queued: 3, failed: 7 });
    const items = answer.messages;
    expect(items.map((m) => m.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    for (const i of [0, 3, 9]) expect(items[i]).toMatchObject({ status: 'queued', message_id: expect.stringMatching(/^msg_/) as unknown });
    expect(items[1]).toMatchObject({ status_code: 400, error: { error: 'invalid_request', detail: "body.messages.1 is missing the required field 'subject'" } });
    expect(items[2]).toMatchObject({ status_code: 400, error: { error: 'invalid_recipient', detail: "to: 'not an address' is not a valid email address" } });
    expect(items[4]).toMatchObject({ status_code: 404, error: { error: 'mailbox_not_found' } });
    // Another workspace's mailbox is as unknown as one that does not exist: 404, for that message only.
    expect(items[5]).toMatchObject({ status_code: 404, error: { error: 'mailbox_not_found' } });
    expect(items[6]).toMatchObject({ status_code: 422, error: { error: 'recipient_blocked' } });
    expect(items[7]).toMatchObject({ status_code: 400, error: { error: 'invalid_request', detail: "body.messages.7 has an unknown field 'priority'" } });
    expect(items[8]).toMatchObject({ status_code: 400, error: { error: 'invalid_request', detail: 'body.messages.8 must be object' } });
    for (const item of items.filter((m) => m.error)) expect(item.message_id).toBeUndefined();

    // Each refused message is answered as POST /send answers it alone.
    const single = async (body: unknown) => errorOf(await h.app.inject({ method: 'POST', url: '/send', headers: bearer(acme.apiKey), payload: body as Record<string, unknown> }));
    expect(await single(message('theirs', { from_mailbox: 'theirs@mailroom.localhost' }))).toMatchObject({ status: 404, error: 'mailbox_not_found', detail: items[5]!.error!.detail });
    expect(await single(message('bad-address', { to: 'not an address' }))).toMatchObject({ status: 400, error: 'invalid_recipient', detail: items[2]!.error!.detail });
    expect(await single(message('blocked', { to: 'blocked@peer.test' }))).toMatchObject({ status: 422, error: 'recipient_blocked' });

    for (const i of [0, 3, 9]) await delivered(items[i]!.message_id!);
    for (const n of ['mix-0', 'mix-3', 'mix-9']) expect(receivedBy(`rcpt-${n}@peer.test`)).toHaveLength(1);
    // Nothing of the refused ones was stored or sent; the list refusal was recorded, as a single send records it.
    for (const n of ['bad-subject', 'bad-address', 'unknown-from', 'theirs', 'extra-field']) expect(receivedBy(`rcpt-${n}@peer.test`)).toHaveLength(0);
    expect(receivedBy('blocked@peer.test')).toHaveLength(0);
    const rejected = world.events('message.rejected').filter((e) => e.workspace_id === acme.workspaceId && JSON.stringify(e).includes('blocked@peer.test'));
    expect(rejected.length).toBeGreaterThanOrEqual(1);
    expect(await world.sentCount(other)).toBe(0);
  });

  it('a batch whose messages are all refused answers 200 with every error and queues nothing', async () => {
    const before = await sentTotal();
    const res = await batch({ messages: [message('x', { from_mailbox: 'theirs@mailroom.localhost' }), message('y', { to: [] })] });
    expect(res.statusCode).toBe(200);
    expect(res.json<BatchAnswer>()).toMatchObject({ queued: 0, failed: 2, messages: [{ index: 0, status_code: 404 }, { index: 1, status_code: 400 }] });
    expect(await sentTotal()).toBe(before);
  });

  it('refuses a malformed batch as a whole: 101 messages, none, no list, other fields, not an object', async () => {
    const refusals: Array<[unknown, string]> = [
      [{ messages: Array.from({ length: 101 }, (_, i) => message(`many-${i}`)) }, 'body.messages must NOT have more than 100 items'],
      [{ messages: [] }, 'body.messages must NOT have fewer than 1 items'],
      [{}, "body is missing the required field 'messages'"],
      [{ messages: [message('a')], dry_run: true }, "body has an unknown field 'dry_run'"],
      [[message('a')], 'body must be object'],
      [{ messages: message('a') }, 'body.messages must be array'],
    ];
    const before = await sentTotal();
    for (const [payload, detail] of refusals) {
      expect(errorOf(await batch(payload))).toEqual({ status: 400, error: 'invalid_request', detail });
    }
    // Exactly 100 is a batch.
    const hundred = await batch({ messages: Array.from({ length: 100 }, (_, i) => message(`hundred-${i}`)) });
    expect(hundred.json<BatchAnswer>()).toMatchObject({ queued: 100, failed: 0 });
    expect(await sentTotal()).toBe(before + 100);
  });

  it('takes a body far over 1 MiB, and answers 413 past 50 MiB', async () => {
    const big = 'x'.repeat(400 * 1024);
    const res = await batch({ messages: [1, 2, 3, 4].map((n) => message(`big-${n}`, { body: big, html: `<p>${big}</p>` })) });
    expect(res.statusCode).toBe(200);
    expect(res.json<BatchAnswer>()).toMatchObject({ queued: 4, failed: 0 });
    // Other routes keep 1 MiB, and their 413 says so.
    const overMiB = await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(acme.apiKey), payload: { address: 'x@mailroom.localhost', description: 'd'.repeat(1024 * 1024) } });
    expect(errorOf(overMiB)).toEqual({ status: 413, error: 'payload_too_large', detail: "the request body is larger than 1 MiB, this route's limit" });
    const tooBig = JSON.stringify({ messages: [message('huge', { body: 'y'.repeat(50 * 1024 * 1024) })] });
    const refused = await h.app.inject({ method: 'POST', url: '/send/batch', headers: { ...bearer(acme.apiKey), 'content-type': 'application/json' }, payload: tooBig });
    expect(errorOf(refused)).toEqual({ status: 413, error: 'payload_too_large', detail: "the request body is larger than 50 MiB, this route's limit" });
  });

  it('works on the session surface, and each surface takes only its own credential', async () => {
    const res = await batch({ messages: [message('session-1'), message('session-2', { from_mailbox: 'theirs@mailroom.localhost' })] }, session(member), '/app/api/send/batch');
    expect(res.statusCode).toBe(200);
    const answer = res.json<BatchAnswer>();
    expect(answer).toMatchObject({ queued: 1, failed: 1, messages: [{ index: 0, status: 'queued' }, { index: 1, status_code: 404, error: { error: 'mailbox_not_found' } }] });
    await delivered(answer.messages[0]!.message_id!);
    expect(receivedBy('rcpt-session-1@peer.test')).toHaveLength(1);
    expect((await batch({ messages: [message('s')] }, bearer(acme.apiKey), '/app/api/send/batch')).statusCode).toBe(401);
    expect((await batch({ messages: [message('s')] }, session(member), '/send/batch')).statusCode).toBe(401);
    expect((await batch({ messages: [message('s')] }, {})).statusCode).toBe(401);
  });

  it('writes the whole batch of 100 in one transaction: one commit, where single sends commit once each', async () => {
    // The worker would commit its claims in between; without it only the sends write.
    await world.stopWorker();
    try {
      const singles: string[] = [];
      let batchIds: string[];
      if (TEST_DIALECT === 'sqlite') {
        const path = h.database.url.slice('sqlite:'.length);
        await sql`PRAGMA wal_autocheckpoint = 0`.execute(db());
        try {
          await sql`PRAGMA wal_checkpoint(TRUNCATE)`.execute(db());
          expect(walCommits(path)).toBe(0);
          const res = await batch({ messages: Array.from({ length: 100 }, (_, i) => message(`tx-${i}`)) });
          batchIds = res.json<BatchAnswer>().messages.map((m) => m.message_id!);
          expect(batchIds).toHaveLength(100);
          expect(walCommits(path)).toBe(1);
          // The same measure counts one commit per single send, one after another.
          for (let i = 0; i < 3; i++) singles.push((await h.app.inject({ method: 'POST', url: '/send', headers: bearer(acme.apiKey), payload: message(`tx-single-${i}`) })).json<{ message_id: string }>().message_id);
          expect(walCommits(path)).toBe(4);
        } finally {
          await sql`PRAGMA wal_autocheckpoint = 1000`.execute(db());
        }
      } else {
        const res = await batch({ messages: Array.from({ length: 100 }, (_, i) => message(`tx-${i}`)) });
        batchIds = res.json<BatchAnswer>().messages.map((m) => m.message_id!);
        for (let i = 0; i < 3; i++) singles.push((await h.app.inject({ method: 'POST', url: '/send', headers: bearer(acme.apiKey), payload: message(`tx-single-${i}`) })).json<{ message_id: string }>().message_id);
      }
      // PostgreSQL names the transaction that wrote each row (xmin): one for the whole batch, one per single send.
      if (TEST_DIALECT === 'postgres') {
        const writers = async (ids: string[]) =>
          new Set([
            ...(await sql<{ x: string }>`select xmin::text as x from outbound where message_id in (${sql.join(ids)})`.execute(db())).rows.map((r) => r.x),
            ...(await sql<{ x: string }>`select xmin::text as x from messages where id in (${sql.join(ids)})`.execute(db())).rows.map((r) => r.x),
            ...(await sql<{ x: string }>`select xmin::text as x from jobs where payload like ${'%msg_%'} and (${sql.join(ids.map((id) => sql`payload like ${`%${id}%`}`), sql` or `)})`.execute(db())).rows.map((r) => r.x),
          ]);
        expect((await writers(batchIds)).size).toBe(1);
        expect((await writers(singles)).size).toBe(3);
      }
    } finally {
      world.startWorker();
    }
  });

  it('mailroom send-batch sends a file of messages and lists each outcome, failing when one was refused', async () => {
    const url = await listen(h.app);
    const cli = cliUser(url);
    expect((await cli.login(acme.ownerEmail, acme.password)).code).toBe(0);
    const work = mkdtempSync(join(tmpdir(), 'mailroom-batch-cli-'));
    const file = join(work, 'messages.json');
    writeFileSync(file, JSON.stringify({ messages: [message('cli-1'), message('cli-2', { from_mailbox: 'theirs@mailroom.localhost' })] }));
    const mixed = await cli.run(['send-batch', file]);
    expect(mixed.code).toBe(1);
    const lines = mixed.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^0 {2}msg_[0-9a-z]{26} is queued$/);
    expect(lines[1]).toBe('1  404 mailbox_not_found: no mailbox theirs@mailroom.localhost in this workspace');
    expect(lines[2]).toBe('1 queued, 1 refused (mailroom sent shows their delivery)');
    await delivered(/msg_[0-9a-z]{26}/.exec(lines[0]!)![0]);
    expect(receivedBy('rcpt-cli-1@peer.test')).toHaveLength(1);

    // A bare array (Resend's shape) on standard input, answered as JSON; all queued: exit 0.
    const piped = await cli.run(['send-batch', '-', '--json'], { input: JSON.stringify([message('cli-3'), message('cli-4')]) });
    expect(piped.code).toBe(0);
    expect(JSON.parse(piped.stdout)).toMatchObject({ queued: 2, failed: 0, messages: [{ index: 0, status: 'queued' }, { index: 1, status: 'queued' }] });

    writeFileSync(file, '{"messages": ');
    expect((await cli.run(['send-batch', file])).stderr).toMatch(/^error: .*messages\.json is not JSON: /);
    writeFileSync(file, '{"message": []}');
    expect((await cli.run(['send-batch', file])).stderr).toMatch(/must hold \{"messages": \[\.\.\.\]\} or an array of messages\n$/);
    writeFileSync(file, JSON.stringify({ messages: [] }));
    expect((await cli.run(['send-batch', file])).stderr).toBe('error: 400 invalid_request: body.messages must NOT have fewer than 1 items\n');
    expect((await cli.run(['send-batch', join(work, 'missing.json')])).stderr).toMatch(/cannot read .*missing\.json: no such file/);
  });
});
