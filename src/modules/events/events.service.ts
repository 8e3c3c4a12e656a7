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
  subscribe(subscriber: EventSubscriber): void;
}

/**
 * The transactional outbox: an event is stored with the state change that caused it, never published
 * after commit, so a crash cannot separate the two.
 */
export function createEventsService({ clock, store }: { clock: Clock; store: Pick<EventStore, 'append'> }): EventsService {
  const subscribers: EventSubscriber[] = [];
  return {
    async emit(trx, input, options = {}) {
      const createdAt = clock.now();
      const id = newId('evt');
      const payload = JSON.stringify({
        event_id: id,
        event_type: input.type,
        created_at: iso(createdAt),
        workspace_id: input.workspaceId,
        data: input.data,
      });
      const event: StoredEvent = { id, workspaceId: input.workspaceId, type: input.type, payload, createdAt };
      await store.append(trx, [{ id, workspace_id: input.workspaceId, type: input.type, payload, created_at: createdAt }]);
      if (options.fanOut !== false) for (const subscriber of subscribers) await subscriber(trx, event);
      return event;
    },
    subscribe(subscriber) {
      subscribers.push(subscriber);
    },
  };
}
