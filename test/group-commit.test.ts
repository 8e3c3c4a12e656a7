import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGroupCommit } from '../src/db/group-commit.js';
import type { Database } from '../src/db/schema.js';
import { tablesOf, type Work } from '../src/db/tables.js';
import { TEST_DIALECT } from './helpers/database.js';
import { startHarness, type Harness } from './helpers/harness.js';

/** A unit's transaction seen over every table (a test may name any). */
const all = (trx: Work) => tablesOf<Database>(trx);

describe(`group commit (${TEST_DIALECT})`, () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => h.close());

  it('one failing unit fails only itself; the others commit', async () => {
    const commits = createGroupCommit(h.services.database.db);
    const workspace = await h.services.tenancy.admin.createWorkspace({ name: 'G' });
    const units = Array.from({ length: 40 }, (_, i) =>
      commits.run(async (trx) => {
        if (i === 17) throw new Error('unit 17 is bad');
        await all(trx).insertInto('events').values({ id: `evt_gc_${i}`, workspace_id: workspace.workspace_id, type: 'message.sent', payload: '{}', created_at: i }).execute();
        return i * 2;
      }),
    );
    const results = await Promise.allSettled(units);
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(1);
    expect((results[17] as PromiseRejectedResult).reason).toMatchObject({ message: 'unit 17 is bad' });
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : null))).toEqual(Array.from({ length: 40 }, (_, i) => (i === 17 ? null : i * 2)));
    const rows = await h.services.database.db.selectFrom('events').select('id').where('id', 'like', 'evt_gc_%').execute();
    expect(rows).toHaveLength(39);
  });

  it('a unit that takes a connection of its own is refused (it could run twice, and on SQLite it would wait forever)', async () => {
    const commits = createGroupCommit(h.services.database.db);
    const pool = h.services.database.db;
    // Outside the transaction it was given: the development/test assertion stops it before it takes a connection.
    await expect(commits.run(async () => pool.selectFrom('workspaces').select('id').execute())).rejects.toThrow(/took a connection of its own/);
    // Through its transaction, the same read is fine.
    await expect(commits.run(async (trx) => all(trx).selectFrom('workspaces').select('id').execute())).resolves.toBeInstanceOf(Array);
  });

  it('runs concurrent units in far fewer transactions than units', async () => {
    const commits = createGroupCommit(h.services.database.db);
    const seen = new Set<unknown>();
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        commits.run(async (trx) => {
          seen.add(trx);
          return i;
        }),
      ),
    );
    expect(results).toEqual(Array.from({ length: 40 }, (_, i) => i));
    // The first unit starts alone; everything that queued meanwhile shares the next transaction.
    expect(seen.size).toBeLessThanOrEqual(3);
  });

  /** Runs `unit` after `ms` on a timer (timers fire in order of expiry, so this is ordered against the group's wait). */
  const later = <T>(ms: number, unit: () => Promise<T>) =>
    new Promise<T>((resolve, reject) => {
      setTimeout(() => void unit().then(resolve, reject), ms);
    });

  it('a batch waits for an announced unit and takes it along; without the announcement it does not', async () => {
    const commits = createGroupCommit(h.services.database.db);
    const seen: unknown[] = [];
    const withdraw = commits.announce();
    const first = commits.run(async (trx) => seen.push(trx));
    const second = later(1, async () => {
      const done = commits.run(async (trx) => seen.push(trx));
      withdraw();
      return done;
    });
    await Promise.all([first, second]);
    expect(seen).toHaveLength(2);
    expect(seen[0]).toBe(seen[1]);

    // The same two units without an announcement: the first commits alone before the second arrives.
    seen.length = 0;
    const alone = commits.run(async (trx) => seen.push(trx));
    await Promise.all([alone, later(1, () => commits.run(async (trx) => seen.push(trx)))]);
    expect(seen).toHaveLength(2);
    expect(seen[0]).not.toBe(seen[1]);
  });

  it('an announced unit that never comes holds a batch only briefly, and withdrawing twice counts once', async () => {
    const commits = createGroupCommit(h.services.database.db);
    const withdraw = commits.announce();
    const other = commits.announce();
    await expect(commits.run(async () => 'committed without it')).resolves.toBe('committed without it');
    withdraw();
    withdraw();
    // `other` is still announced: a later batch still waits for it (briefly), then commits.
    await expect(commits.run(async () => 'still committed')).resolves.toBe('still committed');
    other();
    const seen: unknown[] = [];
    await Promise.all([commits.run(async (trx) => seen.push(trx)), later(1, () => commits.run(async (trx) => seen.push(trx)))]);
    // Nothing announced any more: no waiting, two transactions.
    expect(seen[0]).not.toBe(seen[1]);
  });

  it('takes waiting units round-robin across workspaces: one with many queued does not go in front of another', async () => {
    const commits = createGroupCommit(h.services.database.db, 4);
    const [f, g] = await Promise.all([h.services.tenancy.admin.createWorkspace({ name: 'F' }), h.services.tenancy.admin.createWorkspace({ name: 'G' })]);
    const order: string[] = [];
    const unit = (workspaceId: string, tag: string, i: number) =>
      commits.run(async (trx) => {
        await all(trx).insertInto('events').values({ id: `evt_fair_${tag}${i}`, workspace_id: workspaceId, type: 'message.sent', payload: '{}', created_at: i }).execute();
        order.push(`${tag}${i}`);
      }, workspaceId);
    // F queues twenty units, then G two, all before the first batch is taken.
    const units = [...Array.from({ length: 20 }, (_, i) => unit(f.workspace_id, 'f', i)), unit(g.workspace_id, 'g', 0), unit(g.workspace_id, 'g', 1)];
    await Promise.all(units);
    // The first batch of four alternates; arrival order would have put G's units after all twenty of F's.
    expect(order.slice(0, 4)).toEqual(['f0', 'g0', 'f1', 'g1']);
    // Each workspace's own units keep their order.
    expect(order.filter((t) => t.startsWith('f'))).toEqual(Array.from({ length: 20 }, (_, i) => `f${i}`));
  });
});
