import { htmlToText } from '../../lib/mail-text.js';
import type { AttachmentView, MessageListView } from './message.types.js';
import type { ParsedMessage } from './mime.js';

/** Most of the text body a `message.received` event carries, in bytes of UTF-8. */
export const EVENT_TEXT_BYTES = 64 * 1024;
/** Characters of an HTML-only body converted to text: enough for EVENT_TEXT_BYTES however much markup surrounds it. */
const HTML_SOURCE_CHARS = 16 * EVENT_TEXT_BYTES;

/** An attachment as the event lists it: its metadata and the API-key path that downloads its bytes. */
export interface EventAttachment extends AttachmentView {
  download_path: string;
}

export interface ReceivedEventData extends Omit<MessageListView, 'attachments'> {
  /** The text body (or the text of the HTML body when there is no text part), at most EVENT_TEXT_BYTES; null when neither exists. */
  text: string | null;
  /** Whether `text` was cut short. */
  truncated: boolean;
  attachments: EventAttachment[];
}

/**
 * The longest start of `text` whose UTF-8 encoding fits in `maxBytes`, never cutting a character. Only the
 * first `maxBytes` characters are encoded (each is at least one byte), so a huge body costs no more than a short one.
 */
export function cutUtf8(text: string, maxBytes: number): { text: string; truncated: boolean } {
  const head = text.length > maxBytes ? text.slice(0, maxBytes) : text;
  const bytes = Buffer.from(head, 'utf8');
  if (bytes.length <= maxBytes) return { text: head, truncated: head.length < text.length };
  let end = maxBytes;
  // Back off to the lead byte of the character the limit falls in: that character is left out whole.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return { text: bytes.subarray(0, end).toString('utf8'), truncated: true };
}

export interface EventText {
  text: string | null;
  truncated: boolean;
}

/**
 * The body as the event carries it: the text part, else the HTML part's text (as the search index reads it), else
 * null. Computed before the storing transaction, which other deliveries share (an HTML body takes a moment).
 */
export function eventText(parsed: Pick<ParsedMessage, 'text' | 'html'>): EventText {
  if (parsed.text !== null) return cutUtf8(parsed.text, EVENT_TEXT_BYTES);
  if (parsed.html === null) return { text: null, truncated: false };
  const cut = cutUtf8(htmlToText(parsed.html.slice(0, HTML_SOURCE_CHARS)), EVENT_TEXT_BYTES);
  return { text: cut.text, truncated: cut.truncated || parsed.html.length > HTML_SOURCE_CHARS };
}

/**
 * `message.received`'s data: the stored copy's list view plus what a receiver needs to act without calling back
 * (the text body, bounded, and where each attachment downloads). The payload stays bounded: 64 KiB of text and at
 * most MAX_ATTACHMENTS (mime.ts) attachment entries.
 */
export function receivedEventData(view: MessageListView, { text, truncated }: EventText): ReceivedEventData {
  const attachments = view.attachments.map((a) => ({
    ...a,
    download_path: `/messages/${view.message_id}/attachments/${a.attachment_id}`,
  }));
  return { ...view, text, truncated, attachments };
}
