// The session API's answers as the client reads them (docs/api.md, contract §3–§6). Only what the
// commands print is listed; `--json` prints the whole answer as it came.

export interface WorkspaceMembership {
  workspace_id: string;
  name: string;
  role: 'owner' | 'admin' | 'member';
}

export interface SessionInfo {
  ok: true;
  expires_at: string;
  user: { user_id: string; email: string };
  workspaces: WorkspaceMembership[];
  active_workspace_id: string | null;
}

export interface LoginAnswer extends SessionInfo {
  session_token: string;
}

export interface Page {
  total: number;
  limit: number;
  offset: number;
}

export interface Mailbox {
  address: string;
  description: string | null;
  created_at: string;
  message_count: number;
  unread_count: number;
}

export interface Address {
  name: string;
  address: string;
}

export interface Attachment {
  attachment_id: string;
  filename: string;
  content_type: string;
  size: number;
  inline: boolean;
}

export interface Message {
  message_id: string;
  mailbox: string;
  direction: 'inbound' | 'outbound';
  folder: string;
  read: boolean;
  labels: string[];
  thread_id: string;
  from: Address | null;
  to: Address[];
  cc: Address[];
  subject: string;
  date: string | null;
  snippet: string;
  size: number;
  attachments: Attachment[];
  auth: { spf: string; dkim: string; dmarc: string };
  internet_message_id: string | null;
  created_at: string;
  status?: string;
}

export interface MessageDetail extends Message {
  text: string | null;
  html: string | null;
  headers: { name: string; value: string }[];
}

export interface Thread {
  thread_id: string;
  mailbox: string;
  subject: string;
  labels: string[];
  message_count: number;
  unread_count: number;
  participants: string[];
  last_message_at: string;
  snippet: string;
}

export interface ThreadDetail extends Thread {
  messages: Message[];
}

export interface Draft {
  draft_id: string;
  mailbox: string;
  to: string[];
  cc: string[];
  bcc: string[];
  subject: string;
  body: string;
  html: string | null;
  in_reply_to: string | null;
  created_at: string;
  updated_at: string;
}

export interface Queued {
  message_id: string;
  status: 'queued';
}

export interface SentMessage extends Message {
  status: string;
  recipients: { address: string; status: string; response: string | null; mx: string | null }[];
  last_error: string | null;
}

export interface ListEntry {
  direction: string;
  list_type: string;
  entry: string;
  kind: string;
  reason: string | null;
  created_at: string;
}

export interface DnsRecord {
  record_name: string;
  record_type: string;
  record_value: string;
}

export interface SendingDomain {
  domain_id: string;
  domain: string;
  status: 'pending' | 'verified';
  dkim: DnsRecord & { selector: string };
  created_at: string;
  verified_at: string | null;
  /** Only in the answer that creates the domain. */
  verification?: DnsRecord;
}

export interface ServiceToken {
  token_id: string;
  name: string;
  scope: string;
  domain_id: string;
  mailbox: string;
  created_at: string;
  last_used_at: string | null;
  /** The credential: only in the answers to create and rotate. */
  token?: string;
}

export interface Webhook {
  webhook_id: string;
  url: string;
  event_types: string[];
  active: boolean;
  has_secret: boolean;
  created_at: string;
  updated_at: string;
}

export interface WebhookDelivery {
  delivery_id: string;
  event_id: string;
  event_type: string;
  attempt: number;
  status_code: number | null;
  error: string | null;
  success: boolean;
  duration_ms: number | null;
  delivered_at: string;
}
