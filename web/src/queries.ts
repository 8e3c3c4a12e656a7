import { queryOptions, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { answerOf, client } from './api';
import type { CrossView } from './router';
import type { Folder, Message, Schema } from './types';

// Every resource the app reads: its query key and its fetch, in one place, as TanStack Query's `queryOptions`. A view
// uses them (`useQuery(webhooksQuery())`) and a change refreshes them by the same key (`webhooksQuery().queryKey`, or
// a prefix of it for every page of a list).

/** Messages on one page of the list. */
export const PAGE_SIZE = 50;
/** Rows of the sent list and of the drafts list. */
export const SENT_PAGE_SIZE = 50;
/** Entries of an admin list shown at once: the API's largest page (docs/api.md, Pagination); the caption says when there are more. */
export const ADMIN_LIST_LIMIT = 500;

type SentItem = Schema<'SentMessage'>;

/** The session of `token` (a new token is a new session, so it is part of the key). */
export const sessionQuery = (token: string | null) =>
  queryOptions({ queryKey: ['session', token], queryFn: () => answerOf(client.GET('/app/api/session')), enabled: token !== null });

/** The mailboxes of the mail app's sidebar, per workspace. */
export const mailboxesQuery = (workspaceId: string | null) =>
  queryOptions({
    queryKey: ['mailboxes', workspaceId],
    queryFn: () => answerOf(client.GET('/app/api/mailboxes')).then((r) => r.mailboxes),
    enabled: workspaceId !== null,
  });

/** The mailboxes of the admin pages (the whole answer; mail events do not refresh it). */
export const adminMailboxesQuery = () => queryOptions({ queryKey: ['mailboxes-admin'], queryFn: () => answerOf(client.GET('/app/api/mailboxes')) });

/** One page of a folder, or of a search (`q`) over every folder of the mailbox. */
export const messagePageQuery = (mailbox: string | null, folder: Folder, q: string, offset: number) =>
  queryOptions({
    queryKey: ['messages', mailbox, folder, q, offset],
    queryFn: () =>
      answerOf(client.GET('/app/api/messages', { params: { query: { mailbox: mailbox ?? undefined, folder: q ? undefined : folder, q: q || undefined, limit: PAGE_SIZE, offset } } })),
    enabled: mailbox !== null,
    placeholderData: (previous) => previous,
  });

/** One page of a list across mailboxes: every inbox, the starred messages, or a label's. Under `['messages']`. */
export const crossPageQuery = (view: CrossView | null, offset: number) =>
  queryOptions({
    queryKey: ['messages', 'cross', view?.kind ?? null, view?.kind === 'label' ? view.label : null, offset],
    queryFn: () => {
      const filter = view?.kind === 'label' ? { label: view.label } : view?.kind === 'starred' ? { flagged: true } : { folder: 'inbox' as const };
      return answerOf(client.GET('/app/api/messages', { params: { query: { ...filter, limit: PAGE_SIZE, offset } } }));
    },
    enabled: view !== null,
    placeholderData: (previous) => previous,
  });

/**
 * The workspace's labels with their colours and counts (GET /app/api/labels, bounded on the server). Under
 * `['messages']`, so every mail event and action (a read, a label) refreshes the sidebar's counts.
 */
export const labelsQuery = () => queryOptions({ queryKey: ['messages', 'labels'], queryFn: () => answerOf(client.GET('/app/api/labels')) });

/** The colour a label is shown in: its own, or the default one. */
export const DEFAULT_LABEL_COLOUR = '#6b7280';

/** Each label's colour by name (the default for one never given a colour). */
export function useLabelColours(): (name: string) => string {
  const labels = useQuery(labelsQuery());
  const colours = new Map((labels.data?.labels ?? []).map((l) => [l.name, l.colour ?? DEFAULT_LABEL_COLOUR]));
  return (name) => colours.get(name) ?? DEFAULT_LABEL_COLOUR;
}

/**
 * The unread messages of one folder of a mailbox, counted by a search (`in:… is:unread`, one row asked for): the
 * mailbox's own counter covers every folder. Under `['messages']`, so every mail event and action refreshes it.
 */
export const unreadCountQuery = (mailbox: string | null, folder: Folder) =>
  queryOptions({
    queryKey: ['messages', 'unread-count', mailbox, folder],
    queryFn: () =>
      answerOf(client.GET('/app/api/messages', { params: { query: { mailbox: mailbox ?? undefined, q: `in:${folder} is:unread`, limit: 1, offset: 0 } } })).then((p) => p.total),
    enabled: mailbox !== null,
  });

/** One message; `markRead` when the user opens it (the reply form reads its source without marking it). */
export const messageQuery = (messageId: string | null, markRead: boolean) =>
  queryOptions({
    queryKey: ['message', messageId],
    queryFn: () =>
      answerOf(client.GET('/app/api/messages/{message_id}', { params: { path: { message_id: messageId ?? '' }, query: markRead ? { mark_read: true } : undefined } })),
    enabled: messageId !== null,
  });

export const threadQuery = (messageId: string | null) =>
  queryOptions({
    queryKey: ['thread', messageId],
    queryFn: () => answerOf(client.GET('/app/api/messages/{message_id}/thread', { params: { path: { message_id: messageId ?? '' } } })),
    enabled: messageId !== null,
  });

export const draftQuery = (id: string | null) =>
  queryOptions({
    queryKey: ['drafts', 'one', id],
    queryFn: () => answerOf(client.GET('/app/api/drafts/{draft_id}', { params: { path: { draft_id: id ?? '' } } })),
    enabled: id !== null,
    // The form owns the draft once loaded; a refetch must not overwrite what is being typed.
    staleTime: Infinity,
    gcTime: 0,
  });

/** The drafts of a mailbox; `['drafts', 'list']` is every mailbox's. */
export const draftsQuery = (mailbox: string | null) =>
  queryOptions({
    queryKey: ['drafts', 'list', mailbox],
    queryFn: () => answerOf(client.GET('/app/api/drafts', { params: { query: { mailbox: mailbox ?? undefined, limit: SENT_PAGE_SIZE } } })),
    enabled: mailbox !== null,
  });

export const sentPageQuery = (mailbox: string | null, offset: number) =>
  queryOptions({
    queryKey: ['sent', 'page', mailbox, offset],
    queryFn: () => answerOf(client.GET('/app/api/sent', { params: { query: { mailbox: mailbox ?? undefined, limit: SENT_PAGE_SIZE, offset } } })),
    enabled: mailbox !== null,
    placeholderData: (previous) => previous,
  });

/**
 * The delivery state of one sent message: its single view carries it, recipient by recipient (GET
 * /app/api/messages/{id}, as an item of GET /app/api/sent); null for a message that was never sent.
 */
async function findSent(message: Message): Promise<SentItem | null> {
  const view = await answerOf(client.GET('/app/api/messages/{message_id}', { params: { path: { message_id: message.message_id } } }));
  const { status, recipients, attempts, last_error, delivery_notification } = view;
  if (status === undefined || recipients === undefined || attempts === undefined || last_error === undefined || delivery_notification === undefined) return null;
  return { ...view, status, recipients, attempts, last_error, delivery_notification };
}

export const sentItemQuery = (message: Message) => queryOptions({ queryKey: ['sent', 'item', message.message_id], queryFn: () => findSent(message) });

// ---- the admin pages ----

export const sendingDomainsQuery = () => queryOptions({ queryKey: ['sending-domains'], queryFn: () => answerOf(client.GET('/app/api/sending-domains')) });
export const serviceTokensQuery = () => queryOptions({ queryKey: ['service-tokens'], queryFn: () => answerOf(client.GET('/app/api/service-tokens')) });
export const apiKeysQuery = () => queryOptions({ queryKey: ['api-keys'], queryFn: () => answerOf(client.GET('/app/api/api-keys')) });
export const appPasswordsQuery = () => queryOptions({ queryKey: ['app-passwords'], queryFn: () => answerOf(client.GET('/app/api/app-passwords')) });
export const membersQuery = () => queryOptions({ queryKey: ['members'], queryFn: () => answerOf(client.GET('/app/api/members')) });
export const retentionQuery = () => queryOptions({ queryKey: ['retention'], queryFn: () => answerOf(client.GET('/app/api/retention')) });
export const webhooksQuery = () => queryOptions({ queryKey: ['webhooks'], queryFn: () => answerOf(client.GET('/app/api/webhooks')) });
/** The workspace's usage beside its quotas (null = unlimited). */
export const usageQuery = () => queryOptions({ queryKey: ['usage'], queryFn: () => answerOf(client.GET('/app/api/usage')) });

export const webhookDeliveriesQuery = (webhookId: string) =>
  queryOptions({
    queryKey: ['webhook-deliveries', webhookId],
    queryFn: () => answerOf(client.GET('/app/api/webhooks/{webhook_id}/deliveries', { params: { path: { webhook_id: webhookId }, query: { limit: 50 } } })),
  });

type ListEntry = Schema<'ListEntry'>;

/** One allow or block list; `['lists']` is every list. */
export const listQuery = (direction: ListEntry['direction'], listType: ListEntry['list_type']) =>
  queryOptions({
    queryKey: ['lists', direction, listType],
    queryFn: () =>
      answerOf(client.GET('/app/api/lists/{direction}/{list_type}', { params: { path: { direction, list_type: listType }, query: { limit: ADMIN_LIST_LIMIT } } })),
  });

/** The suppressions of one reason, or of every reason (''); `['suppressions']` is all of them. */
export const suppressionsQuery = (reason: Schema<'Suppression'>['reason'] | '') =>
  queryOptions({
    queryKey: ['suppressions', reason],
    queryFn: () => answerOf(client.GET('/app/api/suppressions', { params: { query: { limit: ADMIN_LIST_LIMIT, ...(reason ? { reason } : {}) } } })),
  });

/** A page of the audit log: the filters and the cursor (`before`, the previous page's `next_before`) are the key. */
export const auditLogQuery = (filter: { action: string; actor: string }, before: string | undefined) =>
  queryOptions({
    queryKey: ['audit-log', filter.action, filter.actor, before],
    queryFn: () =>
      answerOf(client.GET('/app/api/audit-log', { params: { query: { limit: AUDIT_PAGE_SIZE, action: filter.action || undefined, actor: filter.actor || undefined, before } } })),
    placeholderData: (previous) => previous,
  });
/** Entries on one page of the audit log. */
export const AUDIT_PAGE_SIZE = 50;

// ---- the mail views' hooks ----

export const useMailboxes = (workspaceId: string | null) => useQuery(mailboxesQuery(workspaceId));
export const useMessagePage = (mailbox: string | null, folder: Folder, q: string, offset: number) => useQuery(messagePageQuery(mailbox, folder, q, offset));
export const useMessage = (messageId: string | null) => useQuery(messageQuery(messageId, true));
export const useThread = (messageId: string | null) => useQuery(threadQuery(messageId));

export type MessageAction =
  | { kind: 'move'; folder: Folder }
  | { kind: 'spam' }
  | { kind: 'not-spam' }
  | { kind: 'read'; read: boolean }
  | { kind: 'labels'; add?: string[]; remove?: string[] }
  | { kind: 'flag'; flagged: boolean }
  | { kind: 'delete' };

function run(id: string, action: MessageAction): Promise<unknown> {
  const params = { path: { message_id: id } };
  switch (action.kind) {
    case 'move':
      return answerOf(client.POST('/app/api/messages/{message_id}/move', { params, body: { folder: action.folder } }));
    case 'spam':
      return answerOf(client.POST('/app/api/messages/{message_id}/spam', { params }));
    case 'not-spam':
      return answerOf(client.POST('/app/api/messages/{message_id}/not-spam', { params }));
    case 'read':
      return answerOf(client.POST('/app/api/messages/{message_id}/read', { params, body: { read: action.read } }));
    case 'labels':
      return answerOf(client.POST('/app/api/messages/{message_id}/labels', { params, body: { add: action.add ?? [], remove: action.remove ?? [] } }));
    case 'flag':
      return answerOf(client.POST('/app/api/messages/{message_id}/flags', { params, body: { flagged: action.flagged } }));
    case 'delete':
      return answerOf(client.DELETE('/app/api/messages/{message_id}', { params }));
  }
}

/** Change one message; every view of messages is refreshed afterwards. */
export function useMessageAction() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ id, action }: { id: string; action: MessageAction }) => run(id, action),
    onSettled: () => invalidateMail(client),
  });
}

/** The queries a mail event may change, refetched at once when shown. */
const LIVE_MAIL_KEYS = [['messages'], ['mailboxes'], ['thread'], ['sent']] as const;

export async function invalidateMail(client: ReturnType<typeof useQueryClient>): Promise<void> {
  // A read already in flight may have started before the change this event announces, and an invalidation hands a
  // query without data back that very read: cancel such reads, so the refetches below read after the change.
  await Promise.all(LIVE_MAIL_KEYS.map((queryKey) => client.cancelQueries({ queryKey })));
  await Promise.all([
    ...LIVE_MAIL_KEYS.map((queryKey) => client.invalidateQueries({ queryKey })),
    client.invalidateQueries({ queryKey: ['message'], refetchType: 'none' }),
  ]);
}
