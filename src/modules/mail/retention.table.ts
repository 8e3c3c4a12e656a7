/** A workspace's own retention periods for its `trash` and `spam` folders (no row: the operator's defaults). */
export interface MailRetentionTable {
  workspace_id: string;
  /** Days a message stays in `trash`; null = the operator's default, 0 = kept until deleted by hand. */
  trash_days: number | null;
  /** The same for `spam`. */
  spam_days: number | null;
  updated_at: number;
}
