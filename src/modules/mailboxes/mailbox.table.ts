export interface MailboxTable {
  id: string;
  workspace_id: string;
  /** Lower-case, unique service-wide. */
  address: string;
  description: string;
  /** Counters kept by the message store in the same transaction as each change. */
  message_count: number;
  unread_count: number;
  created_at: number;
  updated_at: number;
}
