/** A DNS record a workspace published to the sandbox's DNS server. */
export interface SandboxDnsRecordTable {
  id: string;
  workspace_id: string;
  /** Lower case, no final dot. */
  name: string;
  type: string;
  value: string;
  created_at: number;
}

/** One captured SMTP transaction: what sandbox mode keeps instead of delivering it. */
export interface SandboxMessageTable {
  id: string;
  workspace_id: string;
  /** The outbound message (msg_…) this transaction carried. */
  message_id: string;
  mail_from: string;
  /** JSON: string[], the envelope recipients. */
  recipients_json: string;
  /** JSON: [{address, message_id}], the copies stored in this service's own mailboxes. */
  stored_json: string;
  subject: string;
  size: number;
  raw: Buffer;
  created_at: number;
}

/** A catch-all: mail to an unknown address of `domain` goes to the mailbox. */
export interface SandboxCatchAllTable {
  domain: string;
  workspace_id: string;
  mailbox_id: string;
  created_at: number;
}

/** The sandbox's tables: its DNS records, the outbound mail it captured and its catch-all addresses. */
export interface SandboxTables {
  sandbox_dns_records: SandboxDnsRecordTable;
  sandbox_messages: SandboxMessageTable;
  sandbox_catch_alls: SandboxCatchAllTable;
}
