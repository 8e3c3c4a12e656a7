import type { Work } from '../../db/tables.js';
import { invalid } from '../../lib/errors.js';
import type { MessageRow } from '../mail/mail.store.js';
import type { TenantContext } from '../tenancy/tenancy.types.js';
import { parseFolder, type MessageService, type MessageServiceStore } from './message.service.js';
import { MAX_LABELS_PER_MESSAGE, type Folder, type MessageListQuery } from './message.types.js';
import { lessonOf, type SpamLearning } from './spam-learning.js';

/** Messages one bulk request may name or select, and restore items one undo may carry. */
export const MAX_BULK_MESSAGES = 1000;
/** Messages changed per transaction: a large request never holds one long transaction others wait on. */
const BATCH_SIZE = 100;
/** Threads one selection may name: a page of the conversation list (50) with room to spare. */
export const MAX_BULK_THREADS = 100;
/** Page size when a selection is resolved to ids: a few short reads rather than one long one. */
const RESOLVE_PAGE = 100;

export const BULK_ACTIONS = ['archive', 'spam', 'delete', 'move', 'label', 'read', 'unread', 'flag', 'unflag'] as const;
export type BulkAction = (typeof BULK_ACTIONS)[number];

/** "Every message that matches": the filters of the list routes, without paging. */
export interface BulkSelection {
  mailbox?: string | undefined;
  folder?: string | undefined;
  label?: string | undefined;
  unread?: boolean | undefined;
  q?: string | undefined;
  /** Only these threads' messages (that also match the other filters): a conversation list's checked rows. */
  thread_ids?: string[] | undefined;
}

export interface BulkRequest {
  /** One of BULK_ACTIONS; another answers 400 invalid_action. */
  action: string;
  message_ids?: string[] | undefined;
  selection?: BulkSelection | undefined;
  folder?: string | undefined;
  add?: string[] | undefined;
  remove?: string[] | undefined;
}

/** A message's state as an undo sets it back: each field given is set, the others stay. */
export interface RestoreItem {
  message_id: string;
  folder?: string | undefined;
  read?: boolean | undefined;
  flagged?: boolean | undefined;
  labels?: string[] | undefined;
}

export interface BulkResult {
  message_id: string;
  ok: boolean;
  error?: string;
  /** What the message was before (absent when it is gone for good: a delete from trash). */
  previous?: { folder: Folder; read: boolean; flagged: boolean; labels: string[] };
}

export interface BulkAnswer {
  action: BulkAction | 'restore';
  results: BulkResult[];
  /** The body of `POST …/messages/bulk/restore` that undoes this request (the permanent deletions left out). */
  undo: { items: RestoreItem[] };
}

export interface BulkService {
  apply(tenant: TenantContext, request: BulkRequest): Promise<BulkAnswer>;
  restore(tenant: TenantContext, items: readonly RestoreItem[]): Promise<BulkAnswer>;
}

type Change = (trx: Work, tenant: TenantContext, row: MessageRow) => Promise<{ error?: string; gone?: boolean }>;

const labelsOf = (row: MessageRow): string[] => JSON.parse(row.labels) as string[];

function previousOf(row: MessageRow): NonNullable<BulkResult['previous']> {
  return { folder: parseFolder(row.folder), read: row.read === 1, flagged: row.flagged === 1, labels: labelsOf(row) };
}

