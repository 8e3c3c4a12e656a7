import { CompiledQuery, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isUniqueViolation } from '../src/db/dialect.js';
import { insertRows } from '../src/db/prepared.js';
import { deferrableWrite } from '../src/db/write-coalescing.js';
import { asWork } from '../src/db/tables.js';
import { systemClock } from '../src/lib/clock.js';
import { createReceivedMailStore } from '../src/modules/mail/mail.store.js';
import { TEST_DIALECT } from './helpers/database.js';
import { startHarness, type Harness } from './helpers/harness.js';

/**
 * Deferrable writes (src/db/write-coalescing.ts): inside a PostgreSQL transaction they wait and go out
 * together as one statement; on SQLite they run at once. Either way a transaction must see exactly
 * what it would see if each had run at once.
 */
describe(`write coalescing (${TEST_DIALECT})`, () => {
  let h: Harness;
  let workspaceId: string;
  let mailboxId: string;
  const db = () => h.services.database.db;
  // The mail store, which owns the folder counters these tests write through its prepared write.
  const mail = () => createReceivedMailStore({ clock: systemClock, dialect: h.services.database.dialect });

  beforeAll(async () => {
    h = await startHarness({ MAILROOM_HOSTED_DOMAINS: 'coalesce.test' });
    workspaceId = (await h.services.tenancy.admin.createWorkspace({ name: 'Coalescing' })).workspace_id;
    await h.services.mailboxes.create({ workspaceId, role: 'owner', userId: null }, { address: 'box@coalesce.test' });
    mailboxId = (await db().selectFrom('mailboxes').select('id').where('address', '=', 'box@coalesce.test').executeTakeFirstOrThrow()).id;
  });
  afterAll(async () => h.close());

  const event = (id: string, n: number) => ({ id, workspace_id: workspaceId, type: 'message.sent', payload: `{"n":${n},"id":"${id}"}`, created_at: n });
  const job = (id: string, n: number) => ({
    id,
    queue: 'coalesce-test',
    workspace_id: workspaceId,
    payload: `{"n":${n}}`,
    state: 'pending' as const,
    attempts: 0,
    max_attempts: 3,
    run_at: n,
    lease_token: null,
    interrupted: 0,
    last_error: null,
    group_key: null,
    dedup_key: null,
    created_at: n,
    updated_at: n,
  });
  const counts = async (folder: string) =>
    db().selectFrom('folder_counts').select(['total', 'unread']).where('mailbox_id', '=', mailboxId).where('folder', '=', folder).executeTakeFirst();

  it('writes to several tables keep every value, and the transaction reads them back before it commits', async () => {
    const seen = await db()
      .transaction()
      .execute(async (trx) => {
        await insertRows(trx, 'events', [event('evt_wc_1', 1), event('evt_wc_2', 2)]);
        await insertRows(trx, 'jobs', [job('job_wc_1', 11)]);
        await mail().bumpFolder(asWork(trx), workspaceId, mailboxId, 'archive', 3, 2);
        return {
          events: await trx.selectFrom('events').select(['id', 'payload', 'created_at']).where('id', 'like', 'evt_wc_%').orderBy('id').execute(),
          jobs: await trx.selectFrom('jobs').select(['id', 'payload', 'run_at']).where('id', '=', 'job_wc_1').execute(),
        };
      });
    expect(seen.events.map((e) => [e.id, e.payload, Number(e.created_at)])).toEqual([
      ['evt_wc_1', '{"n":1,"id":"evt_wc_1"}', 1],
      ['evt_wc_2', '{"n":2,"id":"evt_wc_2"}', 2],
    ]);
    expect(seen.jobs.map((j) => [j.id, j.payload, Number(j.run_at)])).toEqual([['job_wc_1', '{"n":11}', 11]]);
    expect(await counts('archive')).toEqual({ total: 3, unread: 2 });
  });

  it('two changes to one row in one transaction both count', async () => {
    await db()
      .transaction()
      .execute(async (trx) => {
        await mail().bumpFolder(asWork(trx), workspaceId, mailboxId, 'trash', 1, 1);
        await mail().bumpFolder(asWork(trx), workspaceId, mailboxId, 'trash', 1, 0);
        await insertRows(trx, 'events', [event('evt_wc_3', 3)]);
        await mail().bumpFolder(asWork(trx), workspaceId, mailboxId, 'trash', 5, 1);
      });
    expect(await counts('trash')).toEqual({ total: 7, unread: 2 });
  });

  it('a write that breaks a constraint fails its transaction, and none of the transaction stays', async () => {
    const attempt = db()
      .transaction()
      .execute(async (trx) => {
        await insertRows(trx, 'jobs', [job('job_wc_2', 12)]);
        await mail().bumpFolder(asWork(trx), workspaceId, mailboxId, 'spam', 1, 1);
        // evt_wc_1 exists: a primary-key violation.
        await insertRows(trx, 'events', [event('evt_wc_1', 99)]);
      });
    const err: unknown = await attempt.then(() => null, (e: unknown) => e);
    expect(isUniqueViolation(err)).toBe(true);
    expect(await db().selectFrom('jobs').select('id').where('id', '=', 'job_wc_2').execute()).toEqual([]);
    expect(await counts('spam')).toBeUndefined();
    const kept = await db().selectFrom('events').select('payload').where('id', '=', 'evt_wc_1').executeTakeFirstOrThrow();
    expect(kept.payload).toBe('{"n":1,"id":"evt_wc_1"}');
  });

  it('on PostgreSQL a write waits in the transaction until its next statement; on SQLite it runs at once', async () => {
    let insertOutcome = '';
    let readOutcome = '';
    let readMessage = '';
    await db()
      .transaction()
      .execute(async (trx) => {
        insertOutcome = await insertRows(trx, 'events', [event('evt_wc_2', 98)]).then(
          () => 'resolved',
          (e: unknown) => (isUniqueViolation(e) ? 'unique violation' : String(e)),
        );
        if (insertOutcome !== 'resolved') return;
        readOutcome = await trx
          .selectFrom('workspaces')
          .select('id')
          .execute()
          .then(
            () => 'read',
            (e: unknown) => {
              readMessage = String(e);
              return isUniqueViolation(e) ? 'unique violation' : String(e);
            },
          );
      })
      .catch(() => undefined);
    if (TEST_DIALECT === 'postgres') {
      expect([insertOutcome, readOutcome]).toEqual(['resolved', 'unique violation']);
      // Test builds name the deferred writes the failing statement carried.
      expect(readMessage).toContain('carried deferred writes to events');
    } else {
      expect([insertOutcome, readOutcome]).toEqual(['unique violation', '']);
    }
  });

  it('writes waiting when the transaction rolls back are never sent', async () => {
    await db()
      .transaction()
      .execute(async (trx) => {
        await insertRows(trx, 'events', [event('evt_wc_4', 4)]);
        await mail().bumpFolder(asWork(trx), workspaceId, mailboxId, 'drafts', 1, 0);
        throw new Error('changed my mind');
      })
      .catch(() => undefined);
    expect(await db().selectFrom('events').select('id').where('id', '=', 'evt_wc_4').execute()).toEqual([]);
    expect(await counts('drafts')).toBeUndefined();
    // The connection goes back to the pool clean: the next transaction on it sees no leftover write.
    await db()
      .transaction()
      .execute(async (trx) => {
        await insertRows(trx, 'events', [event('evt_wc_5', 5)]);
      });
    expect((await db().selectFrom('events').select('id').where('id', 'in', ['evt_wc_4', 'evt_wc_5']).execute()).map((r) => r.id)).toEqual(['evt_wc_5']);
  });

  it('outside a transaction a deferrable write runs at once', async () => {
    await insertRows(db(), 'events', [event('evt_wc_6', 6)]);
    const err: unknown = await insertRows(db(), 'events', [event('evt_wc_6', 7)]).then(() => null, (e: unknown) => e);
    expect(isUniqueViolation(err)).toBe(true);
  });
});

