import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asWork } from '../src/db/tables.js';
import { createEventSignal } from '../src/modules/events/event-signal.js';
import { createEventStore } from '../src/modules/events/event.store.js';
import { createWorkspaceFeed, type StreamEvent } from '../src/modules/events/workspace-feed.js';
import { TEST_DIALECT } from './helpers/database.js';
import { createTenant, startHarness, type Harness, type Tenant } from './helpers/harness.js';

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe(`a workspace feed (${TEST_DIALECT})`, () => {
  let h: Harness;
  let f: Tenant;
  let n = 0;

  beforeAll(async () => {
    h = await startHarness();
    f = await createTenant(h, 'F');
  });
  afterAll(() => h.close());

  const emit = async (): Promise<string> => {
    n += 1;
    const event = await h.services.database.db
      .transaction()
      .execute((trx) => h.services.events.emit(asWork(trx), { workspaceId: f.workspaceId, type: 'domain.verified', data: { domain: `f${n}.example` } }));
    return event.id;
  };

  it('a stream that catches up alone gets what committed (and was signalled) between its last read and its join', async () => {
    const { database } = h.services;
    const work = asWork(database.db);
    const real = createEventStore({ dialect: database.dialect });
    const signal = createEventSignal();
    const first = await emit();
    const start = await real.cursorOf(work, f.workspaceId, first);
    // The member's alone read returns; before the member looks at the feed's position again, another event commits
    // and its signal is rung while nobody has joined the feed yet.
    let late: string | undefined;
    const store: typeof real = {
      ...real,
      async readAfter(w, workspaceId, from, limit) {
        const rows = await real.readAfter(w, workspaceId, from, limit);
        if (late === undefined) {
          late = await emit();
          signal.notify(f.workspaceId);
          await settle();
        }
        return rows;
      },
    };
    const feed = createWorkspaceFeed({ work, store, dialect: database.dialect, signal, workspaceId: f.workspaceId, onRead: () => undefined, onError: (err) => { throw err; }, onEmpty: () => undefined });
    const got: StreamEvent[] = [];
    const follower = await feed.follow(start, { write: (e) => got.push(e) > 0, ping: () => undefined, end: () => undefined });
    // Without a read at the join the event waits for the feed's safety read, seconds after this test gives up.
    for (let i = 0; i < 200 && !got.some((e) => e.id === late); i++) await new Promise((r) => setTimeout(r, 10));
    follower.close();
    expect(late).toBeDefined();
    expect(got.map((e) => e.id)).toEqual([late]);
  });
});
