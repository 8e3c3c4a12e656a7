import type { DialectInfo } from '../../db/dialect.js';
import type { Work } from '../../db/tables.js';
import type { EventStore } from './event.store.js';
import { compareCursors, type FeedCursor, type FeedRow } from './event.types.js';
import type { EventSignal } from './event-signal.js';

/** One event as a stream shows it: `payload` is the JSON webhooks deliver. */
export interface StreamEvent {
  id: string;
  type: string;
  payload: string;
}

/** Where a follower writes. */
export interface EventSink {
  /** Answers false when the receiver is full: nothing more until the follower's `resume`. */
  write(event: StreamEvent): boolean;
  /** A heartbeat: the stream's keep-alive line. */
  ping(): void;
  /** The service ends the stream (its credential no longer holds, or a read failed): close it and the follower. */
  end(): void;
}

export interface EventFollower {
  /** The receiver drained: continue from the table where it stopped. */
  resume(): void;
  close(): void;
}

export interface FeedDeps {
  work: Work;
  store: Pick<EventStore, 'readAfter' | 'head' | 'heldBack'>;
  dialect: DialectInfo;
  signal: EventSignal;
  /** Called before every read of the events table (the service's read counter). */
  onRead: () => void;
  onError: (err: unknown) => void;
}

/** One workspace's live read in this process, shared by its streams. */
export interface WorkspaceFeed {
  /** Follow from just after `start` (a position of this workspace), or from the feed's position (now) when undefined. */
  follow(start: FeedCursor | undefined, sink: EventSink): Promise<EventFollower>;
}

/** Rows per read: what a follower may hand its sink beyond the sink's own bound. */
const BATCH = 100;
/** Re-reads while an older transaction holds committed events back: first and longest wait. */
const HELD_BACK_FIRST_MS = 5;
const HELD_BACK_MAX_MS = 500;
/** The feed looks at the table this often without a signal: the safety net against a lost notification. */
const SAFETY_READ_MS = 15_000;

interface Member {
  /** Every event of the workspace up to here has been handed to this member. */
  cursor: FeedCursor;
  sink: EventSink;
  paused: boolean;
  closed: boolean;
  reading: boolean;
}

/**
 * One read per change for all of a workspace's streams: on each signal the feed reads the rows after its own
 * position once and hands each row to every member that has caught up ("joined"). A member that resumes from
 * an older id, or whose socket filled up, reads alone from its own position until it reaches the feed's, then
 * joins; a row at or before a member's position is never handed to it again (decision 363).
 */
export function createWorkspaceFeed(deps: FeedDeps & { workspaceId: string; onEmpty: () => void }): WorkspaceFeed {
  const { work, store, dialect, workspaceId } = deps;
  const joined = new Set<Member>();
  let members = 0;
  let stopped = false;
  let cursor: FeedCursor = { txid: '0', seq: 0 };
  let running = false;
  let again = false;
  let retry: NodeJS.Timeout | undefined;
  let retryMs = HELD_BACK_FIRST_MS;

  const read = (from: FeedCursor): Promise<FeedRow[]> => {
    deps.onRead();
    return store.readAfter(work, workspaceId, from, BATCH);
  };
  deps.onRead();
  const positioned = store.head(work).then((at) => void (cursor = at));
  // Handled where it is awaited; this keeps an early failure from being reported as unhandled.
  positioned.catch(() => undefined);

  /** Hand one row to every joined member past it; a member whose receiver is full leaves the shared read. */
  function handOut(row: FeedRow): void {
    for (const member of joined) {
      if (compareCursors(row.cursor, member.cursor) <= 0) continue;
      member.cursor = row.cursor;
      if (!member.sink.write(row)) {
        joined.delete(member);
        member.paused = true;
      }
    }
  }

  async function drain(): Promise<void> {
    await positioned;
    for (;;) {
      // Nobody to hand rows to: the feed's position may stay behind, a member that joins later is ahead of it.
      if (stopped || joined.size === 0) return;
      const rows = await read(cursor);
      // No await between moving the position and handing the rows out: a joining member sees both or neither.
      for (const row of rows) {
        cursor = row.cursor;
        handOut(row);
      }
      if (rows.length < BATCH) break;
    }
    if (stopped || retry) return;
    // Only PostgreSQL asks the table whether an older transaction holds events back.
    if (dialect.name === 'postgres') deps.onRead();
    if (await store.heldBack(work, workspaceId, cursor)) {
      retry = setTimeout(() => {
        retry = undefined;
        pump();
      }, retryMs);
      retryMs = Math.min(retryMs * 2, HELD_BACK_MAX_MS);
    } else {
      retryMs = HELD_BACK_FIRST_MS;
    }
  }

  // One shared read at a time; a signal during a read runs one more afterwards.
  function pump(): void {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = true;
    again = false;
    drain()
      .catch((err: unknown) => deps.onError(err))
      .finally(() => {
        running = false;
        if (again) pump();
      });
  }

  /** Read alone from the member's position; false when it stopped (full receiver, or closed). */
  async function readAlone(member: Member): Promise<boolean> {
    for (;;) {
      const rows = await read(member.cursor);
      for (const row of rows) {
        if (member.closed) return false;
        member.cursor = row.cursor;
        if (!member.sink.write(row)) {
          member.paused = true;
          return false;
        }
      }
      if (rows.length < BATCH) return !member.closed;
    }
  }

  /**
   * Alone until the member's position reaches the feed's. Every row up to the feed's position, taken before a
   * read, is committed and visible to that read, so after a complete read the member has them all and is at
   * least there; joining happens in the same turn as that comparison, so no shared read slips in between.
   */
  async function catchUp(member: Member): Promise<void> {
    if (member.reading) return;
    member.reading = true;
    try {
      for (;;) {
        const target = cursor;
        if (!(await readAlone(member))) return;
        if (compareCursors(target, member.cursor) > 0) member.cursor = target;
        if (compareCursors(cursor, member.cursor) <= 0) {
          joined.add(member);
          // A signal heard while nobody had joined was dropped (and on PostgreSQL nobody asked whether events
          // were held back): one shared read now takes up what committed since this member's last read.
          pump();
          return;
        }
      }
    } catch (err) {
      deps.onError(err);
      // The client resumes with Last-Event-ID from what it has.
      if (!member.closed) member.sink.end();
    } finally {
      member.reading = false;
    }
  }

  const unsubscribe = deps.signal.subscribe(workspaceId, pump);
  const safety = setInterval(pump, SAFETY_READ_MS);
  safety.unref();

  function leave(member: Member): void {
    if (member.closed) return;
    member.closed = true;
    joined.delete(member);
    members -= 1;
    if (members > 0) return;
    stopped = true;
    unsubscribe();
    clearInterval(safety);
    clearTimeout(retry);
    deps.onEmpty();
  }

  return {
    async follow(start, sink) {
      const member: Member = { cursor, sink, paused: false, closed: false, reading: false };
      members += 1;
      try {
        await positioned;
      } catch (err) {
        leave(member);
        throw err;
      }
      if (start === undefined) {
        member.cursor = cursor;
        joined.add(member);
      } else {
        member.cursor = start;
        void catchUp(member);
      }
      return {
        resume() {
          if (member.closed || !member.paused) return;
          member.paused = false;
          void catchUp(member);
        },
        close: () => leave(member),
      };
    },
  };
}
