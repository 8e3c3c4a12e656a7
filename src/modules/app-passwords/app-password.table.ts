/**
 * An app password: the credential a mail client (IMAP, SMTP submission) uses for one mailbox, made by one member of
 * the workspace. Only its scrypt hash is kept. It ends with its mailbox, its maker and its workspace (foreign keys),
 * or when revoked (the row is deleted; the audit log keeps the record). Times are epoch milliseconds.
 */
export interface AppPasswordTable {
  id: string;
  workspace_id: string;
  mailbox_id: string;
  /** The member who made it: it stops working when they leave the workspace. */
  user_id: string;
  /** A label for people ("Phone", "Thunderbird at home"). */
  name: string;
  password_hash: string;
  created_at: number;
  /** Written at most once a minute (a mail client logs in often). */
  last_used_at: number | null;
}

/** The app passwords module's table. */
export interface AppPasswordTables {
  app_passwords: AppPasswordTable;
}
