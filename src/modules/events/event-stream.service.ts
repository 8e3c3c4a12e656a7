import type { Db } from '../../db/database.js';
import type { DialectInfo } from '../../db/dialect.js';
import { cursorOf, head, heldBack, readAfter, type FeedCursor } from './event-feed.repository.js';
import type { EventSignal } from './event-signal.js';

/** One event as a stream shows it: `payload` is the JSON webhooks deliver. */
export interface StreamEvent {
  id: string;
  type: string;
  payload: string;
}

/** Where a follower writes; `write` answers false when the receiver is full (nothing more until `resume`). */
export interface EventSink {
  write(event: StreamEvent): boolean;
}

export interface EventFollower {
  /** The receiver drained: continue from the table where it stopped. */
  resume(): void;
  /** Look at the table again (a heartbeat's safety net against a lost signal). */
  poke(): void;
  close(): void;
}

export interface EventStreamService {
  /**
   * Follow a workspace's committed events: first those after `lastEventId` (an id the workspace does not
   * have starts at now), then each one as it commits, in stream order, each once.
   */
  follow(workspaceId: string, lastEventId: string | undefined, sink: EventSink): Promise<EventFollower>;
}

/** Rows per read: what a follower may hand its sink beyond the sink's own bound. */
const BATCH = 100;
/** Re-reads while an older transaction holds committed events back: first and longest wait. */
const HELD_BACK_FIRST_MS = 5;
const HELD_BACK_MAX_MS = 500;

export function createEventStreamService(deps: { db: Db; dialect: DialectInfo; signal: EventSignal; onError?: (err: unknown) => void }): EventStreamService {
  const { db, dialect, signal } = deps;
  return {
    async follow(workspaceId, lastEventId, sink) {
      const start = lastEventId === undefined ? undefined : await cursorOf(db, dialect, workspaceId, lastEventId);
      let cursor: FeedCursor = start ?? (await head(db, dialect));
      let running = false;
      let again = false;
      let paused = false;
      let closed = false;
      let retry: NodeJS.Timeout | undefined;
      let retryMs = HELD_BACK_FIRST_MS;

      async function drain(): Promise<void> {
        for (;;) {
          const rows = await readAfter(db, dialect, workspaceId, cursor, BATCH);
          for (const row of rows) {
            if (closed) return;
            cursor = row.cursor;
            if (!sink.write({ id: row.id, type: row.type, payload: row.payload })) {
              paused = true;
              return;
            }
          }
          if (rows.length < BATCH) break;
        }
        if (closed || retry) return;
        if (await heldBack(db, dialect, workspaceId, cursor)) {
          retry = setTimeout(() => {
            retry = undefined;
            pump();
          }, retryMs);
          retryMs = Math.min(retryMs * 2, HELD_BACK_MAX_MS);
        } else {
          retryMs = HELD_BACK_FIRST_MS;
        }
      }

      // One read at a time; a signal during a read runs one more afterwards.
      function pump(): void {
        if (closed || paused) return;
        if (running) {
          again = true;
          return;
        }
        running = true;
        again = false;
        drain()
          .catch((err: unknown) => deps.onError?.(err))
          .finally(() => {
            running = false;
            if (again) pump();
          });
      }

      const unsubscribe = signal.subscribe(workspaceId, pump);
      pump();
      return {
        resume() {
          paused = false;
          pump();
        },
        poke: pump,
        close() {
          closed = true;
          unsubscribe();
          clearTimeout(retry);
        },
      };
    },
  };
}