/**
 * The SQL texts node-postgres sends while `work` runs (PostgreSQL only): the statements, one round trip each,
 * and the values bound to each.
 */
async function statementsSent<T>(work: () => Promise<T>): Promise<{ result: T; sent: string[]; values: unknown[][] }> {
  const { default: pg } = await import('pg');
  const prototype = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = prototype.query;
  const sent: string[] = [];
  const values: unknown[][] = [];
  prototype.query = function (this: unknown, ...args: unknown[]) {
    const config = args[0];
    const text = typeof config === 'string' ? config : String((config as { text?: unknown }).text);
    // A NOTIFY goes on its own after a commit it announces (an earlier test's, too): not a statement of `work`'s.
    if (text.startsWith('select pg_notify(')) return original.apply(this, args);
    sent.push(text);
    const bound = typeof config === 'string' ? args[1] : ((config as { values?: unknown }).values ?? args[1]);
    values.push(Array.isArray(bound) ? [...(bound as unknown[])] : []);
    return original.apply(this, args);
  };
  try {
    return { result: await work(), sent, values };
  } finally {
    prototype.query = original;
  }
}

describe.runIf(TEST_DIALECT === 'postgres')('write coalescing: a statement carries the writes before it (postgres)', () => {
  let h: Harness;
  let workspaceId: string;
  const db = () => h.services.database.db;
  const event = (id: string, n: number) => ({ id, workspace_id: workspaceId, type: 'message.sent', payload: `{"n":${n}}`, created_at: n });

  let mailboxId: string;
  const mail = () => createReceivedMailStore({ clock: systemClock, dialect: h.services.database.dialect });

  beforeAll(async () => {
    h = await startHarness({ MAILROOM_HOSTED_DOMAINS: 'carry.test' });
    workspaceId = (await h.services.tenancy.admin.createWorkspace({ name: 'Carrying' })).workspace_id;
    await h.services.mailboxes.create({ workspaceId, role: 'owner', userId: null }, { address: 'box@carry.test' });
    mailboxId = (await db().selectFrom('mailboxes').select('id').where('address', '=', 'box@carry.test').executeTakeFirstOrThrow()).id;
  });
  afterAll(async () => h.close());

  it('a statement naming none of the waiting tables carries them, its own CTEs after theirs; one naming one of them waits for them', async () => {
    const { result, sent } = await statementsSent(() =>
      db()
        .transaction()
        .execute(async (trx) => {
          await insertRows(trx, 'events', [event('evt_carry_1', 1)]);
          await insertRows(trx, 'events', [event('evt_carry_2', 2)]); // a second write to a table sends the first
          const workspace = await trx.with('mine', (qc) => qc.selectFrom('workspaces').select('name').where('id', '=', workspaceId)).selectFrom('mine').select('name').execute();
          await insertRows(trx, 'events', [event('evt_carry_3', 3)]);
          const events = await trx.selectFrom('events').select('id').where('id', 'like', 'evt_carry_%').orderBy('id').execute();
          return { workspace, events };
        }),
    );
    expect(result.workspace).toEqual([{ name: 'Carrying' }]);
    // The read of `events` waited for the write before it, so it sees all three.
    expect(result.events.map((e) => e.id)).toEqual(['evt_carry_1', 'evt_carry_2', 'evt_carry_3']);
    expect(sent).toEqual([
      'begin',
      expect.stringMatching(/^insert into "events"/),
      expect.stringMatching(/^with "mr_w0" as \(insert into "events"/),
      expect.stringMatching(/^insert into "events"/),
      expect.stringMatching(/^select "id" from "events"/),
      'commit',
    ]);
    expect(sent[2]).toMatch(/^with "mr_w0" as \(insert into "events" .*\), "mine" as \(select "name" from "workspaces" where "id" = \$6\) select "name" from "mine"$/);
  });

  it('a lease check after the writes carries them, and when it finds no lease the transaction undoes them', async () => {
    const jobId = `job_carry_${Date.now()}`;
    await insertRows(db(), 'jobs', [
      { id: jobId, queue: 'carry-test', workspace_id: workspaceId, payload: '{}', state: 'pending', attempts: 1, max_attempts: 3, run_at: 1, lease_token: 'held', interrupted: 0, last_error: null, group_key: null, dedup_key: null, created_at: 1, updated_at: 1 },
    ]);
    const settle = (token: string, eventId: string) =>
      db()
        .transaction()
        .execute(async (trx) => {
          await insertRows(trx, 'events', [event(eventId, 10)]);
          const settled = await trx.deleteFrom('jobs').where('id', '=', jobId).where('lease_token', '=', token).returning('id').execute();
          if (settled.length === 0) throw new Error('lease lost');
        });
    const lost = await statementsSent(() => settle('not-mine', 'evt_carry_lost').then(() => 'settled', (e: unknown) => String(e)));
    expect(lost.result).toBe('Error: lease lost');
    const carried: unknown = expect.stringMatching(/^with "mr_w0" as \(insert into "events" .*\) delete from "jobs" where "id" = \$\d+ and "lease_token" = \$\d+ returning "id"$/);
    expect(lost.sent).toEqual(['begin', carried, 'rollback']);
    expect(await db().selectFrom('events').select('id').where('id', '=', 'evt_carry_lost').execute()).toEqual([]);

    const held = await statementsSent(() => settle('held', 'evt_carry_held'));
    expect(held.sent).toEqual(['begin', carried, 'commit']);
    expect(await db().selectFrom('events').select('id').where('id', '=', 'evt_carry_held').execute()).toEqual([{ id: 'evt_carry_held' }]);
    expect(await db().selectFrom('jobs').select('id').where('id', '=', jobId).execute()).toEqual([]);
  });

  const job = (id: string, queue: string) => ({
    id,
    queue,
    workspace_id: workspaceId,
    payload: '{}',
    state: 'pending' as const,
    attempts: 0,
    max_attempts: 3,
    run_at: 1,
    lease_token: null,
    interrupted: 0,
    last_error: null,
    group_key: null,
    dedup_key: null,
    created_at: 1,
    updated_at: 1,
  });

  it('a combined statement binds each part\'s parameters in the order the part binds them alone, a carrier\'s own CTEs included', async () => {
    const jobId = `job_order_${Date.now()}`;
    await insertRows(db(), 'jobs', [job(jobId, 'order-test')]);
    const parts: CompiledQuery[] = [];
    const { result, sent, values } = await statementsSent(() =>
      db()
        .transaction()
        .execute(async (trx) => {
          // A prepared write (its kept tree, new values): values, then the ON CONFLICT clause's own.
          await mail().bumpFolder(asWork(trx), workspaceId, mailboxId, 'order', 3, 2);
          const update = deferrableWrite(trx.updateTable('jobs').set({ payload: '{"order":1}', run_at: 77 }).where('id', '=', jobId).where('queue', '=', 'order-test').compile());
          parts.push(update);
          await trx.executeQuery(update);
          const carrier = trx
            .with('mine', (qc) => qc.selectFrom('workspaces').select(['id', 'name']).where('id', '=', workspaceId))
            .selectFrom('mine')
            .select('name')
            .where('name', '<>', 'Nothing')
            .compile();
          parts.push(carrier);
          return (await trx.executeQuery(carrier)).rows;
        }),
    );
    expect(result).toEqual([{ name: 'Carrying' }]);
    expect(sent).toEqual(['begin', expect.stringMatching(/^with "mr_w0" as \(insert into "folder_counts" .*\), "mr_w1" as \(update "jobs" .*\), "mine" as \(select /), 'commit']);
    // The bump's values: the new row's (its modseq 1, bytes, UIDs taken, UIDVALIDITY), then the update's.
    expect(values[1]).toEqual([workspaceId, mailboxId, 'order', 3, 2, 1, 0, 0, expect.any(Number), 3, 2, 0, 0, ...parts[0]!.parameters, ...parts[1]!.parameters]);
    const counts = await db().selectFrom('folder_counts').select(['total', 'unread']).where('mailbox_id', '=', mailboxId).where('folder', '=', 'order').executeTakeFirst();
    expect(counts).toEqual({ total: 3, unread: 2 });
    const saved = await db().selectFrom('jobs').select(['payload', 'run_at']).where('id', '=', jobId).executeTakeFirstOrThrow();
    expect([saved.payload, Number(saved.run_at)]).toEqual(['{"order":1}', 77]);
  });

  it('a recursive carrier keeps its RECURSIVE, the writes first', async () => {
    const { result, sent } = await statementsSent(() =>
      db()
        .transaction()
        .execute(async (trx) => {
          await insertRows(trx, 'events', [event('evt_carry_recursive', 1)]);
          return trx
            .withRecursive('n(i)', (qc) => qc.selectNoFrom(sql<number>`1`.as('i')).unionAll(qc.selectFrom('n').select(sql<number>`i + 1`.as('i')).where('i', '<', 3)))
            .selectFrom('n')
            .select('i')
            .execute();
        }),
    );
    expect(result.map((r) => Number(r.i))).toEqual([1, 2, 3]);
    expect(sent).toEqual(['begin', expect.stringMatching(/^with recursive "mr_w0" as \(insert into "events" .*\), "n"\("i"\) as \(/), 'commit']);
    expect(await db().selectFrom('events').select('id').where('id', '=', 'evt_carry_recursive').execute()).toEqual([{ id: 'evt_carry_recursive' }]);
  });

  it('a statement without a tree (raw SQL) never waits and never carries', async () => {
    const rawInsert = 'insert into "events" ("id", "workspace_id", "type", "payload", "created_at") values ($1, $2, $3, $4, $5)';
    const { sent } = await statementsSent(() =>
      db()
        .transaction()
        .execute(async (trx) => {
          await trx.executeQuery(deferrableWrite(CompiledQuery.raw(rawInsert, ['evt_raw_1', workspaceId, 'message.sent', '{}', 1])));
          await insertRows(trx, 'events', [event('evt_raw_2', 2)]);
          await sql`select 1`.execute(trx);
        }),
    );
    expect(sent).toEqual(['begin', rawInsert, expect.stringMatching(/^insert into "events"/), 'select 1', 'commit']);
    expect((await db().selectFrom('events').select('id').where('id', 'in', ['evt_raw_1', 'evt_raw_2']).orderBy('id').execute()).map((r) => r.id)).toEqual(['evt_raw_1', 'evt_raw_2']);
  });

  it('a write that reads a table a waiting write changes sends that write first, and sees its row', async () => {
    const jobId = `job_reads_${Date.now()}`;
    await insertRows(db(), 'jobs', [job(jobId, 'reads-test')]);
    const { sent } = await statementsSent(() =>
      db()
        .transaction()
        .execute(async (trx) => {
          await insertRows(trx, 'events', [event('evt_read_1', 1)]);
          const mark = trx
            .updateTable('jobs')
            .set({ last_error: 'saw the event' })
            .where('id', '=', jobId)
            .where((eb) => eb.exists(eb.selectFrom('events').select('id').where('id', '=', 'evt_read_1')));
          await trx.executeQuery(deferrableWrite(mark.compile()));
        }),
    );
    expect(sent).toEqual(['begin', expect.stringMatching(/^insert into "events"/), expect.stringMatching(/^update "jobs"/), 'commit']);
    expect(await db().selectFrom('jobs').select('last_error').where('id', '=', jobId).executeTakeFirstOrThrow()).toEqual({ last_error: 'saw the event' });
  });
});
