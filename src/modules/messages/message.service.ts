import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import type { DialectInfo } from '../../db/dialect.js';
import type { Clock } from '../../lib/clock.js';
import { invalid, notFound } from '../../lib/errors.js';
import { withoutInvisibleFormat } from '../../lib/mail-text.js';
import { mailboxRepository } from '../mailboxes/mailbox.repository.js';
import type { TenantContext } from '../tenancy/tenancy.types.js';
import { normalizeEmail } from '../tenancy/validation.js';
import { messageRepository as repo, type MessageDetailRow, type MessageFilter, type MessageRow } from './message.repository.js';
import {
  FOLDERS,
  LABEL_PATTERN,
  MAX_LABELS_PER_MESSAGE,
  type AttachmentView,
  type Folder,
  type MessageListQuery,
  type MessagePage,
  type MessageView,
  type ThreadDetailView,
  type ThreadView,
} from './message.types.js';
import { toDeliveryDetail, toMessageListView, toThreadView } from './message.views.js';
import { createSearch, type Search } from './search.service.js';
import type { SearchRunner } from './search-runner.js';

/**
 * A page of messages with its version: what names this exact page while no message of its folders changes
 * (the mailbox's id and the sum of its folders' modseqs, read in the page's own statement), so that the HTTP
 * layer may keep the answer it wrote (transports/http/page-cache.ts explains why a kept page is never stale).
 * Undefined when the page must not be kept: not one mailbox's (a label, a thread, the whole workspace), or
 * showing a delivery still on its way (decision 216). Not part of the answer: the response schema leaves it out.
 */
export interface VersionedMessagePage extends MessagePage {
  version: string | undefined;
}

export interface Download {
  filename: string;
  contentType: string;
  content: Buffer;
}

export interface Stats {
  mailboxes: number;
  messages: number;
  unread: number;
  threads: number;
  folders: Record<Folder, { total: number; unread: number }>;
}

export interface MessageService {
  list(tenant: TenantContext, query: MessageListQuery): Promise<VersionedMessagePage>;
  /**
   * The version `list` would give the same query's page now (one small read), or undefined when such a page is
   * never kept; a missing mailbox throws as `list` does.
   */
  pageVersion(tenant: TenantContext, query: MessageListQuery): Promise<string | undefined>;
  get(tenant: TenantContext, messageId: string, options: { markRead: boolean }): Promise<MessageView>;
  setRead(tenant: TenantContext, messageId: string, read: boolean): Promise<{ ok: true; message_id: string; read: boolean }>;
  move(tenant: TenantContext, messageId: string, folder: string): Promise<{ ok: true; message_id: string; folder: Folder }>;
  remove(tenant: TenantContext, messageId: string): Promise<{ ok: true; message_id: string }>;
  setLabels(tenant: TenantContext, messageId: string, change: { add?: string[] | undefined; remove?: string[] | undefined }): Promise<{ labels: string[] }>;
  threadOf(tenant: TenantContext, messageId: string): Promise<ThreadDetailView>;
  attachments(tenant: TenantContext, messageId: string): Promise<{ attachments: AttachmentView[] }>;
  attachment(tenant: TenantContext, messageId: string, attachmentId: string): Promise<Download>;
  raw(tenant: TenantContext, messageId: string): Promise<Download>;
  stats(tenant: TenantContext): Promise<Stats>;
  listThreads(tenant: TenantContext, query: { mailbox?: string | undefined; label?: string | undefined; limit: number; offset: number }): Promise<{ threads: ThreadView[]; total: number; limit: number; offset: number }>;
  getThread(tenant: TenantContext, threadId: string): Promise<ThreadDetailView>;
  setThreadLabels(tenant: TenantContext, threadId: string, change: { add?: string[] | undefined; remove?: string[] | undefined }): Promise<{ labels: string[] }>;
  /** Messages that match a search query (search.service.ts). */
  search: Search['search'];
  /** Threads with a message that matches a search query. */
  searchThreads: Search['searchThreads'];
}

export function parseFolder(value: string): Folder {
  const folder = FOLDERS.find((f) => f === value);
  if (!folder) throw invalid('invalid_folder', `folder must be one of ${FOLDERS.join(', ')}`);
  return folder;
}

function checkLabels(labels: readonly string[] | undefined): string[] {
  const list = [...new Set(labels ?? [])];
  for (const label of list) {
    if (!LABEL_PATTERN.test(label)) throw invalid('invalid_label', `label '${label}' must be 1–64 characters of a-z 0-9 _ . : -`);
  }
  return list;
}

