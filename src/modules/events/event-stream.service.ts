import type { DialectInfo } from '../../db/dialect.js';
import type { Work } from '../../db/tables.js';
import { DomainError, rateLimited } from '../../lib/errors.js';
import { createFairGate, type Release } from '../../lib/fair-gate.js';
import type { EventStore } from './event.store.js';
import type { EventSignal } from './event-signal.js';
import { createWorkspaceFeed, type EventFollower, type EventSink, type WorkspaceFeed } from './workspace-feed.js';

export type { EventFollower, EventSink, StreamEvent } from './workspace-feed.js';

/** What a stream was opened with: it lives while this still holds (the session live, the member's role unchanged). */
export interface StreamGrant {
  sessionId: string;
  userId: string;
  workspaceId: string;
  role: string;
}

/** Open streams allowed at once: per session, per workspace, in this process. */
export interface StreamCaps {
  perSession: number;
  perWorkspace: number;
  total: number;
}

/** A stream's admission: its slots are held until the follower closes (or `release`, when it never follows). */
export interface StreamTicket {
  /**
   * Follow the workspace's committed events: first those after `lastEventId` (an id the workspace does not have
   * starts at now), then each one as it commits, in stream order, each once.
   */
  follow(lastEventId: string | undefined, sink: EventSink): Promise<EventFollower>;
  release(): void;
}

export interface EventStreamService {
  /** Take a stream's slots: 429 past the session's or the workspace's cap, 503 past the process's. */
  admit(grant: StreamGrant): StreamTicket;
  /** A user's sessions or memberships changed (here or in another process): check that user's streams now. */
  credentialsChanged(userId: string): void;
  /** Check every open stream now (notifications may have been missed). */
  recheckAll(): void;
  /** Streams open in this process, and reads of the events table the streams have made since start. */
  stats(): { open: number; reads: number };
}

/** Seconds a refused client is told to wait: about when a closed stream's slot is free again. */
const RETRY_AFTER_SECONDS = 5;

interface OpenStream {
  grant: StreamGrant;
  sink: EventSink;
}

export function createEventStreamService(deps: {
  work: Work;
  store: Pick<EventStore, 'readAfter' | 'head' | 'heldBack' | 'cursorOf'>;
  dialect: DialectInfo;
  signal: EventSignal;
  caps: StreamCaps;
  /** Every heartbeat writes each stream's ping and checks every stream's grant. */
  heartbeatMs: number;
  /** Which grants still hold, in the order given (the tenancy module answers it). */
  checkGrants: (grants: readonly StreamGrant[]) => Promise<boolean[]>;
  onError?: (err: unknown) => void;
}): EventStreamService {
  const { work, store, dialect, caps } = deps;
  const onError = (err: unknown): void => deps.onError?.(err);
  const gate = createFairGate({ total: caps.total, perKey: caps.perWorkspace });
  const perSession = new Map<string, number>();
  const feeds = new Map<string, WorkspaceFeed>();
  const open = new Set<OpenStream>();
  let reads = 0;
  let beat: NodeJS.Timeout | undefined;
  let sweeping = false;
  const onRead = (): void => void (reads += 1);

  function feedOf(workspaceId: string): WorkspaceFeed {
    let feed = feeds.get(workspaceId);
    if (!feed) {
      const onEmpty = (): void => {
        if (feeds.get(workspaceId) === made) feeds.delete(workspaceId);
      };
      const made = createWorkspaceFeed({ work, store, dialect, signal: deps.signal, onRead, onError, workspaceId, onEmpty });
      feeds.set(workspaceId, (feed = made));
    }
    return feed;
  }

  /** End the streams whose grant no longer holds; a failed check leaves them to the next one. */
  async function check(streams: OpenStream[]): Promise<void> {
    if (streams.length === 0) return;
    try {
      const holds = await deps.checkGrants(streams.map((s) => s.grant));
      streams.forEach((stream, i) => {
        if (!holds[i] && open.has(stream)) stream.sink.end();
      });
    } catch (err) {
      onError(err);
    }
  }

  function heartbeat(): void {
    for (const stream of [...open]) stream.sink.ping();
    if (sweeping) return;
    sweeping = true;
    void check([...open]).finally(() => (sweeping = false));
  }

  function register(stream: OpenStream): () => void {
    open.add(stream);
    if (!beat) {
      beat = setInterval(heartbeat, deps.heartbeatMs);
      beat.unref();
    }
    return () => {
      open.delete(stream);
      if (open.size === 0) {
        clearInterval(beat);
        beat = undefined;
      }
    };
  }

  function take(grant: StreamGrant): Release {
    const held = perSession.get(grant.sessionId) ?? 0;
    if (held >= caps.perSession) {
      throw rateLimited('session_stream_limit', `this session already has ${caps.perSession} open event streams; close one first`, RETRY_AFTER_SECONDS);
    }
    if (gate.activeFor(grant.workspaceId) >= caps.perWorkspace) {
      throw rateLimited('workspace_stream_limit', `this workspace already has ${caps.perWorkspace} open event streams; close one first`, RETRY_AFTER_SECONDS);
    }
    const slot = gate.tryAcquire(grant.workspaceId);
    if (!slot) throw new DomainError('unavailable', 'server_stream_limit', 'the server holds as many event streams as it can; try again later', RETRY_AFTER_SECONDS);
    perSession.set(grant.sessionId, held + 1);
    return () => {
      slot();
      const left = (perSession.get(grant.sessionId) ?? 1) - 1;
      if (left === 0) perSession.delete(grant.sessionId);
      else perSession.set(grant.sessionId, left);
    };
  }

  return {
    admit(grant) {
      const slot = take(grant);
      let released = false;
      const release = (): void => {
        if (released) return;
        released = true;
        slot();
      };
      return {
        release,
        async follow(lastEventId, sink) {
          const unregister = register({ grant, sink });
          try {
            if (lastEventId !== undefined) onRead();
            const start = lastEventId === undefined ? undefined : await store.cursorOf(work, grant.workspaceId, lastEventId);
            const follower = await feedOf(grant.workspaceId).follow(start, sink);
            return {
              resume: () => follower.resume(),
              close() {
                follower.close();
                unregister();
                release();
              },
            };
          } catch (err) {
            unregister();
            release();
            throw err;
          }
        },
      };
    },
    credentialsChanged(userId) {
      void check([...open].filter((s) => s.grant.userId === userId));
    },
    recheckAll() {
      void check([...open]);
    },
    stats: () => ({ open: open.size, reads }),
  };
}