/** Bulk organising of stored mail: each message changed as its single route changes it, in bounded batches. */
export function createBulkService({ work, store, messages, learning }: { work: Work; store: MessageServiceStore; messages: Pick<MessageService, 'list' | 'search'>; learning?: SpamLearning | undefined }): BulkService {
  async function moveRow(trx: Work, tenant: TenantContext, row: MessageRow, folder: Folder): Promise<void> {
    await store.moveMessage(trx, tenant.workspaceId, row, folder);
    // rspamd learns from a bulk move as from a single one (spam-learning.ts), through the queue.
    const kind = learning ? lessonOf(row.direction, row.folder, folder) : null;
    if (kind) await learning?.teach(trx, tenant.workspaceId, { messageId: row.id, kind });
  }

  /** Set a message's labels to `target`, as the labels route would with the difference. */
  async function setLabelsTo(trx: Work, tenant: TenantContext, row: MessageRow, target: string[]): Promise<{ error?: string }> {
    const now = labelsOf(row);
    if (target.length > MAX_LABELS_PER_MESSAGE) return { error: 'too_many_labels' };
    const add = target.filter((l) => !now.includes(l));
    const remove = now.filter((l) => !target.includes(l));
    if (add.length === 0 && remove.length === 0) return {};
    await store.changeLabels(trx, tenant.workspaceId, row.id, add, remove);
    await store.labelsChanged(trx, tenant.workspaceId, row.thread_id, [row]);
    return {};
  }

  /** Set a message back to an undo item's state; a field it already has is left alone. */
  async function restoreRow(trx: Work, tenant: TenantContext, found: MessageRow, item: (RestoreItem & { folder?: Folder | undefined }) | undefined): Promise<{ error?: string }> {
    let row = found;
    if (item?.folder !== undefined && item.folder !== row.folder) {
      await moveRow(trx, tenant, row, item.folder);
      // The move renumbers the row in its new folder: later changes need it as it is now.
      row = (await store.findMessage(trx, tenant.workspaceId, row.id)) ?? row;
    }
    if (item?.read !== undefined && item.read !== (row.read === 1)) await store.markRead(trx, tenant.workspaceId, row, item.read);
    if (item?.flagged !== undefined && item.flagged !== (row.flagged === 1)) await store.setFlags(trx, tenant.workspaceId, row, { flagged: item.flagged, answered: undefined });
    return item?.labels === undefined ? {} : setLabelsTo(trx, tenant, row, [...new Set(item.labels)].sort());
  }

  function changeFor(action: BulkAction, request: BulkRequest): Change {
    const move = (folder: Folder): Change => async (trx, tenant, row) => { await moveRow(trx, tenant, row, folder); return {}; };
    const flag = (flagged: boolean): Change => async (trx, tenant, row) => { await store.setFlags(trx, tenant.workspaceId, row, { flagged, answered: undefined }); return {}; };
    const read = (value: boolean): Change => async (trx, tenant, row) => { await store.markRead(trx, tenant.workspaceId, row, value); return {}; };
    switch (action) {
      case 'archive': return move('archive');
      case 'spam': return move('spam');
      case 'move': return move(parseFolder(request.folder ?? ''));
      case 'read': return read(true);
      case 'unread': return read(false);
      case 'flag': return flag(true);
      case 'unflag': return flag(false);
      case 'delete':
        // As a mail client deletes: to trash, where it can be undone; from trash, for good (as DELETE does).
        return async (trx, tenant, row) => {
          if (row.folder !== 'trash') return move('trash')(trx, tenant, row);
          await store.deleteMessage(trx, tenant.workspaceId, row);
          return { gone: true };
        };
      case 'label': {
        const add = [...new Set(request.add ?? [])];
        const remove = new Set(request.remove ?? []);
        return (trx, tenant, row) => {
          const target = [...new Set([...labelsOf(row), ...add])].filter((l) => !remove.has(l)).sort();
          return setLabelsTo(trx, tenant, row, target);
        };
      }
    }
  }

  /** Run `change` on each id, BATCH_SIZE to a transaction; another workspace's id is not found like a missing one. */
  async function run(tenant: TenantContext, ids: readonly string[], change: Change): Promise<BulkResult[]> {
    const results: BulkResult[] = [];
    for (let start = 0; start < ids.length; start += BATCH_SIZE) {
      const batch = ids.slice(start, start + BATCH_SIZE);
      const done = await work.transaction().execute(async (trx) => {
        const out: BulkResult[] = [];
        for (const id of batch) {
          const row = await store.findMessage(trx, tenant.workspaceId, id);
          if (!row) { out.push({ message_id: id, ok: false, error: 'message_not_found' }); continue; }
          const outcome = await change(trx, tenant, row);
          if (outcome.error) out.push({ message_id: id, ok: false, error: outcome.error });
          else out.push({ message_id: id, ok: true, ...(outcome.gone ? {} : { previous: previousOf(row) }) });
        }
        return out;
      });
      results.push(...done);
    }
    return results;
  }

  /**
   * The ids a selection matches, newest first (thread by thread when it names threads); more than MAX_BULK_MESSAGES
   * is refused before anything changes.
   */
  async function resolve(tenant: TenantContext, selection: BulkSelection): Promise<string[]> {
    const threads = selection.thread_ids === undefined ? [undefined] : [...new Set(selection.thread_ids)];
    const ids: string[] = [];
    for (const threadId of threads) {
      const before = ids.length;
      for (let offset = 0; ; offset += RESOLVE_PAGE) {
        const query: MessageListQuery = { mailbox: selection.mailbox, folder: selection.folder, label: selection.label, thread_id: threadId, unread: selection.unread, limit: RESOLVE_PAGE, offset };
        const page = selection.q === undefined ? await messages.list(tenant, query) : await messages.search(tenant, { ...query, q: selection.q });
        if (before + page.total > MAX_BULK_MESSAGES || page.total_capped === true) {
          // Thread by thread, the figure is only known to pass the bound.
          const figure = threadId === undefined ? `${page.total_capped === true ? 'more than ' : ''}${page.total}` : `more than ${MAX_BULK_MESSAGES}`;
          throw invalid('selection_too_large', `the selection matches ${figure} messages; a bulk request takes at most ${MAX_BULK_MESSAGES}, narrow it`);
        }
        ids.push(...page.messages.map((m) => m.message_id));
        if (page.messages.length < RESOLVE_PAGE) break;
      }
    }
    return [...new Set(ids)];
  }

  function checkRequest(request: BulkRequest): BulkAction {
    const action = BULK_ACTIONS.find((a) => a === request.action);
    if (action === undefined) throw invalid('invalid_action', `action must be one of ${BULK_ACTIONS.join(', ')}`);
    if ((request.message_ids === undefined) === (request.selection === undefined)) throw invalid('invalid_request', 'give either message_ids or selection');
    if (request.action === 'move' && request.folder === undefined) throw invalid('invalid_request', 'folder is required for move');
    if (request.action === 'move') parseFolder(request.folder ?? '');
    if (request.action === 'label' && (request.add ?? []).length + (request.remove ?? []).length === 0) throw invalid('invalid_request', 'label needs add or remove');
    if (request.action !== 'move' && request.folder !== undefined) throw invalid('invalid_request', 'folder is only for move');
    if (request.action !== 'label' && (request.add !== undefined || request.remove !== undefined)) throw invalid('invalid_request', 'add and remove are only for label');
    return action;
  }

  const undoOf = (results: BulkResult[]): BulkAnswer['undo'] => ({
    items: results.flatMap((r) => (r.ok && r.previous ? [{ message_id: r.message_id, ...r.previous }] : [])),
  });

  return {
    async apply(tenant, request) {
      const action = checkRequest(request);
      const ids = request.message_ids ? [...new Set(request.message_ids)] : await resolve(tenant, request.selection ?? {});
      const results = await run(tenant, ids, changeFor(action, request));
      return { action, results, undo: undoOf(results) };
    },

    async restore(tenant, items) {
      // A folder is checked before anything changes: one bad item refuses the whole undo.
      const wanted = new Map(items.map((item) => [item.message_id, { ...item, folder: item.folder === undefined ? undefined : parseFolder(item.folder) }]));
      const results = await run(tenant, [...wanted.keys()], (trx, t, row) => restoreRow(trx, t, row, wanted.get(row.id)));
      return { action: 'restore', results, undo: undoOf(results) };
    },
  };
}
