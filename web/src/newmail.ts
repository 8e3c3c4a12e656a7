
// What a `message.received` event of the live stream says of new mail. Free of the DOM, so the rules of which mail
// deserves a desktop notification are checked without a browser as well.

/** The folders of types.ts FOLDERS, repeated so this file needs none of the app's modules. */
const FOLDERS = ['inbox', 'archive', 'sent', 'spam', 'trash'] as const;
type Folder = (typeof FOLDERS)[number];

/** The part of a stream event read here (events.ts StreamEvent). */
export interface ReceivedEvent {
  type: string;
  data: string;
}

/** What a notification needs of a `message.received` event, when it deserves one. */
export interface NewMail {
  messageId: string;
  mailbox: string;
  folder: Folder;
  sender: string;
  subject: string;
}

interface ReceivedData {
  message_id?: unknown;
  mailbox?: unknown;
  folder?: unknown;
  direction?: unknown;
  subject?: unknown;
  from?: { name?: unknown; address?: unknown } | null;
}

const text = (value: unknown): string => (typeof value === 'string' ? value : '');

/**
 * The new mail an event tells of, or null: only a message that arrived (not a test event), not filed as spam, and
 * not from one of the workspace's own mailboxes (what the user sent to themselves is not news to them).
 */
export function newMailOf(event: ReceivedEvent, ownAddresses: ReadonlySet<string>): NewMail | null {
  if (event.type !== 'message.received') return null;
  let data: ReceivedData;
  try {
    data = ((JSON.parse(event.data) as { data?: ReceivedData }).data ?? {});
  } catch {
    return null;
  }
  const messageId = text(data.message_id);
  const mailbox = text(data.mailbox);
  const folder = FOLDERS.find((f) => f === data.folder);
  if (!messageId.startsWith('msg_') || mailbox === '' || folder === undefined || folder === 'spam' || folder === 'trash') return null;
  if (data.direction !== undefined && data.direction !== 'inbound') return null;
  const address = text(data.from?.address).toLowerCase();
  if (address !== '' && ownAddresses.has(address)) return null;
  const sender = text(data.from?.name) || address || '(no sender)';
  return { messageId, mailbox, folder, sender, subject: text(data.subject) || '(no subject)' };
}
