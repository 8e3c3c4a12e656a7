/**
 * A search as plain data (what a reader thread is posted) and the statements that answer it. The query is parsed
 * and the mailbox looked up before: a task only reads the index and the workspace's messages.
 */
import type { Db } from '../../db/database.js';
import type { DialectInfo } from '../../db/dialect.js';
import { messageRepository, type BoundFilter, type ThreadIdQuery } from './message.repository.js';
import type { SearchNode } from './search-query.js';
import { searchRepository, type SearchPageRow } from './search.repository.js';

export type SearchTask =
  | { kind: 'messages'; workspaceId: string; filter: BoundFilter; node: SearchNode; limit: number; offset: number }
  | { kind: 'threads'; workspaceId: string; mailboxId: string | undefined; label: string | undefined; node: SearchNode; limit: number; offset: number };

type ThreadPage = Awaited<ReturnType<typeof messageRepository.listThreads>>;

export type SearchAnswer = { kind: 'messages'; rows: SearchPageRow[]; total: number } | ({ kind: 'threads' } & ThreadPage);

/** The task's page and its count, on `db` (the process's connection, a transaction, or a reader thread's own). */
export async function executeSearch(db: Db, dialect: DialectInfo, task: SearchTask): Promise<SearchAnswer> {
  if (task.kind === 'messages') {
    const { rows, total } = await searchRepository.searchMessages(db, dialect, task.workspaceId, task.filter, task.node, task.limit, task.offset);
    return { kind: 'messages', rows, total };
  }
  const matching = searchRepository.matchingThreadIds(db, dialect, task.workspaceId, task.node) as unknown as ThreadIdQuery;
  const page = await messageRepository.listThreads(db, task.workspaceId, { mailboxId: task.mailboxId, label: task.label, matching }, task.limit, task.offset);
  return { kind: 'threads', ...page };
}
