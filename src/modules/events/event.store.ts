import { sql, type Kysely } from 'kysely';
import type { DialectInfo } from '../../db/dialect.js';
import { insertRows } from '../../db/prepared.js';
import { deleteWorkspaceBatch } from '../../db/purge.js';
import { tablesOf, type Work } from '../../db/tables.js';
import type { EventTable, EventTables } from './event.table.js';
import { PAYLOAD_HEAD, type FeedCursor, type FeedRow, type PastRow } from './event.types.js';

type Events = Kysely<EventTables>;

/** The events of one workspace after `cursor`, in stream order (decision 230). */
async function readAfter(db: Events, dialect: DialectInfo, workspaceId: string, cursor: FeedCursor, limit: number): Promise<FeedRow[]> {
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
async function heldBack(db: Events, dialect: DialectInfo, workspaceId: string, cursor: FeedCursor): Promise<boolean> {
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
async function cursorOf(db: Events, dialect: DialectInfo, workspaceId: string, eventId: string): Promise<FeedCursor | undefined> {
  const row = await db
    .selectFrom('events')
    .select(dialect.name === 'postgres' ? [sql<string>`txid::text`.as('txid'), sql<number>`seq`.as('seq')] : [sql<string>`'0'`.as('txid'), sql<number>`rowid`.as('seq')])
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', eventId)
    .executeTakeFirst();
  return row ? { txid: row.txid, seq: Number(row.seq) } : undefined;
}

/** The position of "now": every event committed later comes after it. */
async function head(db: Events, dialect: DialectInfo): Promise<FeedCursor> {
  if (dialect.name === 'postgres') {
    // Transactions still running have ids at or above the horizon; whatever they commit follows (horizon, 0).
    const { rows } = await sql<{ txid: string }>`select pg_snapshot_xmin(pg_current_snapshot())::text as txid`.execute(db);
    return { txid: rows[0]!.txid, seq: 0 };
  }
  const row = await db.selectFrom('events').select(sql<number | null>`max(rowid)`.as('seq')).executeTakeFirst();
  return { txid: '0', seq: row?.seq ?? 0 };
}

/**
 * The events of one workspace before `cursor` (or from the newest when null), newest first, in stream order: the
 * same index as `readAfter`, walked backward, so the work is that of the events read, not of the workspace's history.
 */
async function readBefore(db: Events, dialect: DialectInfo, workspaceId: string, cursor: FeedCursor | null, limit: number): Promise<PastRow[]> {
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

/** One event's endpoint-independent part, looked up by its workspace and id. */
export interface EventKey {
  workspaceId: string;
  eventId: string;
}

export interface EventStore {
  /** Write events in the caller's transaction (a deferred write: see db/prepared.ts). */
  append(work: Work, rows: readonly EventTable[]): Promise<void>;
  /** The events of one workspace after `cursor`, in stream order. */
  readAfter(work: Work, workspaceId: string, cursor: FeedCursor, limit: number): Promise<FeedRow[]>;
  /** Whether committed events after `cursor` wait behind a transaction still running (PostgreSQL only). */
  heldBack(work: Work, workspaceId: string, cursor: FeedCursor): Promise<boolean>;
  /** The position of one of the workspace's events, or undefined for an id it does not have. */
  cursorOf(work: Work, workspaceId: string, eventId: string): Promise<FeedCursor | undefined>;
  /** The position of "now": every event committed later comes after it. */
  head(work: Work): Promise<FeedCursor>;
  /** The events of one workspace before `cursor` (or from the newest), newest first, in stream order. */
  readBefore(work: Work, workspaceId: string, cursor: FeedCursor | null, limit: number): Promise<PastRow[]>;
  /** The workspace's event, or undefined. */
  find(work: Work, workspaceId: string, id: string): Promise<Pick<EventTable, 'id' | 'type' | 'payload'> | undefined>;
  /** Several events in one query, each matched by its workspace and id (pairs, so both databases use the primary key). */
  findMany(work: Work, keys: readonly EventKey[]): Promise<Array<Pick<EventTable, 'id' | 'workspace_id' | 'type' | 'payload'>>>;
  /** One batch of a deleted workspace's events (at most `limit`); 0 once none is left. */
  purgeWorkspaceBatch(work: Work, workspaceId: string, limit: number): Promise<number>;
  /**
   * Retention: delete the events created before `cutoff` among the `limit` oldest (by id, which sorts by creation: no
   * index on the time is written per event for this). The number deleted; fewer than `limit` means the walk is done.
   */
  deleteOlderThan(work: Work, cutoff: number, limit: number): Promise<number>;
}

/** The event log: the only code that names `events`. */
export function createEventStore({ dialect }: { dialect: DialectInfo }): EventStore {
  const of = (work: Work) => tablesOf<EventTables>(work);
  return {
    append: (work, rows) => insertRows(of(work), 'events', rows),
    readAfter: (work, workspaceId, cursor, limit) => readAfter(of(work), dialect, workspaceId, cursor, limit),
    heldBack: (work, workspaceId, cursor) => heldBack(of(work), dialect, workspaceId, cursor),
    cursorOf: (work, workspaceId, eventId) => cursorOf(of(work), dialect, workspaceId, eventId),
    head: (work) => head(of(work), dialect),
    readBefore: (work, workspaceId, cursor, limit) => readBefore(of(work), dialect, workspaceId, cursor, limit),
    find: (work, workspaceId, id) => of(work).selectFrom('events').select(['id', 'type', 'payload']).where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst(),
    async findMany(work, keys) {
      if (keys.length === 0) return [];
      return of(work)
        .selectFrom('events')
        .select(['id', 'workspace_id', 'payload', 'type'])
        .where((eb) => eb.or(keys.map((k) => eb.and([eb('id', '=', k.eventId), eb('workspace_id', '=', k.workspaceId)]))))
        .execute();
    },
    purgeWorkspaceBatch: (work, workspaceId, limit) => deleteWorkspaceBatch(of(work), 'events', 'id', workspaceId, limit),
    async deleteOlderThan(work, cutoff, limit) {
      const db = of(work);
      const oldest = db.selectFrom('events').select('id').orderBy('id').limit(limit);
      let due = db.selectFrom('events').select('id').where('id', 'in', oldest).where('created_at', '<', cutoff);
      // Sweeps in several processes take disjoint rows instead of waiting for each other.
      if (dialect.supportsSkipLocked) due = due.forUpdate().skipLocked();
      return Number((await db.deleteFrom('events').where('id', 'in', due).executeTakeFirst()).numDeletedRows);
    },
  };
}
