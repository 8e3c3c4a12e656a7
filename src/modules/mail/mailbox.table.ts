export interface MailboxTable {
  id: string;
  workspace_id: string;
  /** Lower-case, unique service-wide. */
  address: string;
  description: string;
  created_at: number;
  updated_at: number;
}
