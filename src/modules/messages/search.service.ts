import type { TenantContext } from '../tenancy/tenancy.types.js';
import { SEARCH_TOTAL_CAP, type Folder, type MessagePage, type MessageSearchQuery, type ThreadView } from './message.types.js';
import { toMessageListView, toThreadView } from './message.views.js';
import { parseSearchQuery } from './search-query.js';
import type { SearchRunner } from './search-runner.js';

export interface ThreadSearchQuery {
  q: string;
  mailbox?: string | undefined;
  label?: string | undefined;
  limit: number;
  offset: number;
}

export interface SearchDeps {
  /** Runs the statements: off the event loop, under the search slots and time limit (search-runner.ts). */
  runner: SearchRunner;
  /** The id of the workspace's mailbox with that address (404 when there is none), or undefined for none given. */
  mailboxId: (tenant: TenantContext, address: string | undefined) => Promise<string | undefined>;
  parseFolder: (value: string) => Folder;
}

/**
 * `total` and `total_capped` of a search answer: its count (up to SEARCH_TOTAL_CAP + 1), capped; a partial count (see
 * the store) is a lower bound, and so is the end of the page it answers.
 */
export function searchTotals(answer: { total: number; partial: boolean }, pageEnd: number): { total: number; total_capped: boolean } {
  const counted = answer.partial ? Math.max(answer.total, pageEnd) : answer.total;
  return counted > SEARCH_TOTAL_CAP ? { total: SEARCH_TOTAL_CAP, total_capped: true } : { total: counted, total_capped: answer.partial };
}

/**
 * Searches: `q` in the search query language, with a list's other filters beside it (all must match).
 * A malformed `q` throws `invalid_query` (400) with the position of the problem. Newest first, like every list.
 */
export function createSearch({ runner, mailboxId, parseFolder }: SearchDeps) {
  return {
    async search(tenant: TenantContext, query: MessageSearchQuery): Promise<MessagePage> {
      const node = parseSearchQuery(query.q);
      const folder = query.folder === undefined ? undefined : parseFolder(query.folder);
      const filter = { mailboxId: await mailboxId(tenant, query.mailbox), folder, label: query.label, threadId: query.thread_id, unread: query.unread };
      const answer = await runner.run({ kind: 'messages', workspaceId: tenant.workspaceId, filter, node, limit: query.limit, offset: query.offset });
      if (answer.kind !== 'messages') throw new Error('a message search answered with threads');
      return { messages: answer.rows.map(toMessageListView), ...searchTotals(answer, query.offset + answer.rows.length), limit: query.limit, offset: query.offset };
    },

    async searchThreads(tenant: TenantContext, query: ThreadSearchQuery): Promise<{ threads: ThreadView[]; total: number; limit: number; offset: number }> {
      const node = parseSearchQuery(query.q);
      const task = { kind: 'threads', workspaceId: tenant.workspaceId, mailboxId: await mailboxId(tenant, query.mailbox), label: query.label, node, limit: query.limit, offset: query.offset } as const;
      const answer = await runner.run(task);
      if (answer.kind !== 'threads') throw new Error('a thread search answered with messages');
      const { rows, total } = answer;
      return { threads: rows.map(toThreadView), total, limit: query.limit, offset: query.offset };
    },
  };
}

export type Search = ReturnType<typeof createSearch>;
