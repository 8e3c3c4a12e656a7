/**
 * The kept FETCH structures of messages (`message_structures`, README-structures.md): a message's ENVELOPE,
 * BODYSTRUCTURE and BODY bytes, computed from its raw source by the first FETCH that needs them and read instead of
 * the raw source afterwards. Rows of another `STRUCTURE_VERSION` are never read; they are replaced when computed
 * again. Every statement filters by workspace.
 */
import type { SelectQueryBuilder } from 'kysely';
import { copyBinary, type DialectInfo } from '../../db/dialect.js';
import type { Work } from '../../db/tables.js';
import { packStructure, STRUCTURE_VERSION, unpackStructure, type StructureBytes } from '../../lib/imap-message/index.js';
import type { MailTables } from './mail.table.js';
import { mailDb } from './message.store.js';

/** A computed structure to keep: the message's id and its three values' bytes. */
export interface NewStructure extends StructureBytes {
  messageId: string;
}

/**
 * A kept structure's bytes (a row of `withStructure`, on PostgreSQL read by binary COPY) unpacked, or null when there
 * is none of this version. Its parts are views of the one Buffer read, not copies.
 */
export const unpackedStructure = (bytes: Buffer | null): StructureBytes | null => (bytes === null ? null : unpackStructure(bytes));

/**
 * A select over `messages` with the message's kept structure of this version beside it (null when none). A scalar
 * subquery, not a join: PostgreSQL plans it as one primary-key lookup a message whatever its statistics say. As a
 * join, a table of structures computed since the last ANALYZE (the first FETCH after an import) is estimated at one
 * row for the workspace and read whole again for every message: 28 ms for a batch of 100 at 2,000 kept, against 0.6.
 */
export function withStructure<O>(query: SelectQueryBuilder<MailTables, 'messages', O>) {
  return query.select((eb) =>
    eb
      .selectFrom('message_structures')
      .select('message_structures.structure')
      .whereRef('message_structures.message_id', '=', 'messages.id')
      .whereRef('message_structures.workspace_id', '=', 'messages.workspace_id')
      .where('message_structures.version', '=', STRUCTURE_VERSION)
      .as('structure'),
  );
}

export function createStructureStore({ dialect }: { dialect: DialectInfo }) {
  return {
    /** The raw sources of the workspace's messages `ids`, to compute their structures from; a message gone is left out. */
    async structureSources(work: Work, workspaceId: string, ids: readonly string[]): Promise<Map<string, Buffer>> {
      if (ids.length === 0) return new Map();
      const db = mailDb(work);
      const query = db.selectFrom('message_contents').select(['message_id', 'raw']).where('workspace_id', '=', workspaceId).where('message_id', 'in', ids);
      if (dialect.binaryCopy) return new Map((await copyBinary(db, query).execute()).map((r) => [r.text(0), r.bytes(1)]));
      return new Map((await query.execute()).map((r) => [r.message_id, r.raw]));
    },

    /**
     * Keep computed structures, one statement (on the pool, in no transaction): a row of this version already there
     * (another session computed it too) is left as it is; one of an older version is replaced. A message deleted
     * meanwhile fails the foreign key and the statement: the caller treats any failure as "not kept this time".
     */
    async saveStructures(work: Work, workspaceId: string, structures: readonly NewStructure[]): Promise<void> {
      if (structures.length === 0) return;
      const rows = structures.map((s) => ({ message_id: s.messageId, workspace_id: workspaceId, version: STRUCTURE_VERSION, structure: packStructure(s) }));
      await mailDb(work)
        .insertInto('message_structures')
        .values(rows)
        .onConflict((oc) =>
          oc
            .column('message_id')
            .doUpdateSet((eb) => ({ version: eb.ref('excluded.version'), structure: eb.ref('excluded.structure') }))
            .where('message_structures.version', '<', STRUCTURE_VERSION)
            .where('message_structures.workspace_id', '=', workspaceId),
        )
        .execute();
    },
  };
}
