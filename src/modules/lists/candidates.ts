import type { EntryKind, ListEntryTable, ListType } from './list.table.js';

// What the lists' candidate read gives, and what it says: plain data and a pure function, shared by the lists store
// (which reads the rows) and the sending service (which gets them as part of a send's one sender statement).

/** One row per entry that could match, each telling whether the list direction has an allow list at all. */
export interface CandidateRow {
  /** 0/1 on SQLite, a boolean on PostgreSQL. */
  has_allow: number | boolean;
  /** Null in the one row that comes back when no entry could match. */
  list_type: ListType | null;
  entry: string | null;
  kind: EntryKind | null;
}

/** What the candidate rows say: the entries that could match, and whether an allow list exists. */
export interface Candidates {
  entries: Array<Pick<ListEntryTable, 'list_type' | 'entry' | 'kind'>>;
  hasAllow: boolean;
}

export function candidatesOf(rows: readonly CandidateRow[]): Candidates {
  const entries = rows.flatMap((r) => (r.list_type !== null && r.entry !== null && r.kind !== null ? [{ list_type: r.list_type, entry: r.entry, kind: r.kind }] : []));
  return { entries, hasAllow: rows.some((r) => Boolean(r.has_allow)) };
}
