/**
 * Labels as the sidebar and the settings list them: the workspace's labels in use (read off the `(workspace_id,
 * label)` index one distinct name at a time) with their counts, and their definitions (a colour). Every count is
 * bounded: a label's messages are counted up to LABEL_COUNT_CAP, its unread ones among the workspace's newest
 * UNREAD_WINDOW unread messages (the partial index `messages_unread_idx`), so a page load costs the same on a mailbox
 * of a hundred messages or of a million.
 */
import { sql } from 'kysely';
import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { mailDb } from './message.store.js';

/** Most labels listed (in use and defined, each). */
export const MAX_LABELS_LISTED = 200;
/** A label's messages are counted up to this many ("1000+"). */
export const LABEL_COUNT_CAP = 1000;
/** Unread counts are taken over this many of the workspace's newest unread messages, outside trash and spam. */
export const UNREAD_WINDOW = 10_000;

export interface LabelSummaryRow {
  name: string;
  colour: string | null;
  defined: boolean;
  messages: number;
  unread: number;
}

export interface LabelSummary {
  labels: LabelSummaryRow[];
  /** True when the workspace has more unread messages than UNREAD_WINDOW: the unread counts are of the newest. */
  unreadCapped: boolean;
  /** LABEL_COUNT_CAP: a label's `messages` stops there. */
  countCap: number;
}

/** The labels in use, in name order, each with its messages counted up to the cap: one index seek per label. */
function usedLabels(work: Work, workspaceId: string) {
  return sql<{ label: string; total: number | string }>`
    WITH RECURSIVE used(label, n) AS (
      SELECT (SELECT min(label) FROM ${sql.table('message_labels')} WHERE workspace_id = ${workspaceId}), 1
      UNION ALL
      SELECT (SELECT min(label) FROM ${sql.table('message_labels')} WHERE workspace_id = ${workspaceId} AND label > used.label), n + 1
      FROM used WHERE used.label IS NOT NULL AND n < ${MAX_LABELS_LISTED}
    )
    SELECT label,
      (SELECT count(*) FROM (SELECT 1 FROM ${sql.table('message_labels')} c WHERE c.workspace_id = ${workspaceId} AND c.label = used.label LIMIT ${LABEL_COUNT_CAP}) capped) AS total
    FROM used WHERE label IS NOT NULL`.execute(mailDb(work));
}

/** Unread messages per label among the newest unread ones (a literal `read = 0`, so both databases take the partial index). */
function unreadLabels(work: Work, workspaceId: string) {
  return sql<{ label: string; unread: number | string }>`
    SELECT l.label, count(*) AS unread
    FROM (SELECT id FROM ${sql.table('messages')} WHERE workspace_id = ${workspaceId} AND read = ${sql.lit(0)} AND folder NOT IN ('trash', 'spam')
          ORDER BY created_at DESC LIMIT ${UNREAD_WINDOW}) u
    JOIN ${sql.table('message_labels')} l ON l.message_id = u.id
    GROUP BY l.label`.execute(mailDb(work));
}

function unreadWindowFull(work: Work, workspaceId: string) {
  return sql<{ n: number | string }>`
    SELECT count(*) AS n FROM (SELECT 1 FROM ${sql.table('messages')} WHERE workspace_id = ${workspaceId} AND read = ${sql.lit(0)} AND folder NOT IN ('trash', 'spam')
          ORDER BY created_at DESC LIMIT ${UNREAD_WINDOW + 1}) u`.execute(mailDb(work));
}

export function createLabelStore({ clock }: { clock: Clock }) {
  return {
    /** The workspace's labels, in use or defined, by name, with their bounded counts. */
    async labelSummary(work: Work, workspaceId: string): Promise<LabelSummary> {
      const [used, unread, window, defined] = await Promise.all([
        usedLabels(work, workspaceId),
        unreadLabels(work, workspaceId),
        unreadWindowFull(work, workspaceId),
        mailDb(work).selectFrom('label_definitions').select(['name', 'colour']).where('workspace_id', '=', workspaceId).orderBy('name').limit(MAX_LABELS_LISTED).execute(),
      ]);
      const byName = new Map<string, LabelSummaryRow>();
      for (const d of defined) byName.set(d.name, { name: d.name, colour: d.colour, defined: true, messages: 0, unread: 0 });
      for (const u of used.rows) {
        const row = byName.get(u.label) ?? { name: u.label, colour: null, defined: false, messages: 0, unread: 0 };
        byName.set(u.label, { ...row, messages: Number(u.total) });
      }
      for (const u of unread.rows) {
        const row = byName.get(u.label);
        if (row) row.unread = Number(u.unread);
      }
      const labels = [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      return { labels, unreadCapped: Number(window.rows[0]?.n ?? 0) > UNREAD_WINDOW, countCap: LABEL_COUNT_CAP };
    },

    /** Define a label or change its colour. */
    async saveLabelColour(work: Work, workspaceId: string, name: string, colour: string): Promise<void> {
      const now = clock.now();
      await mailDb(work)
        .insertInto('label_definitions')
        .values({ workspace_id: workspaceId, name, colour, created_at: now, updated_at: now })
        .onConflict((oc) => oc.columns(['workspace_id', 'name']).doUpdateSet({ colour, updated_at: now }))
        .execute();
    },

    /** How many labels the workspace defined. */
    async labelDefinitionCount(work: Work, workspaceId: string): Promise<number> {
      const row = await mailDb(work).selectFrom('label_definitions').select((eb) => eb.fn.countAll<number | string>().as('n')).where('workspace_id', '=', workspaceId).executeTakeFirst();
      return Number(row?.n ?? 0);
    },

    /** Forget a label's definition; true when there was one. */
    async deleteLabelDefinition(work: Work, workspaceId: string, name: string): Promise<boolean> {
      const result = await mailDb(work).deleteFrom('label_definitions').where('workspace_id', '=', workspaceId).where('name', '=', name).executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    },

    /** Up to `limit` ids of messages carrying the label (any, by the label's index). */
    async messagesWithLabel(work: Work, workspaceId: string, name: string, limit: number): Promise<string[]> {
      const rows = await mailDb(work).selectFrom('message_labels').select('message_id').where('workspace_id', '=', workspaceId).where('label', '=', name).limit(limit).execute();
      return rows.map((r) => r.message_id);
    },
  };
}
