import { queryOptions, useQuery, useQueryClient } from '@tanstack/react-query';
import { useSyncExternalStore, type KeyboardEvent } from 'react';
import { answerOf, client } from './api';
import { invalidateMail, PAGE_SIZE } from './queries';
import type { Folder, Schema } from './types';

// Conversations: a folder's list grouped by thread (GET /app/api/threads?folder=…) and the thread page. The choice
// between grouped and one-row-per-message lists is the user's, kept in this browser (per user), as the other view
// preferences of the app are not the server's business.

export type FolderThread = Schema<'Thread'>;
export type ThreadPage = Schema<'ThreadPage'>;

/** Where the list's threads are in the cache; under `['messages']` so every mail event refreshes them with the list. */
export const folderThreadsQuery = (mailbox: string | null, folder: Folder, offset: number) =>
  queryOptions({
    queryKey: ['messages', 'threads', mailbox, folder, offset],
    queryFn: () => answerOf(client.GET('/app/api/threads', { params: { query: { mailbox: mailbox ?? undefined, folder, limit: PAGE_SIZE, offset } } })),
    enabled: mailbox !== null,
    placeholderData: (previous) => previous,
  });

export const threadDetailQuery = (threadId: string) =>
  queryOptions({
    queryKey: ['thread', 'id', threadId],
    queryFn: () => answerOf(client.GET('/app/api/threads/{thread_id}', { params: { path: { thread_id: threadId } } })),
  });

export const useFolderThreads = (mailbox: string | null, folder: Folder, offset: number) => useQuery(folderThreadsQuery(mailbox, folder, offset));

/** A thread id (as the route holds it where a message id may be): ids carry their kind. */
export const isThreadId = (id: string | null): id is string => id !== null && id.startsWith('thr_');

/** What a row opens: a thread of one message opens as that message, a longer one as the thread page. */
export const rowTarget = (t: FolderThread): string => (t.message_count === 1 && t.in_folder ? t.in_folder.message_id : t.thread_id);

// ---- the setting ----

const settingKey = (userId: string) => `mailroom.conversations.${userId}`;
const listeners = new Set<() => void>();

export function setConversations(userId: string, on: boolean): void {
  localStorage.setItem(settingKey(userId), on ? 'on' : 'off');
  for (const l of listeners) l();
}

/** Grouped by conversation unless this user turned it off in this browser. */
export function useConversationSetting(userId: string): boolean {
  const value = useSyncExternalStore(
    (listener) => {
      listeners.add(listener);
      window.addEventListener('storage', listener);
      return () => {
        listeners.delete(listener);
        window.removeEventListener('storage', listener);
      };
    },
    () => localStorage.getItem(settingKey(userId)),
  );
  return value !== 'off';
}

// ---- moving a whole conversation ----

/** Move the thread's messages of `from` to `to` (what e and # do to a conversation row or page). */
export function useMoveThread() {
  const queries = useQueryClient();
  return async (threadId: string, from: Folder, to: Folder): Promise<void> => {
    const thread = await queries.fetchQuery(threadDetailQuery(threadId));
    const ids = thread.messages.filter((m) => m.folder === from).map((m) => m.message_id);
    for (const id of ids) await answerOf(client.POST('/app/api/messages/{message_id}/move', { params: { path: { message_id: id } }, body: { folder: to } }));
    await invalidateMail(queries);
  };
}

// ---- the list's keys ----

/**
 * The keys of a list with one tab stop (WAI-ARIA listbox): Up/Down move, Home/End jump, Enter opens; where rows can
 * be checked, Space and x (Gmail's key) check the selected one, else Space opens too. The window's shortcuts skip a
 * key whose default was prevented, so Enter does not open twice.
 */
export function listKeys(event: KeyboardEvent, selected: number, count: number, select: (index: number) => void, open: () => void, check?: () => void): void {
  const moves: Record<string, number> = { ArrowDown: selected + 1, ArrowUp: selected - 1, Home: 0, End: count - 1 };
  const to = moves[event.key];
  if (to !== undefined) {
    event.preventDefault();
    select(Math.min(Math.max(to, 0), Math.max(count - 1, 0)));
  } else if (check && (event.key === ' ' || event.key === 'x') && !event.ctrlKey && !event.metaKey && !event.altKey) {
    event.preventDefault();
    check();
  } else if (event.key === 'Enter' || event.key === ' ') {
    event.preventDefault();
    open();
  }
}
