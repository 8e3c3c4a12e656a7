import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import type { DialectInfo } from '../../db/dialect.js';

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

/** The events of one workspace after `cursor`, in stream order (decision 230). */
export async function readAfter(db: Db, dialect: DialectInfo, workspaceId: string, cursor: FeedCursor, limit: number): Promise<FeedRow[]> {
  if (dialect.name === 'postgres') {
    // Stop at the oldest transaction still running: a row before that point can no longer appear.
    const rows = await db
      .selectFrom('events')
      .select(['id', 'type', 'payload', sql<string>`txid::text`.as('txid'), sql<number>`seq`.as('seq')])
      .where('workspace_id', '=', workspaceId)
      .where(sql<boolean>`(txid, seq) > (${cursor.txid}::xid8, ${cursor.seq}::bigint)`)
      .where(sql<boolean>`txid < pg_snapshot_xmin(pg_current_snapshot())`)
      .orderBy(sql`txid`)
      .orderBy(sql`seq`)
      .limit(limit)
      .execute();
    return rows.map((r) => ({ id: r.id, type: r.type, payload: r.payload, cursor: { txid: r.txid, seq: Number(r.seq) } }));
  }
  const rows = await db
    .selectFrom('events')
    .select(['id', 'type', 'payload', sql<number>`rowid`.as('seq')])
    .where('workspace_id', '=', workspaceId)
    .where(sql<boolean>`rowid > ${cursor.seq}`)
    .orderBy(sql`rowid`)
    .limit(limit)
    .execute();
  return rows.map((r) => ({ id: r.id, type: r.type, payload: r.payload, cursor: { txid: '0', seq: r.seq } }));
}

/** Whether committed events after `cursor` wait behind a transaction still running (PostgreSQL only). */
export async function heldBack(db: Db, dialect: DialectInfo, workspaceId: string, cursor: FeedCursor): Promise<boolean> {
  if (dialect.name !== 'postgres') return false;
  const row = await db
    .selectFrom('events')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where(sql<boolean>`(txid, seq) > (${cursor.txid}::xid8, ${cursor.seq}::bigint)`)
    .where(sql<boolean>`txid >= pg_snapshot_xmin(pg_current_snapshot())`)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** The position of one of the workspace's events, or undefined for an id it does not have. */
export async function cursorOf(db: Db, dialect: DialectInfo, workspaceId: string, eventId: string): Promise<FeedCursor | undefined> {
  const row = await db
    .selectFrom('events')
    .select(dialect.name === 'postgres' ? [sql<string>`txid::text`.as('txid'), sql<number>`seq`.as('seq')] : [sql<string>`'0'`.as('txid'), sql<number>`rowid`.as('seq')])
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', eventId)
    .executeTakeFirst();
  return row ? { txid: row.txid, seq: Number(row.seq) } : undefined;
}

/** The position of "now": every event committed later comes after it. */
export async function head(db: Db, dialect: DialectInfo): Promise<FeedCursor> {
  if (dialect.name === 'postgres') {
    // Transactions still running have ids at or above the horizon; whatever they commit follows (horizon, 0).
    const { rows } = await sql<{ txid: string }>`select pg_snapshot_xmin(pg_current_snapshot())::text as txid`.execute(db);
    return { txid: rows[0]!.txid, seq: 0 };
  }
  const row = await db.selectFrom('events').select(sql<number | null>`max(rowid)`.as('seq')).executeTakeFirst();
  return { txid: '0', seq: row?.seq ?? 0 };
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

/**
 * The events of one workspace before `cursor` (or from the newest when null), newest first, in stream order: the
 * same index as `readAfter`, walked backward, so the work is that of the events read, not of the workspace's history.
 */
export async function readBefore(db: Db, dialect: DialectInfo, workspaceId: string, cursor: FeedCursor | null, limit: number): Promise<PastRow[]> {
  const head = sql<string>`substr(payload, 1, ${sql.lit(PAYLOAD_HEAD)})`.as('head');
  if (dialect.name === 'postgres') {
    let query = db
      .selectFrom('events')
      .select(['id', 'type', 'created_at', head, sql<string>`txid::text`.as('txid'), sql<number>`seq`.as('seq')])
      .where('workspace_id', '=', workspaceId);
    if (cursor) query = query.where(sql<boolean>`(txid, seq) < (${cursor.txid}::xid8, ${cursor.seq}::bigint)`);
    const rows = await query.orderBy(sql`txid`, 'desc').orderBy(sql`seq`, 'desc').limit(limit).execute();
    return rows.map((r) => ({ id: r.id, type: r.type, created_at: Number(r.created_at), head: r.head, cursor: { txid: r.txid, seq: Number(r.seq) } }));
  }
  let query = db.selectFrom('events').select(['id', 'type', 'created_at', head, sql<number>`rowid`.as('seq')]).where('workspace_id', '=', workspaceId);
  if (cursor) query = query.where(sql<boolean>`rowid < ${cursor.seq}`);
  const rows = await query.orderBy(sql`rowid`, 'desc').limit(limit).execute();
  return rows.map((r) => ({ id: r.id, type: r.type, created_at: Number(r.created_at), head: r.head, cursor: { txid: '0', seq: r.seq } }));
}
