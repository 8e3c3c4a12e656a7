import type { Expression } from 'kysely';
import { preparedQuery } from '../../db/prepared.js';
import { deleteWorkspaceBatch } from '../../db/purge.js';
import { tablesOf, type Work } from '../../db/tables.js';
import { candidatesOf, type CandidateRow, type Candidates } from './candidates.js';
import type { ListDirection, ListEntryTable, ListTables, ListType } from './list.table.js';

export type { CandidateRow, Candidates } from './candidates.js';


/**
 * The entries that could match the given address/domain keys (and every IP entry), one row each, every row telling
 * whether the direction has an allow list at all. The one-row subquery carries "is there an allow list" even when
 * no entry matches (the LEFT JOIN then gives one row of nulls), so the decision takes one statement, not two.
 * A builder, so that a caller may read more in the same statement (a send's sender check); read the rows with
 * `candidatesOf`. It takes any handle (the caller's, typed over whatever it reads beside) and names only `list_entries`.
 * `workspaceId` may be an expression: a RCPT's check finds the workspace by the recipient's mailbox in the same statement.
 */
export function candidatesSelect(handle: Parameters<typeof tablesOf>[0], workspaceId: string | Expression<string>, direction: ListDirection, keys: readonly string[]) {
  const db = tablesOf<ListTables>(handle);
  const allowList = db.selectFrom('list_entries').select('id').where('workspace_id', '=', workspaceId).where('direction', '=', direction).where('list_type', '=', 'allow').limit(1);
  return db
    .selectFrom(db.selectNoFrom((eb) => eb.exists(allowList).as('has_allow')).as('h'))
    .leftJoin('list_entries as c', (join) =>
      join
        .on('c.workspace_id', '=', workspaceId)
        .on('c.direction', '=', direction)
        .on((eb) => eb.or([eb('c.kind', '=', 'ip'), ...(keys.length > 0 ? [eb('c.entry', 'in', keys)] : [])])),
    )
    .select(['h.has_allow', 'c.list_type', 'c.entry', 'c.kind']);
}


// Runs for every RCPT TO (prepared: see db/prepared.ts).
const candidatesQuery = preparedQuery<{ workspaceId: string; direction: ListDirection; keys: readonly string[] }, CandidateRow, ListTables>((db, p) =>
  candidatesSelect(db, p<string>('workspaceId'), p<ListDirection>('direction'), p.list<string>('keys')),
);

/** The allow and block lists' operations; every one filters by workspace. */
export function createListStore() {
  const of = (work: Work) => tablesOf<ListTables>(work);
  return {
    insert: (work: Work, row: ListEntryTable) => of(work).insertInto('list_entries').values(row).execute(),
    list: (work: Work, workspaceId: string, direction: ListDirection, listType: ListType, limit: number, offset: number) =>
      of(work)
        .selectFrom('list_entries')
        .selectAll()
        .where('workspace_id', '=', workspaceId)
        .where('direction', '=', direction)
        .where('list_type', '=', listType)
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(limit)
        .offset(offset)
        .execute(),
    count: async (work: Work, workspaceId: string, direction: ListDirection, listType: ListType) =>
      Number(
        (
          await of(work)
            .selectFrom('list_entries')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('workspace_id', '=', workspaceId)
            .where('direction', '=', direction)
            .where('list_type', '=', listType)
            .executeTakeFirstOrThrow()
        ).n,
      ),
    find: (work: Work, workspaceId: string, direction: ListDirection, listType: ListType, entry: string) =>
      of(work)
        .selectFrom('list_entries')
        .selectAll()
        .where('workspace_id', '=', workspaceId)
        .where('direction', '=', direction)
        .where('list_type', '=', listType)
        .where('entry', '=', entry)
        .executeTakeFirst(),
    delete: (work: Work, workspaceId: string, id: string) =>
      of(work).deleteFrom('list_entries').where('workspace_id', '=', workspaceId).where('id', '=', id).execute(),
    /** Entries that could match (the given address/domain keys, every IP entry), and whether an allow list exists: one statement. */
    candidates: async (work: Work, workspaceId: string, direction: ListDirection, keys: readonly string[]): Promise<Candidates> =>
      candidatesOf(await candidatesQuery(of(work), { workspaceId, direction, keys })),
    /** One batch of a deleted workspace's entries (at most `limit`); 0 once none is left. */
    purgeWorkspaceBatch: (work: Work, workspaceId: string, limit: number) => deleteWorkspaceBatch(of(work), 'list_entries', 'id', workspaceId, limit),
  };
}

export type ListStore = ReturnType<typeof createListStore>;
