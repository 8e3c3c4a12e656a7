import type { Work } from '../../db/tables.js';
import { invalid, notFound } from '../../lib/errors.js';
import { withoutInvisibleFormat } from '../../lib/mail-text.js';
import type { MessageDetailRow, MessageFilter, MessageRow, ReceivedMailStore } from '../mail/mail.store.js';
import type { TenantContext } from '../tenancy/tenancy.types.js';
import { normalizeEmail } from '../tenancy/validation.js';
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
import { toDeliveryDetail, toFolderThreadView, toMessageListView, toThreadView } from './message.views.js';
import { createSearch, type Search } from './search.service.js';
import { lessonOf, type SpamLearning } from './spam-learning.js';
import type { SearchRunner } from './search-runner.js';

/**
 * A page of messages with its version: what names this exact page while no message of its folders changes (the
 * mail store's `pageAndVersion` says how it is read), so that the HTTP layer may keep the answer it wrote
 * (transports/http/page-cache.ts explains why a kept page is never stale). Undefined when the page must not be
 * kept: not one mailbox's (a label, a thread, the whole workspace), or showing a delivery still on its way
 * (decision 216). Not part of the answer: the response schema leaves it out.
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
  /** Set the flags given (starred, answered); returns both as they are now. */
  setFlags(tenant: TenantContext, messageId: string, flags: { flagged?: boolean | undefined; answered?: boolean | undefined }): Promise<{ ok: true; message_id: string; flagged: boolean; answered: boolean }>;
  remove(tenant: TenantContext, messageId: string): Promise<{ ok: true; message_id: string }>;
  setLabels(tenant: TenantContext, messageId: string, change: { add?: string[] | undefined; remove?: string[] | undefined }): Promise<{ labels: string[] }>;
  threadOf(tenant: TenantContext, messageId: string): Promise<ThreadDetailView>;
  attachments(tenant: TenantContext, messageId: string): Promise<{ attachments: AttachmentView[] }>;
  attachment(tenant: TenantContext, messageId: string, attachmentId: string): Promise<Download>;
  raw(tenant: TenantContext, messageId: string): Promise<Download>;
  stats(tenant: TenantContext): Promise<Stats>;
  listThreads(tenant: TenantContext, query: { mailbox?: string | undefined; label?: string | undefined; folder?: string | undefined; limit: number; offset: number }): Promise<{ threads: ThreadView[]; total: number; total_capped?: boolean; limit: number; offset: number }>;
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

const messageNotFound = (id: string) => notFound('message_not_found', `no message ${id}`);
const mailboxNotFound = (address: string | undefined) => notFound('mailbox_not_found', `no mailbox ${address}`);

/** The mail store's operations the message service uses. */
export type MessageServiceStore = Pick<
  ReceivedMailStore,
  | 'mailboxIdByAddress'
  | 'findMessage'
  | 'findContent'
  | 'spamOf'
  | 'findAttachment'
  | 'findThread'
  | 'threadMessages'
  | 'threadPage'
  | 'folderThreadPage'
  | 'messagePage'
  | 'pageAndVersion'
  | 'pageVersion'
  | 'mailStats'
  | 'markRead'
  | 'moveMessage'
  | 'setFlags'
  | 'deleteMessage'
  | 'changeLabels'
  | 'labelsChanged'
>;

