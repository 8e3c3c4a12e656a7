import { useQuery, useQueryClient } from '@tanstack/react-query';
import { KEEP_SESSION, answerOf, client } from './api';
import { SENT_PAGE_SIZE, draftQuery, draftsQuery, messageQuery, sentItemQuery, sentPageQuery } from './queries';
import type { Message, Schema } from './types';

export { SENT_PAGE_SIZE };

export type Draft = Schema<'Draft'>;
export type DraftAttachment = Schema<'DraftAttachment'>;

/** The fields a draft is written with; recipients as the comma-separated text of the form. */
export interface DraftFields {
  mailbox: string;
  to: string;
  cc: string;
  bcc: string;
  subject: string;
  /** The plain-text part: derived from `html` when the message is written in the editor. */
  body: string;
  /** The HTML part; null for a plain-text draft (one from a mail client, or from before the editor). */
  html: string | null;
  in_reply_to: string | null;
}

export type Attempt = Schema<'DeliveryEvent'>;
/** One item of GET /app/api/sent: the list view plus its delivery state (docs/api.md "Delivery status"). */
export type SentItem = Schema<'SentMessage'>;
export type SentPage = Schema<'SentPage'>;
/** The answer of POST /app/api/drafts/{id}/send (`hold_seconds`: a held send, which Undo can take back). */
export type SendAnswer = Schema<'DraftQueued'>;

/** The draft request's body (POST and PATCH take the same fields). */
type DraftBody = Schema<'DraftCreate'> & Schema<'DraftChange'>;

export function draftBody(fields: DraftFields, withRecipients = true): DraftBody {
  const { to, cc, bcc, ...rest } = fields;
  return withRecipients ? { ...rest, to, cc, bcc } : rest;
}

const draftParams = (id: string) => ({ path: { draft_id: id } });

export const createDraft = (fields: DraftFields, withRecipients = true) => answerOf(client.POST('/app/api/drafts', { body: draftBody(fields, withRecipients) }));

export const patchDraft = (id: string, fields: DraftFields, withRecipients = true) =>
  answerOf(client.PATCH('/app/api/drafts/{draft_id}', { params: draftParams(id), body: draftBody(fields, withRecipients) }));

export const deleteDraft = (id: string) => answerOf(client.DELETE('/app/api/drafts/{draft_id}', { params: draftParams(id) }));

/** Attach files to a draft (multipart: no base64 in the browser); answers the draft with all its files. */
export function uploadAttachments(id: string, files: readonly File[], contentId?: string): Promise<Draft> {
  const form = new FormData();
  // A content_id field makes the file part after it inline (the HTML shows it as cid:…).
  if (contentId !== undefined) form.append('content_id', contentId);
  for (const file of files) form.append('file', file, file.name);
  // The generated type names the form's fields; a FormData is sent as it is, the browser writing the Content-Type
  // with its boundary, so it stands in for them.
  const body = form as unknown as Schema<'DraftAttachmentUpload'>;
  return answerOf(client.POST('/app/api/drafts/{draft_id}/attachments', { params: draftParams(id), body }));
}

/** One of the draft's files as bytes (an inline image shown again in the editor after a reload). */
export async function draftFile(id: string, attachmentId: string): Promise<Blob> {
  const { data } = await client.GET('/app/api/drafts/{draft_id}/attachments/{attachment_id}', {
    params: { path: { draft_id: id, attachment_id: attachmentId } }, headers: { accept: null }, parseAs: 'blob',
  });
  return data as Blob;
}

export const removeAttachment = (id: string, attachmentId: string) =>
  answerOf(client.DELETE('/app/api/drafts/{draft_id}/attachments/{attachment_id}', { params: { path: { draft_id: id, attachment_id: attachmentId } } }));

/**
 * `sendAt` (ISO 8601): schedule it (docs/api.md "Scheduled send"); without it, it leaves now, or after the server's
 * undo window with `hold` (docs/api.md "Undo send").
 */
export const sendDraft = (id: string, options: { sendAt?: string | undefined; hold?: boolean } = {}) =>
  answerOf(client.POST('/app/api/drafts/{draft_id}/send', { params: draftParams(id), body: { ...(options.sendAt === undefined ? {} : { send_at: options.sendAt }), ...(options.hold ? { hold: true } : {}) } }));

/** Take a held (or scheduled) message back: it never leaves, its sent copy goes, and this new draft holds it. */
export const undoSend = (id: string) => answerOf(client.POST('/app/api/messages/{message_id}/undo-send', { params: { path: { message_id: id } } }));

/** Cancel a scheduled message: it never leaves (409 message_not_scheduled once a worker took it). */
export const cancelScheduled = (id: string) => answerOf(client.POST('/app/api/messages/{message_id}/cancel', { params: { path: { message_id: id } } }));

/**
 * The last save of a page being closed: a normal fetch is cancelled with the page, a keepalive one is not.
 * Without the recipients when they are the reason saves fail, so the text at least is kept.
 */
export function saveOnUnload(id: string, fields: DraftFields, withRecipients: boolean): void {
  void client
    .PATCH('/app/api/drafts/{draft_id}', { params: draftParams(id), body: draftBody(fields, withRecipients), keepalive: true, headers: { accept: null }, ...KEEP_SESSION })
    .catch(() => undefined);
}

export const useDraft = (id: string | null) => useQuery(draftQuery(id));
export const useSignatures = (enabled: boolean) =>
  useQuery({ queryKey: ['signatures'], queryFn: () => answerOf(client.GET('/app/api/signatures')), enabled, staleTime: 60_000 });
export const useDrafts = (mailbox: string | null) => useQuery(draftsQuery(mailbox));
export const useSourceMessage = (id: string | null) => useQuery(messageQuery(id, false));
export const useSentPage = (mailbox: string | null, offset: number) => useQuery(sentPageQuery(mailbox, offset));
export const useSentItem = (message: Message) => useQuery(sentItemQuery(message));

/** Refresh what a draft change touches: the drafts lists (the form keeps its own copy). */
export function useInvalidateDrafts(): () => Promise<void> {
  const client = useQueryClient();
  return () => client.invalidateQueries({ queryKey: ['drafts', 'list'] });
}
