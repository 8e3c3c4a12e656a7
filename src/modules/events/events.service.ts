import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { iso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import type { EventStore } from './event.store.js';
import type { EmitInput, StoredEvent } from './event.types.js';

/** Runs inside the producer's transaction for every emitted event (webhook fan-out registers here). */
export type EventSubscriber = (trx: Work, event: StoredEvent) => Promise<void>;

export interface EventsService {
  /**
   * Write an event in the caller's transaction and let every subscriber act in that same transaction.
   * `fanOut: false` stores it without calling the subscribers: a synthetic event (a webhook test) whose
   * caller routes it itself.
   */
  emit(trx: Work, input: EmitInput, options?: { fanOut?: boolean }): Promise<StoredEvent>;
  /** `emit` for several events, stored in one statement, in order; the subscribers act on each in turn. */
  emitMany(trx: Work, inputs: readonly EmitInput[]): Promise<StoredEvent[]>;
  subscribe(subscriber: EventSubscriber): void;
}

/**
 * The transactional outbox: an event is stored with the state change that caused it, never published
 * after commit, so a crash cannot separate the two.
 */
export function createEventsService({ clock, store }: { clock: Clock; store: Pick<EventStore, 'append'> }): EventsService {
  const subscribers: EventSubscriber[] = [];

  async function emitAll(trx: Work, inputs: readonly EmitInput[], fanOut: boolean): Promise<StoredEvent[]> {
    const createdAt = clock.now();
    const events = inputs.map((input): StoredEvent => {
      const id = newId('evt');
      const payload = JSON.stringify({ event_id: id, event_type: input.type, created_at: iso(createdAt), workspace_id: input.workspaceId, data: input.data });
      return { id, workspaceId: input.workspaceId, type: input.type, payload, createdAt };
    });
    await store.append(trx, events.map((e) => ({ id: e.id, workspace_id: e.workspaceId, type: e.type, payload: e.payload, created_at: e.createdAt })));
    if (fanOut) for (const event of events) for (const subscriber of subscribers) await subscriber(trx, event);
    return events;
  }

  return {
    async emit(trx, input, options = {}) {
      const [event] = await emitAll(trx, [input], options.fanOut !== false);
      return event!;
    },
    emitMany: (trx, inputs) => emitAll(trx, inputs, true),
    subscribe(subscriber) {
      subscribers.push(subscriber);
    },
  };
}
