export const LIST_DIRECTIONS = ['inbound', 'outbound'] as const;
export const LIST_TYPES = ['allow', 'block'] as const;
export type ListDirection = (typeof LIST_DIRECTIONS)[number];
export type ListType = (typeof LIST_TYPES)[number];
export type EntryKind = 'address' | 'domain' | 'ip';

export interface ListEntryTable {
  id: string;
  workspace_id: string;
  direction: ListDirection;
  list_type: ListType;
  /** Normalised: lower-case address or domain, or an IP/CIDR in canonical form. */
  entry: string;
  kind: EntryKind;
  reason: string | null;
  created_at: number;
}

/** The lists module's table: allow and block entries per workspace and direction. */
export interface ListTables {
  list_entries: ListEntryTable;
}
