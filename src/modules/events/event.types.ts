/** Event names (docs/api.md). `message.delivered` comes only from a delivery status notification that says so. */
export const EVENT_TYPES = [
  'message.received',
  'message.sent',
  'message.accepted',
  'message.failed',
  'message.delivered',
  'message.bounced',
  'message.rejected',
  'message.complained',
  'message.unsubscribed',
  'message.cancelled',
  'domain.verified',
  'webhook.disabled',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** An event as written to the outbox; `payload` is the exact JSON delivered to subscribers. */
export interface StoredEvent {
  id: string;
  workspaceId: string;
  type: EventType;
  payload: string;
  createdAt: number;
}

export interface EmitInput {
  workspaceId: string;
  type: EventType;
  data: Record<string, unknown>;
}

/**
 * A position in a workspace's event stream. PostgreSQL: (writing transaction id, sequence); SQLite:
 * the rowid in `seq` (its one writer commits in rowid order) and `txid` unused.
 */
export interface FeedCursor {
  txid: string;
  seq: number;
}

/** Stream order of two positions: negative when `a` comes first. */
export function compareCursors(a: FeedCursor, b: FeedCursor): number {
  if (a.txid !== b.txid) return BigInt(a.txid) < BigInt(b.txid) ? -1 : 1;
  return a.seq - b.seq;
}

export interface FeedRow {
  id: string;
  type: string;
  payload: string;
  cursor: FeedCursor;
}

/** An event as a backward walk sees it: enough to decide about it without reading its whole payload. */
export interface PastRow {
  id: string;
  type: string;
  created_at: number;
  /** The payload's first PAYLOAD_HEAD characters: the envelope and the start of `data`. */
  head: string;
  cursor: FeedCursor;
}

/** Characters of the payload `readBefore` returns: past the envelope, into `data`'s first field. */
export const PAYLOAD_HEAD = 256;
