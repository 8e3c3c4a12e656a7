import { insertRows } from '../../db/prepared.js';
import { tablesOf, type Work } from '../../db/tables.js';
import type { AuditLogTable, AuditTables } from './audit.table.js';

/** Which entries a page holds: older than `before` (an audit id), of one action or an action prefix, of one actor. */
export interface AuditFilter {
  before?: string | undefined;
  /** `exact`: the action itself; `prefix`: every action starting with it (`webhook.`). */
  action?: { exact: string } | { prefix: string } | undefined;
  /** An actor id (usr_/key_/tok_…), a kind (operator, system…) or a user's email. */
  actor?: { id: string } | { kind: string } | { email: string } | undefined;
  limit: number;
}

/** The audit log's table: written inside the changing transaction, read newest first, swept by age. */
export function createAuditStore() {
  const of = (work: Work) => tablesOf<AuditTables>(work);
  return {
    /** One entry, in the caller's transaction; nobody reads it back there, so it may travel with the next statement. */
    insert: (work: Work, row: AuditLogTable) => insertRows(of(work), 'audit_log', [row]),

    /** A workspace's entries, newest (highest id) first. */
    page: (work: Work, workspaceId: string, filter: AuditFilter) => {
      let query = of(work).selectFrom('audit_log').selectAll().where('workspace_id', '=', workspaceId);
      if (filter.before !== undefined) query = query.where('id', '<', filter.before);
      const action = filter.action;
      if (action && 'exact' in action) query = query.where('action', '=', action.exact);
      // substr, not LIKE: `_` is a LIKE wildcard, and a PostgreSQL collation may order punctuation unexpectedly.
      if (action && 'prefix' in action) query = query.where((eb) => eb(eb.fn<string>('substr', [eb.ref('action'), eb.val(1), eb.val(action.prefix.length)]), '=', action.prefix));
      const actor = filter.actor;
      if (actor && 'id' in actor) query = query.where('actor_id', '=', actor.id);
      if (actor && 'kind' in actor) query = query.where('actor_kind', '=', actor.kind);
      if (actor && 'email' in actor) query = query.where('actor_email', '=', actor.email);
      return query.orderBy('id', 'desc').limit(filter.limit).execute();
    },

    /** Delete up to `batch` entries made before `cutoff`, oldest first; how many went. */
    deleteBefore: async (work: Work, cutoff: number, batch: number): Promise<number> => {
      const db = of(work);
      const result = await db
        .deleteFrom('audit_log')
        .where('id', 'in', db.selectFrom('audit_log').select('id').where('created_at', '<', cutoff).orderBy('created_at').limit(batch))
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}

export type AuditStore = ReturnType<typeof createAuditStore>;
