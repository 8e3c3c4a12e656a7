import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asWork, tablesOf, type Work } from '../src/db/tables.js';
import { loadConfig } from '../src/config/config.js';
import type { Database } from '../src/db/schema.js';
import { iso, manualClock } from '../src/lib/clock.js';
import { looksLikeId } from '../src/lib/ids.js';
import type { StoredEvent } from '../src/modules/events/event.types.js';
import { createEventStore } from '../src/modules/events/event.store.js';
import { createEventsService, type EventsService } from '../src/modules/events/events.service.js';
import { createServices, type Services } from '../src/main.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from './helpers/database.js';
import { uniqueQueue } from './helpers/jobs.js';

describe(`events outbox (${TEST_DIALECT})`, () => {
  let database: TestDatabase;
  let services: Services;
  let clock: ReturnType<typeof manualClock>;
  let workspaceId: string;

  beforeAll(async () => {
    database = await createTestDatabase();
    clock = manualClock(Date.UTC(2026, 10, 21, 12, 0, 0, 123));
    services = await createServices(loadConfig({ MAILROOM_DATABASE_URL: database.url, ...database.secretEnv, MAILROOM_LOG_LEVEL: 'silent' }), { clock });
    workspaceId = (await services.tenancy.admin.createWorkspace({ name: 'Events' })).workspace_id;
  });
  afterAll(async () => {
    await services.database.destroy();
    await database.drop();
  });

  const db = () => services.database.db;
  /** Every job of a queue, dead ones included, as the queue shows them. */
  const jobsOf = (name: string) => services.queue.inspect(asWork(db()), { queue: name });
  const eventRow = (id: string) => db().selectFrom('events').select(['id', 'workspace_id', 'type', 'payload', 'created_at']).where('id', '=', id).executeTakeFirst();

  /** A fresh service (subscribers cannot be removed) whose subscriber enqueues one job per event, as webhook fan-out does. */
  function withJobSubscriber(queueName: string): { events: EventsService; seen: Array<{ trx: Work; event: StoredEvent }> } {
    const events = createEventsService({ clock, store: createEventStore({ dialect: services.database.dialect }) });
    const seen: Array<{ trx: Work; event: StoredEvent }> = [];
    events.subscribe(async (trx, event) => {
      seen.push({ trx, event });
      await services.queue.enqueue(trx, { queue: queueName, workspaceId: event.workspaceId, payload: { event_id: event.id } });
    });
    return { events, seen };
  }

  it('stores the event in the caller’s transaction with the exact payload delivered to subscribers', async () => {
    const data = { message_id: 'msg_01jd3k0000000000000000000', to: ['ünïcode@example.com'], nested: { n: 1, ok: true, none: null } };
    const event = await db()
      .transaction()
      .execute((trx) => services.events.emit(asWork(trx), { workspaceId, type: 'message.received', data }));

    expect(looksLikeId(event.id, 'evt')).toBe(true);
    expect(event).toEqual({ id: event.id, workspaceId, type: 'message.received', payload: expect.any(String) as string, createdAt: clock.now() });
    const parsed = JSON.parse(event.payload) as Record<string, unknown>;
    expect(parsed).toEqual({ event_id: event.id, event_type: 'message.received', created_at: iso(clock.now()), workspace_id: workspaceId, data });
    expect(Object.keys(parsed)).toEqual(['event_id', 'event_type', 'created_at', 'workspace_id', 'data']);
    expect(parsed.created_at).toBe('2026-11-21T12:00:00.123Z');

    // The row holds those very bytes: what webhooks sign is what was stored.
    expect(await eventRow(event.id)).toEqual({ id: event.id, workspace_id: workspaceId, type: 'message.received', payload: event.payload, created_at: clock.now() });
  });

  it('gives every event its own evt_ id, in creation order', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      ids.push((await services.events.emit(asWork(db()), { workspaceId, type: 'domain.verified', data: { i } })).id);
      clock.advance(1);
    }
    for (const id of ids) expect(looksLikeId(id, 'evt')).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });

  it('runs subscribers in order, inside the same transaction, and commits their writes with the event', async () => {
    const queueName = uniqueQueue('fanout');
    const { events, seen } = withJobSubscriber(queueName);
    const order: string[] = [];
    events.subscribe(async (trx, event) => {
      order.push('second');
      // The first subscriber's job is already visible here: same transaction.
      const jobs = await services.queue.inspect(trx, { queue: queueName });
      expect(jobs.map((j) => j.payload)).toEqual([{ event_id: event.id }]);
    });
    events.subscribe(async () => {
      order.push('third');
    });

    let transaction: Work | undefined;
    const event = await db()
      .transaction()
      .execute(async (trx) => {
        transaction = asWork(trx);
        return events.emit(transaction, { workspaceId, type: 'message.sent', data: { n: 1 } });
      });

    expect(seen).toHaveLength(1);
    expect(seen[0]!.trx).toBe(transaction);
    expect(seen[0]!.event).toEqual(event);
    expect(order).toEqual(['second', 'third']);
    expect(await eventRow(event.id)).toBeDefined();
    const jobs = await jobsOf(queueName);
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({ workspaceId, state: 'pending' });
    expect(jobs[0]!.payload).toEqual({ event_id: event.id });
  });

  it('rolls back the event and its subscribers’ jobs together when the transaction fails', async () => {
    const queueName = uniqueQueue('fanout');
    const { events, seen } = withJobSubscriber(queueName);
    let emitted: StoredEvent | undefined;
    await expect(
      db()
        .transaction()
        .execute(async (trx) => {
          emitted = await events.emit(asWork(trx), { workspaceId, type: 'message.failed', data: { reason: 'test' } });
          // Both are there inside the transaction…
          expect(await trx.selectFrom('events').select('id').where('id', '=', emitted.id).executeTakeFirst()).toBeDefined();
          expect(await services.queue.inspect(asWork(trx), { queue: queueName })).toHaveLength(1);
          throw new Error('the state change failed');
        }),
    ).rejects.toThrow('the state change failed');
    // …and neither outlives it.
    expect(seen).toHaveLength(1);
    expect(await eventRow(emitted!.id)).toBeUndefined();
    expect(await jobsOf(queueName)).toEqual([]);
  });

  it('a failing subscriber fails the emit, so the producer’s transaction rolls everything back', async () => {
    const queueName = uniqueQueue('fanout');
    const { events, seen } = withJobSubscriber(queueName);
    events.subscribe(async () => {
      throw new Error('subscriber broke');
    });
    await expect(
      db()
        .transaction()
        .execute((trx) => events.emit(asWork(trx), { workspaceId, type: 'message.bounced', data: {} })),
    ).rejects.toThrow('subscriber broke');
    expect(seen).toHaveLength(1);
    expect(await eventRow(seen[0]!.event.id)).toBeUndefined();
    expect(await jobsOf(queueName)).toEqual([]);
  });

  it('refuses an event for a workspace that does not exist, and keeps nothing its subscribers wrote', async () => {
    const events = createEventsService({ clock, store: createEventStore({ dialect: services.database.dialect }) });
    let id = '';
    // On PostgreSQL the event's INSERT may wait to go out with the transaction's next statement
    // (db/write-coalescing.ts), so a subscriber can run before the failure: its writes must go too.
    events.subscribe(async (trx, event) => {
      id = event.id;
      await tablesOf<Database>(trx).insertInto('events').values({ id: `${event.id}_copy`, workspace_id: event.workspaceId, type: event.type, payload: '{}', created_at: 0 }).execute();
    });
    await expect(
      db()
        .transaction()
        .execute((trx) => events.emit(asWork(trx), { workspaceId: 'ws_01jd3k0000000000000000000', type: 'message.received', data: {} })),
    ).rejects.toThrow();
    if (TEST_DIALECT === 'sqlite') expect(id).toBe(''); // the insert failed before any subscriber ran
    expect(await db().selectFrom('events').select('id').where('workspace_id', '=', 'ws_01jd3k0000000000000000000').execute()).toEqual([]);
  });
});
