/**
 * A search as plain data (what a reader thread is posted) and the statements that answer it. The query is parsed
 * and the mailbox looked up before: a task only reads the index and the workspace's messages.
 */
import type { Work } from '../../db/tables.js';
import type { MessageFilter, ReceivedMailStore, SearchPageRow, ThreadRow } from '../mail/mail.store.js';
import type { FolderScope, FolderTextField } from '../mail/mail.store.js';
import type { SearchNode } from './search-query.js';

export type SearchTask =
  | { kind: 'messages'; workspaceId: string; filter: MessageFilter; node: SearchNode; limit: number; offset: number }
  | { kind: 'threads'; workspaceId: string; mailboxId: string | undefined; label: string | undefined; node: SearchNode; limit: number; offset: number }
  /** IMAP SEARCH's text key over one folder: the UIDs that match (null: every message). */
  | { kind: 'folder-text'; workspaceId: string; scope: FolderScope; field: FolderTextField; value: string };

export type SearchAnswer = { kind: 'messages'; rows: SearchPageRow[]; total: number; partial: boolean } | { kind: 'threads'; rows: ThreadRow[]; total: number } | { kind: 'uids'; uids: number[] | null };

/** The mail store's searches, which a task runs. */
export type SearchStore = Pick<ReceivedMailStore, 'searchMessages' | 'searchThreads' | 'folderTextUids'>;

/** The task's page and its count, on `work` (the process's connection, a transaction, or a reader thread's own). */
export async function executeSearch(work: Work, store: SearchStore, task: SearchTask): Promise<SearchAnswer> {
  if (task.kind === 'messages') {
    return { kind: 'messages', ...(await store.searchMessages(work, task.workspaceId, task.filter, task.node, task.limit, task.offset)) };
  }
  if (task.kind === 'folder-text') return { kind: 'uids', uids: await store.folderTextUids(work, task.scope, task.field, task.value) };
  const page = await store.searchThreads(work, task.workspaceId, { mailboxId: task.mailboxId, label: task.label }, task.node, task.limit, task.offset);
  return { kind: 'threads', ...page };
}
