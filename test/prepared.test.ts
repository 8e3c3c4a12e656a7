import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertRows, preparedQuery } from '../src/db/prepared.js';
import { TEST_DIALECT } from './helpers/database.js';
import { startHarness, type Harness } from './helpers/harness.js';

/** Statements compiled once per shape and run again with new values (src/db/prepared.ts), on the real database. */
describe(`prepared statements (${TEST_DIALECT})`, () => {
  let h: Harness;
  let workspaceId: string;
  const db = () => h.services.database.db;

  beforeAll(async () => {
    h = await startHarness();
    workspaceId = (await h.services.tenancy.admin.createWorkspace({ name: 'Prepared' })).workspace_id;
  });
  afterAll(async () => h.close());

  const row = (id: string, n: number) => ({ id, workspace_id: workspaceId, type: 'message.sent', payload: `{"n":${n}}`, created_at: n });

  it('binds new values to the cached text of each shape: one row, many rows, rows again', async () => {
    await insertRows(db(), 'events', [row('evt_pa_1', 1)]);
    // Same shape: served from the cache, with these values and not the first call's.
    await insertRows(db(), 'events', [row('evt_pa_2', 2)]);
    // Another shape (three rows), twice.
    await insertRows(db(), 'events', [row('evt_pa_3', 3), row('evt_pa_4', 4), row('evt_pa_5', 5)]);
    await insertRows(db(), 'events', [row('evt_pa_6', 6), row('evt_pa_7', 7), row('evt_pa_8', 8)]);
    const rows = await db().selectFrom('events').select(['id', 'payload', 'created_at']).where('id', 'like', 'evt_pa_%').orderBy('id').execute();
    expect(rows.map((r) => [r.id, r.payload, Number(r.created_at)])).toEqual(Array.from({ length: 8 }, (_, i) => [`evt_pa_${i + 1}`, `{"n":${i + 1}}`, i + 1]));
  });

  it('treats an undefined column as absent, and rows that disagree on their columns as no fixed shape', async () => {
    const entry = (id: string, reason: string | null | undefined) => ({
      id,
      workspace_id: workspaceId,
      direction: 'inbound' as const,
      list_type: 'block' as const,
      entry: `${id}@example.com`,
      kind: 'address' as const,
      created_at: 1,
      ...(reason === undefined ? { reason: undefined } : { reason }),
    });
    await insertRows(db(), 'list_entries', [entry('le_pb_1', 'first')]);
    // `reason: undefined` is another shape (the column is left out), not a NULL bound to the first text.
    await insertRows(db(), 'list_entries', [entry('le_pb_2', undefined)]);
    await insertRows(db(), 'list_entries', [entry('le_pb_3', 'third')]);
    // Rows whose defined columns differ still insert (through Kysely, uncached), each with its own values.
    await insertRows(db(), 'list_entries', [entry('le_pb_4', undefined), entry('le_pb_5', 'fifth'), entry('le_pb_6', null)]);
    const rows = await db().selectFrom('list_entries').select(['id', 'reason']).where('id', 'like', 'le_pb_%').orderBy('id').execute();
    expect(rows).toEqual([
      { id: 'le_pb_1', reason: 'first' },
      { id: 'le_pb_2', reason: null },
      { id: 'le_pb_3', reason: 'third' },
      { id: 'le_pb_4', reason: null },
      { id: 'le_pb_5', reason: 'fifth' },
      { id: 'le_pb_6', reason: null },
    ]);
  });

  it('ignores conflicts only when asked, with the cached text too', async () => {
    await insertRows(db(), 'events', [row('evt_pc_1', 1)], { ignoreConflicts: true });
    await insertRows(db(), 'events', [{ ...row('evt_pc_1', 1), payload: '{"second":true}' }], { ignoreConflicts: true });
    await insertRows(db(), 'events', [{ ...row('evt_pc_1', 1), payload: '{"third":true}' }], { ignoreConflicts: true });
    await expect(insertRows(db(), 'events', [row('evt_pc_1', 1)])).rejects.toThrow(/unique|duplicate/i);
    const rows = await db().selectFrom('events').select(['id', 'payload']).where('id', 'like', 'evt_pc_%').execute();
    expect(rows).toEqual([{ id: 'evt_pc_1', payload: '{"n":1}' }]);
  });

  it('binds named parameters, list parameters of each length, and keeps literal values as compiled', async () => {
    await insertRows(db(), 'events', Array.from({ length: 6 }, (_, i) => row(`evt_pd_${i}`, i)));
    const byIds = preparedQuery<{ workspaceId: string; ids: readonly string[]; after: number }, { id: string }>((q, p) =>
      q
        .selectFrom('events')
        .select('id')
        .where('workspace_id', '=', p<string>('workspaceId'))
        .where('id', 'in', p.list<string>('ids'))
        .where('created_at', '>', p<number>('after'))
        .where('type', '=', 'message.sent')
        .orderBy('id')
        .limit(2),
    );
    const ids = async (list: string[], after: number) => (await byIds(db(), { workspaceId, ids: list, after })).map((r) => r.id);
    expect(await ids(['evt_pd_0', 'evt_pd_1', 'evt_pd_2'], -1)).toEqual(['evt_pd_0', 'evt_pd_1']);
    // Same length, other values: the cached text, bound anew.
    expect(await ids(['evt_pd_3', 'evt_pd_4', 'evt_pd_5'], 3)).toEqual(['evt_pd_4', 'evt_pd_5']);
    // Other lengths are other shapes.
    expect(await ids(['evt_pd_5'], 0)).toEqual(['evt_pd_5']);
    expect(await ids(['evt_pd_1', 'evt_pd_2', 'evt_pd_3', 'evt_pd_4', 'evt_pd_5'], 1)).toEqual(['evt_pd_2', 'evt_pd_3']);
    // The workspace filter is a parameter like the others.
    expect(await byIds(db(), { workspaceId: 'ws_other', ids: ['evt_pd_1'], after: -1 })).toEqual([]);
    // And inside a transaction (the same dialect, so the same cache).
    await db()
      .transaction()
      .execute(async (trx) => expect((await byIds(trx, { workspaceId, ids: ['evt_pd_2', 'evt_pd_3'], after: 2 })).map((r) => r.id)).toEqual(['evt_pd_3']));
  });

  it('leaves out the conditions of parameters not given; each combination is its own statement', async () => {
    await insertRows(db(), 'events', [row('evt_pe_1', 1), { ...row('evt_pe_2', 2), type: 'message.received' }, { ...row('evt_pe_3', 3), type: 'message.received' }]);
    const events = preparedQuery<{ workspaceId: string; type?: string | undefined; after?: number | undefined }, { id: string }>((q, p) => {
      let query = q.selectFrom('events').select('id').where('workspace_id', '=', p<string>('workspaceId')).where('id', 'like', 'evt_pe_%');
      if (p.has('type')) query = query.where('type', '=', p<string>('type'));
      if (p.has('after')) query = query.where('created_at', '>', p<number>('after'));
      return query.orderBy('id');
    });
    const ids = async (params: { type?: string | undefined; after?: number | undefined }) => (await events(db(), { workspaceId, ...params })).map((r) => r.id);
    expect(await ids({})).toEqual(['evt_pe_1', 'evt_pe_2', 'evt_pe_3']);
    expect(await ids({ type: 'message.received' })).toEqual(['evt_pe_2', 'evt_pe_3']);
    expect(await ids({ after: 2 })).toEqual(['evt_pe_3']);
    expect(await ids({ type: 'message.sent', after: 0 })).toEqual(['evt_pe_1']);
    // Given as undefined is the same as not given, and the earlier statements keep their own conditions.
    expect(await ids({ type: undefined, after: undefined })).toEqual(['evt_pe_1', 'evt_pe_2', 'evt_pe_3']);
    expect(await ids({ type: 'message.sent' })).toEqual(['evt_pe_1']);
  });

  it('splits a row list longer than one statement binds (SQLite refuses 32,766 values, PostgreSQL 65,535)', async () => {
    // 14,000 rows of 5 values: 70,000 values, past both limits in one statement.
    const rows = Array.from({ length: 14_000 }, (_, i) => row(`evt_pm_${String(i).padStart(5, '0')}`, i));
    await insertRows(db(), 'events', rows);
    const stored = await db().selectFrom('events').select((eb) => eb.fn.countAll<number>().as('n')).where('id', 'like', 'evt_pm_%').executeTakeFirstOrThrow();
    expect(Number(stored.n)).toBe(14_000);
  });
});