/** Reading and organising stored mail, scoped to the caller's workspace. */
export function createMessageService({ work, store, searches, learning }: { work: Work; store: MessageServiceStore; searches: SearchRunner; learning?: SpamLearning | undefined }): MessageService {
  async function mailboxId(tenant: TenantContext, address: string | undefined): Promise<string | undefined> {
    if (address === undefined) return undefined;
    const normalized = normalizeEmail(address);
    const mailbox = normalized ? await store.mailboxIdByAddress(work, tenant.workspaceId, normalized) : undefined;
    if (!mailbox) throw mailboxNotFound(address);
    return mailbox.id;
  }

  async function findMessage(conn: Work, tenant: TenantContext, messageId: string): Promise<MessageDetailRow> {
    const row = await store.findMessage(conn, tenant.workspaceId, messageId);
    if (!row) throw messageNotFound(messageId);
    return row;
  }

  /** Change a message's labels: at most MAX_LABELS_PER_MESSAGE remain (else the caller's transaction fails). */
  async function changeLabels(trx: Work, tenant: TenantContext, row: MessageRow, add: string[], remove: string[]): Promise<string[]> {
    const labels = await store.changeLabels(trx, tenant.workspaceId, row.id, add, remove);
    if (labels.length > MAX_LABELS_PER_MESSAGE) throw invalid('too_many_labels', `a message carries at most ${MAX_LABELS_PER_MESSAGE} labels`);
    return labels;
  }

  async function threadDetail(tenant: TenantContext, threadId: string): Promise<ThreadDetailView> {
    const thread = await store.findThread(work, tenant.workspaceId, threadId);
    if (!thread) throw notFound('thread_not_found', `no thread ${threadId}`);
    const messages = await store.threadMessages(work, tenant.workspaceId, threadId);
    return { ...toThreadView(thread), messages: messages.map(toMessageListView) };
  }

  /** The mailbox (normalised address) whose folders alone decide the page: none with a label or thread filter. */
  function singleMailbox(query: MessageListQuery): string | undefined {
    if (query.label !== undefined || query.thread_id !== undefined || query.flagged === true || query.mailbox === undefined) return undefined;
    const address = normalizeEmail(query.mailbox);
    if (address === null) throw mailboxNotFound(query.mailbox);
    return address;
  }

  /** Mailbox, folder and read state alone: answered with the folder counters, in one statement. */
  async function pageByCounters(tenant: TenantContext, query: MessageListQuery, folder: Folder | undefined): Promise<VersionedMessagePage> {
    const mailboxAddress = singleMailbox(query);
    const page = await store.pageAndVersion(work, tenant.workspaceId, { mailboxAddress, folder, unread: query.unread }, query.limit, query.offset);
    if (!page.mailboxFound) throw mailboxNotFound(query.mailbox);
    const total = query.unread === undefined ? page.total : query.unread ? page.unread : page.total - page.unread;
    return { messages: page.rows.map(toMessageListView), total, limit: query.limit, offset: query.offset, version: page.version };
  }

  return {
    ...createSearch({ runner: searches, mailboxId, parseFolder }),

    async list(tenant, query) {
      const folder = query.folder === undefined ? undefined : parseFolder(query.folder);
      const flagged = query.flagged === true ? true : undefined;
      if (query.label === undefined && query.thread_id === undefined && flagged === undefined) return pageByCounters(tenant, query, folder);
      const filter: MessageFilter = { mailboxId: await mailboxId(tenant, query.mailbox), folder, label: query.label, threadId: query.thread_id, unread: query.unread, flagged };
      const { rows, total } = await store.messagePage(work, tenant.workspaceId, filter, query.limit, query.offset);
      return { messages: rows.map(toMessageListView), total, limit: query.limit, offset: query.offset, version: undefined };
    },

    async pageVersion(tenant, query) {
      const folder = query.folder === undefined ? undefined : parseFolder(query.folder);
      const mailboxAddress = singleMailbox(query);
      if (mailboxAddress === undefined) return undefined;
      const version = await store.pageVersion(work, tenant.workspaceId, mailboxAddress, folder);
      if (version === undefined) throw mailboxNotFound(query.mailbox);
      return version;
    },

    async get(tenant, messageId, { markRead }) {
      let row = await findMessage(work, tenant, messageId);
      if (markRead && row.read === 0) {
        await work.transaction().execute((trx) => store.markRead(trx, tenant.workspaceId, row, true));
        row = { ...row, read: 1 };
      }
      const [content, spam] = await Promise.all([store.findContent(work, tenant.workspaceId, messageId, false), store.spamOf(work, tenant.workspaceId, messageId)]);
      return {
        ...toMessageListView(row),
        // An outbound message's delivery recipient by recipient, as `GET /sent` shows it (decision 280).
        ...(row.out_status != null ? toDeliveryDetail(row) : {}),
        text: content?.text_body ?? null,
        html: content?.html_body ?? null,
        headers: content?.headers_json ? (JSON.parse(content.headers_json) as MessageView['headers']) : [],
        spam,
      };
    },

    async setRead(tenant, messageId, read) {
      await work.transaction().execute(async (trx) => store.markRead(trx, tenant.workspaceId, await findMessage(trx, tenant, messageId), read));
      return { ok: true, message_id: messageId, read };
    },

    async move(tenant, messageId, folderName) {
      const folder = parseFolder(folderName);
      await work.transaction().execute(async (trx) => {
        const row = await findMessage(trx, tenant, messageId);
        await store.moveMessage(trx, tenant.workspaceId, row, folder);
        // rspamd learns from the move (spam-learning.ts), through the queue: never on this request's path.
        const kind = learning ? lessonOf(row.direction, row.folder, folder) : null;
        if (kind) await learning?.teach(trx, tenant.workspaceId, { messageId, kind });
      });
      return { ok: true, message_id: messageId, folder };
    },

    async setFlags(tenant, messageId, flags) {
      const row = await work.transaction().execute(async (trx) => {
        const found = await findMessage(trx, tenant, messageId);
        await store.setFlags(trx, tenant.workspaceId, found, { flagged: flags.flagged, answered: flags.answered });
        return found;
      });
      const now = (given: boolean | undefined, was: number) => given ?? was === 1;
      return { ok: true, message_id: messageId, flagged: now(flags.flagged, row.flagged), answered: now(flags.answered, row.answered) };
    },

    async remove(tenant, messageId) {
      await work.transaction().execute(async (trx) => store.deleteMessage(trx, tenant.workspaceId, await findMessage(trx, tenant, messageId)));
      return { ok: true, message_id: messageId };
    },

    async setLabels(tenant, messageId, change) {
      const add = checkLabels(change.add);
      const remove = checkLabels(change.remove);
      const labels = await work.transaction().execute(async (trx) => {
        const row = await findMessage(trx, tenant, messageId);
        const result = await changeLabels(trx, tenant, row, add, remove);
        await store.labelsChanged(trx, tenant.workspaceId, row.thread_id, [row]);
        return result;
      });
      return { labels };
    },

    async threadOf(tenant, messageId) {
      const row = await findMessage(work, tenant, messageId);
      return threadDetail(tenant, row.thread_id);
    },

    async attachments(tenant, messageId) {
      const row = await findMessage(work, tenant, messageId);
      return { attachments: toMessageListView(row).attachments };
    },

    async attachment(tenant, messageId, attachmentId) {
      const found = await store.findAttachment(work, tenant.workspaceId, messageId, attachmentId);
      if (!found) throw notFound('attachment_not_found', `no attachment ${attachmentId} on message ${messageId}`);
      return { filename: withoutInvisibleFormat(found.filename) || found.id, contentType: found.content_type, content: Buffer.from(found.content) };
    },

    async raw(tenant, messageId) {
      const content = await store.findContent(work, tenant.workspaceId, messageId, true);
      if (!content?.raw) throw messageNotFound(messageId);
      return { filename: `${messageId}.eml`, contentType: 'message/rfc822', content: Buffer.from(content.raw) };
    },

    async stats(tenant) {
      const { mailboxes, folders: breakdown, threads } = await store.mailStats(work, tenant.workspaceId);
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
      return { mailboxes, messages, unread, threads, folders };
    },

    async listThreads(tenant, query) {
      if (query.folder !== undefined) {
        // A folder's conversation list is its own question: the label filter narrows whole threads, not a folder's share.
        if (query.label !== undefined) throw invalid('invalid_request', 'folder and label cannot be combined');
        const scope = { workspaceId: tenant.workspaceId, mailboxId: await mailboxId(tenant, query.mailbox), folder: parseFolder(query.folder) };
        const page = await store.folderThreadPage(work, scope, query.limit, query.offset);
        return { threads: page.rows.map(toFolderThreadView), total: page.total, ...(page.capped ? { total_capped: true } : {}), limit: query.limit, offset: query.offset };
      }
      const { rows, total } = await store.threadPage(work, tenant.workspaceId, { mailboxId: await mailboxId(tenant, query.mailbox), label: query.label }, query.limit, query.offset);
      return { threads: rows.map(toThreadView), total, limit: query.limit, offset: query.offset };
    },

    getThread: (tenant, threadId) => threadDetail(tenant, threadId),

    async setThreadLabels(tenant, threadId, change) {
      const add = checkLabels(change.add);
      const remove = checkLabels(change.remove);
      const labels = await work.transaction().execute(async (trx) => {
        const thread = await store.findThread(trx, tenant.workspaceId, threadId);
        if (!thread) throw notFound('thread_not_found', `no thread ${threadId}`);
        const rows = await store.threadMessages(trx, tenant.workspaceId, threadId);
        for (const row of rows) await changeLabels(trx, tenant, row, add, remove);
        return store.labelsChanged(trx, tenant.workspaceId, threadId, rows);
      });
      return { labels };
    },
  };
}
