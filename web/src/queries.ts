import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api } from './api';
import type { Folder, FullMessage, Mailbox, MessagePage, Thread } from './types';

/** Messages on one page of the list. */
export const PAGE_SIZE = 50;

export function useMailboxes(workspaceId: string | null) {
  return useQuery({
    queryKey: ['mailboxes', workspaceId],
    queryFn: () => api<{ mailboxes: Mailbox[] }>('/mailboxes').then((r) => r.mailboxes),
    enabled: workspaceId !== null,
  });
}

/** One page of a folder, or of a search (`q`) over every folder of the mailbox. */
export function useMessagePage(mailbox: string | null, folder: Folder, q: string, offset: number) {
  return useQuery({
    queryKey: ['messages', mailbox, folder, q, offset],
    queryFn: () =>
      api<MessagePage>('/messages', { query: { mailbox: mailbox ?? undefined, folder: q ? undefined : folder, q: q || undefined, limit: PAGE_SIZE, offset } }),
    enabled: mailbox !== null,
    placeholderData: (previous) => previous,
  });
}

export function useMessage(messageId: string | null) {
  return useQuery({
    queryKey: ['message', messageId],
    queryFn: () => api<FullMessage>(`/messages/${encodeURIComponent(messageId ?? '')}`, { query: { mark_read: true } }),
    enabled: messageId !== null,
  });
}

export function useThread(messageId: string | null) {
  return useQuery({
    queryKey: ['thread', messageId],
    queryFn: () => api<Thread>(`/messages/${encodeURIComponent(messageId ?? '')}/thread`),
    enabled: messageId !== null,
  });
}

export type MessageAction =
  | { kind: 'move'; folder: Folder }
  | { kind: 'spam' }
  | { kind: 'not-spam' }
  | { kind: 'read'; read: boolean }
  | { kind: 'labels'; add?: string[]; remove?: string[] }
  | { kind: 'delete' };

function run(id: string, action: MessageAction): Promise<unknown> {
  const path = `/messages/${encodeURIComponent(id)}`;
  switch (action.kind) {
    case 'move':
      return api(`${path}/move`, { method: 'POST', body: { folder: action.folder } });
    case 'spam':
    case 'not-spam':
      return api(`${path}/${action.kind}`, { method: 'POST' });
    case 'read':
      return api(`${path}/read`, { method: 'POST', body: { read: action.read } });
    case 'labels':
      return api(`${path}/labels`, { method: 'POST', body: { add: action.add ?? [], remove: action.remove ?? [] } });
    case 'delete':
      return api(path, { method: 'DELETE' });
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