/** Whether a row's delivery may still change: only `scheduled`, `queued` and `processing` lead anywhere. */
const deliveryMoving = (row: { out_status: string | null }): boolean => row.out_status === 'scheduled' || row.out_status === 'queued' || row.out_status === 'processing';

const messageNotFound = (id: string) => notFound('message_not_found', `no message ${id}`);
const mailboxNotFound = (address: string | undefined) => notFound('mailbox_not_found', `no mailbox ${address}`);

/** Reading and organising stored mail, scoped to the caller's workspace. */
export function createMessageService({ db, clock, dialect, searches }: { db: Db; clock: Clock; dialect: DialectInfo; searches: SearchRunner }): MessageService {
  async function mailboxId(tenant: TenantContext, address: string | undefined): Promise<string | undefined> {
    if (address === undefined) return undefined;
    const normalized = normalizeEmail(address);
    const mailbox = normalized ? await mailboxRepository.findIdByAddress(db, tenant.workspaceId, normalized) : undefined;
    if (!mailbox) throw mailboxNotFound(address);
    return mailbox.id;
  }

  async function findMessage(conn: Db, tenant: TenantContext, messageId: string): Promise<MessageDetailRow> {
    const row = await repo.findMessage(conn, tenant.workspaceId, messageId);
    if (!row) throw messageNotFound(messageId);
    return row;
  }

  /** Flip a message's read flag and keep folder and thread counters true; false when nothing changed. */
  async function applyRead(trx: Db, tenant: TenantContext, row: MessageRow, read: boolean): Promise<boolean> {
    const result = await trx
      .updateTable('messages')
      .set({ read: read ? 1 : 0, updated_at: clock.now() })
      .where('workspace_id', '=', tenant.workspaceId)
      .where('id', '=', row.id)
      .where('read', '=', read ? 0 : 1)
      .executeTakeFirst();
    if (result.numUpdatedRows === 0n) return false;
    const delta = read ? -1 : 1;
    // Lock order everywhere: thread, then folder counters (in folder-name order).
    await trx
      .updateTable('threads')
      .set({ unread_count: sql<number>`unread_count + ${delta}` })
      .where('workspace_id', '=', tenant.workspaceId)
      .where('id', '=', row.thread_id)
      .execute();
    await repo.bumpFolder(trx, tenant.workspaceId, row.mailbox_id, row.folder, 0, delta);
    return true;
  }

  async function refreshThreadLabels(trx: Db, tenant: TenantContext, threadId: string): Promise<void> {
    const labels = await repo.threadLabels(trx, tenant.workspaceId, threadId);
    await repo.updateThread(trx, tenant.workspaceId, threadId, { labels: JSON.stringify(labels), updated_at: clock.now() });
  }

  async function changeLabels(trx: Db, tenant: TenantContext, row: MessageRow, add: string[], remove: string[]): Promise<string[]> {
    await repo.deleteLabels(trx, tenant.workspaceId, row.id, remove);
    await repo.insertLabels(trx, tenant.workspaceId, row.id, add.filter((l) => !remove.includes(l)));
    const labels = await repo.labelsOf(trx, tenant.workspaceId, row.id);
    if (labels.length > MAX_LABELS_PER_MESSAGE) throw invalid('too_many_labels', `a message carries at most ${MAX_LABELS_PER_MESSAGE} labels`);
    await repo.updateMessage(trx, tenant.workspaceId, row.id, { labels: JSON.stringify(labels), updated_at: clock.now() });
    return labels;
  }

  /** Raise the modseq of the folders holding `rows` (whose labels changed; counts stay), in folder-name order. */
  async function touchFolders(trx: Db, tenant: TenantContext, rows: readonly MessageRow[]): Promise<void> {
    const folders = new Map(rows.map((r) => [`${r.mailbox_id}\u0000${r.folder}`, r]));
    for (const key of [...folders.keys()].sort()) {
      const row = folders.get(key)!;
      await repo.bumpFolder(trx, tenant.workspaceId, row.mailbox_id, row.folder, 0, 0);
    }
  }

  async function threadDetail(tenant: TenantContext, threadId: string): Promise<ThreadDetailView> {
    const thread = await repo.findThread(db, tenant.workspaceId, threadId);
    if (!thread) throw notFound('thread_not_found', `no thread ${threadId}`);
    const messages = await repo.threadMessages(db, tenant.workspaceId, threadId);
    return { ...toThreadView(thread), messages: messages.map(toMessageListView) };
  }

  /** The mailbox (normalised address) whose folders alone decide the page: none with a label or thread filter. */
  function singleMailbox(query: MessageListQuery): string | undefined {
    if (query.label !== undefined || query.thread_id !== undefined || query.mailbox === undefined) return undefined;
    const address = normalizeEmail(query.mailbox);
    if (address === null) throw mailboxNotFound(query.mailbox);
    return address;
  }

  /** Mailbox, folder and read state alone: answered with the folder counters, in one statement. */
  async function pageByCounters(tenant: TenantContext, query: MessageListQuery, folder: Folder | undefined): Promise<VersionedMessagePage> {
    const mailboxAddress = singleMailbox(query);
    const page = await repo.pageWithTotals(db, tenant.workspaceId, { mailboxAddress, folder, unread: query.unread }, query.limit, query.offset);
    if (!page.mailboxFound) throw mailboxNotFound(query.mailbox);
    const total = query.unread === undefined ? page.total : query.unread ? page.unread : page.total - page.unread;
    // A delivery on its way changes its message's status and events without changing the version: such a page
    // has none (decision 216).
    const version = page.rows.some(deliveryMoving) ? undefined : page.version;
    return { messages: page.rows.map(toMessageListView), total, limit: query.limit, offset: query.offset, version };
  }

  return {
    ...createSearch({ runner: searches, mailboxId, parseFolder }),

    async list(tenant, query) {
      const folder = query.folder === undefined ? undefined : parseFolder(query.folder);
      if (query.label === undefined && query.thread_id === undefined) return pageByCounters(tenant, query, folder);
      const filter: MessageFilter = { mailboxId: await mailboxId(tenant, query.mailbox), folder, label: query.label, threadId: query.thread_id, unread: query.unread };
      const [rows, total] = await Promise.all([
        repo.listMessages(db, tenant.workspaceId, filter, query.limit, query.offset),
        repo.countMessages(db, tenant.workspaceId, filter),
      ]);
      return { messages: rows.map(toMessageListView), total, limit: query.limit, offset: query.offset, version: undefined };
    },

    async pageVersion(tenant, query) {
      const folder = query.folder === undefined ? undefined : parseFolder(query.folder);
      const mailboxAddress = singleMailbox(query);
      if (mailboxAddress === undefined) return undefined;
      const version = await repo.pageVersion(db, tenant.workspaceId, mailboxAddress, folder);
      if (version === undefined) throw mailboxNotFound(query.mailbox);
      return version;
    },

    async get(tenant, messageId, { markRead }) {
      let row = await findMessage(db, tenant, messageId);
      if (markRead && row.read === 0) {
        await db.transaction().execute((trx) => applyRead(trx, tenant, row, true));
        row = { ...row, read: 1 };
      }
      const content = await repo.findContent(db, tenant.workspaceId, messageId, false);
      return {
        ...toMessageListView(row),
        // An outbound message's delivery recipient by recipient, as `GET /sent` shows it (decision 280).
        ...(row.out_status != null ? toDeliveryDetail(row) : {}),
        text: content?.text_body ?? null,
        html: content?.html_body ?? null,
        headers: content?.headers_json ? (JSON.parse(content.headers_json) as MessageView['headers']) : [],
      };
    },

    async setRead(tenant, messageId, read) {
      await db.transaction().execute(async (trx) => applyRead(trx, tenant, await findMessage(trx, tenant, messageId), read));
      return { ok: true, message_id: messageId, read };
    },

    async move(tenant, messageId, folderName) {
      const folder = parseFolder(folderName);
      await db.transaction().execute(async (trx) => {
        const row = await findMessage(trx, tenant, messageId);
        if (row.folder === folder) return;
        const result = await trx
          .updateTable('messages')
          .set({ folder, updated_at: clock.now() })
          .where('workspace_id', '=', tenant.workspaceId)
          .where('id', '=', row.id)
          .where('folder', '=', row.folder)
          .executeTakeFirst();
        if (result.numUpdatedRows === 0n) return; // moved by someone else meanwhile
        const unread = row.read === 1 ? 0 : 1;
        const changes: Array<[string, number]> = [
          [row.folder, -1],
          [folder, 1],
        ];
        changes.sort(([a], [b]) => a.localeCompare(b));
        for (const [name, sign] of changes) await repo.bumpFolder(trx, tenant.workspaceId, row.mailbox_id, name, sign, sign * unread);
      });
      return { ok: true, message_id: messageId, folder };
    },

    async remove(tenant, messageId) {
      await db.transaction().execute(async (trx) => {
        const row = await findMessage(trx, tenant, messageId);
        const thread = await repo.lockThread(trx, tenant.workspaceId, row.thread_id, dialect.supportsRowLocks);
        await repo.deleteMessage(trx, tenant.workspaceId, row.id);
        const unread = row.read === 1 ? 0 : 1;
        await repo.bumpFolder(trx, tenant.workspaceId, row.mailbox_id, row.folder, -1, -unread);
        if (!thread) return;
        if (thread.message_count <= 1) {
          await repo.deleteThread(trx, tenant.workspaceId, thread.id);
          return;
        }
        const remaining = await repo.threadMessages(trx, tenant.workspaceId, thread.id);
        const last = remaining[remaining.length - 1];
        await repo.updateThread(trx, tenant.workspaceId, thread.id, {
          message_count: remaining.length,
          unread_count: remaining.filter((m) => m.read === 0).length,
          last_message_at: last ? last.created_at : thread.last_message_at,
          snippet: last ? last.snippet : thread.snippet,
          updated_at: clock.now(),
        });
        await refreshThreadLabels(trx, tenant, thread.id);
      });
      return { ok: true, message_id: messageId };
    },

    async setLabels(tenant, messageId, change) {
      const add = checkLabels(change.add);
      const remove = checkLabels(change.remove);
      const labels = await db.transaction().execute(async (trx) => {
        const row = await findMessage(trx, tenant, messageId);
        const result = await changeLabels(trx, tenant, row, add, remove);
        await refreshThreadLabels(trx, tenant, row.thread_id);
        await touchFolders(trx, tenant, [row]);
        return result;
      });
      return { labels };
    },

    async threadOf(tenant, messageId) {
      const row = await findMessage(db, tenant, messageId);
      return threadDetail(tenant, row.thread_id);
    },

    async attachments(tenant, messageId) {
      const row = await findMessage(db, tenant, messageId);
      return { attachments: toMessageListView(row).attachments };
    },

    async attachment(tenant, messageId, attachmentId) {
      const found = await repo.findAttachment(db, tenant.workspaceId, messageId, attachmentId);
      if (!found) throw notFound('attachment_not_found', `no attachment ${attachmentId} on message ${messageId}`);
      return { filename: withoutInvisibleFormat(found.filename) || found.id, contentType: found.content_type, content: Buffer.from(found.content) };
    },

    async raw(tenant, messageId) {
      const content = await repo.findContent(db, tenant.workspaceId, messageId, true);
      if (!content?.raw) throw messageNotFound(messageId);
      return { filename: `${messageId}.eml`, contentType: 'message/rfc822', content: Buffer.from(content.raw) };
    },

    async stats(tenant) {
      const [mailboxes, breakdown, threads] = await Promise.all([
        mailboxRepository.list(db, tenant.workspaceId),
        repo.folderBreakdown(db, tenant.workspaceId),
        repo.countThreads(db, tenant.workspaceId),
      ]);
      const folders = Object.fromEntries(FOLDERS.map((f) => [f, { total: 0, unread: 0 }])) as Stats['folders'];
      let messages = 0;
      let unread = 0;
      for (const row of breakdown) {
        const folder = FOLDERS.find((f) => f === row.folder);
        if (!folder) continue;
        folders[folder] = { total: Number(row.total), unread: Number(row.unread) };
        messages += Number(row.total);
        unread += Number(row.unread);
      }
      return { mailboxes: mailboxes.length, messages, unread, threads, folders };
    },

    async listThreads(tenant, query) {
      const { rows, total } = await repo.listThreads(db, tenant.workspaceId, { mailboxId: await mailboxId(tenant, query.mailbox), label: query.label }, query.limit, query.offset);
      return { threads: rows.map(toThreadView), total, limit: query.limit, offset: query.offset };
    },

    getThread: (tenant, threadId) => threadDetail(tenant, threadId),

    async setThreadLabels(tenant, threadId, change) {
      const add = checkLabels(change.add);
      const remove = checkLabels(change.remove);
      const labels = await db.transaction().execute(async (trx) => {
        const thread = await repo.findThread(trx, tenant.workspaceId, threadId);
        if (!thread) throw notFound('thread_not_found', `no thread ${threadId}`);
        const rows = await repo.threadMessages(trx, tenant.workspaceId, threadId);
        for (const row of rows) await changeLabels(trx, tenant, row, add, remove);
        await refreshThreadLabels(trx, tenant, threadId);
        await touchFolders(trx, tenant, rows);
        return repo.threadLabels(trx, tenant.workspaceId, threadId);
      });
      return { labels };
    },
  };
}
