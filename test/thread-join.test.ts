import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asWork } from '../src/db/tables.js';
import { createCopyStore, type StoreInput } from '../src/modules/mail/copy.store.js';
import type { StoredMessageRow } from '../src/modules/mail/message.store.js';
import { notChecked } from '../src/modules/messages/authentication.js';
import { parseMessage } from '../src/modules/messages/mime.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, startHarness, type Harness, type Tenant } from './helpers/harness.js';

const DAY = 86_400_000;
const BASE = Date.UTC(2026, 10, 1);

type Mail = { from: string; to: string; subject: string; id: string; inReplyTo?: string; references?: string[]; at: number; labels?: string[]; read?: boolean };

function raw(m: Mail): Buffer {
  const lines = [`From: ${m.from}`, `To: ${m.to}`, `Subject: ${m.subject}`, `Message-ID: <${m.id}>`, `Date: ${new Date(m.at).toUTCString()}`];
  if (m.inReplyTo) lines.push(`In-Reply-To: <${m.inReplyTo}>`);
  if (m.references) lines.push(`References: ${m.references.map((r) => `<${r}>`).join(' ')}`);
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\nAbout ${m.subject} (${m.id})\r\n`);
}

// Already in each mailbox before the batch: threads found by subject, by reference, and by a reply that came first.
const seeds: Mail[] = [
  { from: 'alice@x.test', to: 'BOX', subject: 'Project plan', id: 's1@x.test', at: BASE - 3_600_000 },
  { from: 'bob@x.test', to: 'BOX', subject: 'Old topic', id: 's2@x.test', references: ['future@x.test'], at: BASE - 3_500_000 },
  { from: 'carol@x.test', to: 'BOX', subject: 'Lunch', id: 's3@x.test', at: BASE - 3_400_000 },
  { from: 'kim@x.test', to: 'BOX', subject: 'Ancient', id: 's4@x.test', at: BASE - 60 * DAY },
];

// The batch: each message joins a seed's thread, an earlier batch message's thread, or starts one.
const at = (i: number) => BASE + i * 1000;
const batch: Mail[] = [
  { from: 'alice@x.test', to: 'BOX', subject: 'Re: Project plan', id: 'b0@x.test', at: at(0), labels: ['work'] },
  { from: 'dave@x.test', to: 'eve@x.test', subject: 'Project plan', id: 'b1@x.test', at: at(1) },
  { from: 'eve@x.test', to: 'frank@x.test', subject: 'RE: project plan', id: 'b2@x.test', at: at(2), read: true },
  { from: 'zed@x.test', to: 'zoe@x.test', subject: 'Unrelated', id: 'future@x.test', at: at(3) },
  { from: 'gina@x.test', to: 'hank@x.test', subject: 'Something else', id: 'b4@x.test', inReplyTo: 'b1@x.test', at: at(4) },
  { from: 'ivan@x.test', to: 'jill@x.test', subject: 'Other', id: 'b5@x.test', inReplyTo: 'b0@x.test', references: ['s3@x.test', 'b0@x.test'], at: at(5) },
  { from: 'a@x.test', to: 'b@x.test', subject: '', id: 'b6@x.test', at: at(6) },
  { from: 'a@x.test', to: 'b@x.test', subject: '', id: 'b7@x.test', at: at(7) },
  { from: 'ivan@x.test', to: 'jill@x.test', subject: 'Lunch', id: 'b8@x.test', at: at(8) },
  { from: 'carol@x.test', to: 'BOX', subject: 'Re: Lunch', id: 'b9@x.test', at: at(9), labels: ['food'] },
  { from: 'jill@x.test', to: 'BOX', subject: 'Lunch', id: 'b10@x.test', at: at(10) },
  { from: 'alice@x.test', to: 'nobody@x.test', subject: 'Project plan', id: 'b11@x.test', at: BASE - 40 * DAY },
  { from: 'kim@x.test', to: 'BOX', subject: 'Ancient', id: 'b12@x.test', at: at(12) },
  { from: 'lee@x.test', to: 'mo@x.test', subject: 'Again', id: 'b1@x.test', at: at(13) },
  { from: 'kim@x.test', to: 'BOX', subject: 'Fwd: Ancient', id: 'b14@x.test', at: at(14), read: true },
];

describe(`a batch's copies join their threads as one copy at a time would (${TEST_DIALECT})`, () => {
  let h: Harness;
  let acme: Tenant;

  beforeAll(async () => {
    h = await startHarness();
    acme = await createTenant(h);
    for (const box of ['one', 'each']) {
      expect((await h.app.inject({ method: 'POST', url: `/mailboxes?address=${box}@mailroom.localhost`, headers: bearer(acme.apiKey) })).statusCode).toBe(201);
    }
  });
  afterAll(async () => h.close());

  async function inputsFor(address: string, mails: readonly Mail[]): Promise<StoreInput[]> {
    const mailbox = await h.services.database.db.selectFrom('mailboxes').select('id').where('workspace_id', '=', acme.workspaceId).where('address', '=', address).executeTakeFirstOrThrow();
    return Promise.all(
      mails.map(async (m) => {
        const bytes = raw({ ...m, to: m.to === 'BOX' ? address : m.to });
        const input: StoreInput = { workspaceId: acme.workspaceId, mailboxId: mailbox.id, mailboxAddress: address, direction: 'inbound', folder: 'inbox', read: m.read ?? false, raw: bytes, parsed: await parseMessage(bytes), auth: notChecked, envelope: {}, receivedAt: m.at };
        return m.labels ? { ...input, labels: m.labels } : input;
      }),
    );
  }

  /** Each copy's thread as the index of the thread's first copy, with the thread's row; and the copies' UIDs. */
  async function shapeOf(rows: readonly StoredMessageRow[]) {
    const first = new Map<string, number>();
    const positions = rows.map((row, i) => {
      if (!first.has(row.thread_id)) first.set(row.thread_id, i);
      return first.get(row.thread_id)!;
    });
    const db = h.services.database.db;
    const threads = await db.selectFrom('threads').select(['id', 'subject', 'participants', 'message_count', 'unread_count', 'labels', 'snippet', 'last_message_at', 'created_at']).where('id', 'in', [...first.keys()]).execute();
    const byFirst = threads.map(({ id, ...thread }) => ({ first: first.get(id), ...thread, participants: (JSON.parse(thread.participants) as string[]).map((p) => p.replace(/^(one|each)@/, 'BOX@')) })).sort((a, b) => a.first! - b.first!);
    const uids = await db.selectFrom('messages').select(['id', 'uid']).where('id', 'in', rows.map((r) => r.id)).execute();
    const uidOf = new Map(uids.map((u) => [u.id, Number(u.uid)]));
    return { positions, threads: byFirst, uids: rows.map((r) => uidOf.get(r.id)) };
  }

  it('ends exactly where storing the copies one at a time ends', async () => {
    const { db, dialect } = h.services.database;
    const store = createCopyStore({ clock: h.clock, dialect });
    const stored = async (address: string, together: boolean) => {
      const rows: StoredMessageRow[] = [];
      for (const input of await inputsFor(address, seeds)) rows.push(await db.transaction().execute((trx) => store.storeCopy(asWork(trx), input)));
      const inputs = await inputsFor(address, batch);
      const copies = await db.transaction().execute(async (trx) => {
        if (together) return store.storeCopies(asWork(trx), inputs);
        const one: StoredMessageRow[] = [];
        for (const input of inputs) one.push(await store.storeCopy(asWork(trx), input));
        return one;
      });
      return shapeOf([...rows, ...copies]);
    };
    const together = await stored('one@mailroom.localhost', true);
    const alone = await stored('each@mailroom.localhost', false);
    expect(together).toEqual(alone);

    // The cases the batch covers, as positions: seeds 0-3, batch message i at 4 + i.
    const s = (i: number) => i;
    const b = (i: number) => 4 + i;
    const threadOf = (i: number) => together.positions[b(i)];
    expect(threadOf(0)).toBe(s(0)); // by subject, sharing alice with a seed
    expect(threadOf(1)).toBe(b(1)); // same subject, no shared participant: a new thread
    expect(threadOf(2)).toBe(b(1)); // joins the batch's own new thread by subject and participant
    expect(threadOf(3)).toBe(s(1)); // its Message-ID was referenced first
    expect(threadOf(4)).toBe(b(1)); // In-Reply-To an earlier batch message
    expect(threadOf(5)).toBe(s(0)); // In-Reply-To wins over a later reference
    expect([threadOf(6), threadOf(7)]).toEqual([b(6), b(7)]); // no subject: never threaded by subject
    expect(threadOf(8)).toBe(b(8));
    expect(threadOf(9)).toBe(s(2)); // the most recent thread sharing a participant (the newer one shares none)
    expect(threadOf(10)).toBe(s(2)); // both share one; the seed's is the more recent since message 9 joined it
    expect(threadOf(11)).toBe(s(0)); // an old import joins, and leaves the thread's latest state alone
    expect(threadOf(12)).toBe(b(12)); // the seed is outside the subject window
    expect(threadOf(13)).toBe(b(1)); // a repeated Message-ID
    expect(threadOf(14)).toBe(b(12));
    expect(together.uids.slice(4)).toEqual(batch.map((_, i) => 5 + i));
  });

  it("numbers each mailbox's and folder's copies in order when one call stores into several", async () => {
    const { db, dialect } = h.services.database;
    const store = createCopyStore({ clock: h.clock, dialect });
    const mails = (n: number, tag: string): Mail[] => Array.from({ length: n }, (_, i) => ({ from: 'p@x.test', to: 'BOX', subject: `Mixed ${tag} ${i}`, id: `mixed-${tag}-${i}@x.test`, at: at(100 + i) }));
    const one = await inputsFor('one@mailroom.localhost', mails(3, 'a'));
    const each = await inputsFor('each@mailroom.localhost', mails(3, 'b'));
    const archived = one.slice(0, 2).map((input) => ({ ...input, id: undefined, folder: 'archive' as const, raw: Buffer.from(input.raw) }));
    const before = await db.selectFrom('folder_counts').select(['mailbox_id', 'folder', 'uidnext']).where('workspace_id', '=', acme.workspaceId).execute();
    const next = (mailboxId: string, folder: string) => Number(before.find((b) => b.mailbox_id === mailboxId && b.folder === folder)?.uidnext ?? 1);
    const inputs = [one[0]!, each[0]!, archived[0]!, one[1]!, each[1]!, archived[1]!, one[2]!, each[2]!];
    const rows = await db.transaction().execute((trx) => store.storeCopies(asWork(trx), inputs));
    const uids = await db.selectFrom('messages').select(['id', 'uid']).where('id', 'in', rows.map((r) => r.id)).execute();
    const uidOf = new Map(uids.map((u) => [u.id, Number(u.uid)]));
    const [a, b, c] = [next(one[0]!.mailboxId, 'inbox'), next(each[0]!.mailboxId, 'inbox'), next(one[0]!.mailboxId, 'archive')];
    expect(rows.map((r) => uidOf.get(r.id))).toEqual([a, b, c, a + 1, b + 1, c + 1, a + 2, b + 2]);
  });
});
