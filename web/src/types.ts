// The session API's objects, as docs/api.md describes them (only the fields the app reads).

export interface Workspace {
  workspace_id: string;
  name: string;
  role: 'owner' | 'admin' | 'member';
}

export interface SessionInfo {
  ok: true;
  expires_at: string;
  user: { user_id: string; email: string };
  workspaces: Workspace[];
  active_workspace_id: string | null;
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
  content_id: string | null;
}

export const FOLDERS = ['inbox', 'archive', 'sent', 'spam', 'trash'] as const;
export type Folder = (typeof FOLDERS)[number];

export interface Message {
  message_id: string;
  mailbox: string;
  direction: 'inbound' | 'outbound';
  folder: Folder;
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
  created_at: string;
  status?: string;
}

export interface FullMessage extends Message {
  text: string | null;
  html: string | null;
  headers: Array<{ name: string; value: string }>;
}

export interface MessagePage {
  messages: Message[];
  total: number;
  total_capped?: boolean;
  limit: number;
  offset: number;
}

export interface Thread {
  thread_id: string;
  mailbox: string;
  subject: string;
  labels: string[];
  message_count: number;
  unread_count: number;
  messages: Message[];
}
