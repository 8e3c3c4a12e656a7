export interface MailboxTable {
  id: string;
  workspace_id: string;
  /** Lower-case, unique service-wide. */
  address: string;
  description: string;
  /** The web app's signature for messages from this mailbox (HTML); null: none. */
  signature_html?: string | null;
  created_at: number;
  updated_at: number;
}
