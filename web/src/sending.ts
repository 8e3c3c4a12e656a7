import { useQuery, useQueryClient } from '@tanstack/react-query';
import { api, apiForm, sessionHeaders } from './api';
import type { FullMessage, Message, Schema } from './types';

export type Draft = Schema<'Draft'>;
export type DraftAttachment = Schema<'DraftAttachment'>;

/** The fields a draft is written with; recipients as the comma-separated text of the form. */
export interface DraftFields {
  mailbox: string;
  to: string;
  cc: string;
  bcc: string;
  subject: string;
  body: string;
  in_reply_to: string | null;
}

export type Attempt = Schema<'DeliveryEvent'>;
/** One item of GET /app/api/sent: the list view plus its delivery state (docs/api.md "Delivery status"). */
export type SentItem = Schema<'SentMessage'>;
export type SentPage = Schema<'SentPage'>;
/** The answer of POST /app/api/drafts/{id}/send. */
export type SendAnswer = Schema<'Queued'>;

/** Rows of the sent list and of the drafts list. */
export const SENT_PAGE_SIZE = 50;

const draftPath = (id: string) => `/drafts/${encodeURIComponent(id)}`;

export function draftBody(fields: DraftFields, withRecipients = true): Record<string, unknown> {
  const { to, cc, bcc, ...rest } = fields;
  return withRecipients ? { ...rest, to, cc, bcc } : rest;
}

export const createDraft = (fields: DraftFields, withRecipients = true) =>
  api<Draft>('/drafts', { method: 'POST', body: draftBody(fields, withRecipients) });

export const patchDraft = (id: string, fields: DraftFields, withRecipients = true) =>
  api<Draft>(draftPath(id), { method: 'PATCH', body: draftBody(fields, withRecipients) });

export const deleteDraft = (id: string) => api<{ ok: true }>(draftPath(id), { method: 'DELETE' });

/** Attach files to a draft (multipart: no base64 in the browser); answers the draft with all its files. */
export function uploadAttachments(id: string, files: readonly File[]): Promise<Draft> {
  const form = new FormData();
  for (const file of files) form.append('file', file, file.name);
  return apiForm<Draft>(`${draftPath(id)}/attachments`, form);
}

export const removeAttachment = (id: string, attachmentId: string) =>
  api<Draft>(`${draftPath(id)}/attachments/${encodeURIComponent(attachmentId)}`, { method: 'DELETE' });

/** `sendAt` (ISO 8601): schedule it (docs/api.md "Scheduled send"); without it, it leaves now. */
export const sendDraft = (id: string, sendAt?: string) =>
  api<SendAnswer>(`${draftPath(id)}/send`, { method: 'POST', ...(sendAt === undefined ? {} : { body: { send_at: sendAt } }) });

/** Cancel a scheduled message: it never leaves (409 message_not_scheduled once a worker took it). */
export const cancelScheduled = (id: string) => api<SentItem>(`/messages/${encodeURIComponent(id)}/cancel`, { method: 'POST' });

/**
 * The last save of a page being closed: a normal fetch is cancelled with the page, a keepalive one is not.
 * Without the recipients when they are the reason saves fail, so the text at least is kept.
 */
export function saveOnUnload(id: string, fields: DraftFields, withRecipients: boolean): void {
  void fetch(`/app/api${draftPath(id)}`, {
    method: 'PATCH',
    keepalive: true,
    headers: { ...sessionHeaders(), 'content-type': 'application/json' },
    body: JSON.stringify(draftBody(fields, withRecipients)),
  }).catch(() => undefined);
}

export function useDraft(id: string | null) {
  return useQuery({
    queryKey: ['drafts', 'one', id],
    queryFn: () => api<Draft>(draftPath(id ?? '')),
    enabled: id !== null,
    // The form owns the draft once loaded; a refetch must not overwrite what is being typed.
    staleTime: Infinity,
    gcTime: 0,
  });
}

export function useDrafts(mailbox: string | null) {
  return useQuery({
    queryKey: ['drafts', 'list', mailbox],
    queryFn: () => api<{ drafts: Draft[]; total: number }>('/drafts', { query: { mailbox: mailbox ?? undefined, limit: SENT_PAGE_SIZE } }),
    enabled: mailbox !== null,
  });
}

export function useSourceMessage(id: string | null) {
  return useQuery({
    queryKey: ['message', id],
    queryFn: () => api<FullMessage>(`/messages/${encodeURIComponent(id ?? '')}`),
    enabled: id !== null,
  });
}

export function useSentPage(mailbox: string | null, offset: number) {
  return useQuery({
    queryKey: ['sent', 'page', mailbox, offset],
    queryFn: () => api<SentPage>('/sent', { query: { mailbox: mailbox ?? undefined, limit: SENT_PAGE_SIZE, offset } }),
    enabled: mailbox !== null,
    placeholderData: (previous) => previous,
  });
}

/**
 * The delivery state of one sent message: its single view carries it, recipient by recipient (GET
 * /app/api/messages/{id}, as an item of GET /app/api/sent); null for a message that was never sent.
 */
async function findSent(message: Message): Promise<SentItem | null> {
  const view = await api<Message & Partial<SentItem>>(`/messages/${encodeURIComponent(message.message_id)}`);
  const { status, recipients, attempts, last_error } = view;
  if (status === undefined || recipients === undefined || attempts === undefined || last_error === undefined) return null;
  return { ...view, status, recipients, attempts, last_error };
}

export function useSentItem(message: Message) {
  return useQuery({ queryKey: ['sent', 'item', message.message_id], queryFn: () => findSent(message) });
}

/** Refresh what a draft change touches: the drafts lists (the form keeps its own copy). */
export function useInvalidateDrafts(): () => Promise<void> {
  const client = useQueryClient();
  return () => client.invalidateQueries({ queryKey: ['drafts', 'list'] });
}
