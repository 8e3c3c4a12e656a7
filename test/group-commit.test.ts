import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGroupCommit } from '../src/db/group-commit.js';
import { TEST_DIALECT } from './helpers/database.js';
import { startHarness, type Harness } from './helpers/harness.js';

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
        await trx.insertInto('events').values({ id: `evt_gc_${i}`, workspace_id: workspace.workspace_id, type: 'message.sent', payload: '{}', created_at: i }).execute();
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
});
