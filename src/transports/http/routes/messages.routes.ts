import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { invalid } from '../../../lib/errors.js';
import type { MessageService } from '../../../modules/messages/message.service.js';
import { FOLDERS } from '../../../modules/messages/message.types.js';
import type { TenantContext } from '../../../modules/tenancy/tenancy.types.js';
import { optionalBody } from '../plugins/validation.js';
import { AttachmentList, Email, Label, SearchText, LabelChange, LabelsResponse, Limit, MessageDetail, MessagePage, Offset, ResourceId, ThreadDetail, ThreadSchema, answer, errors, folderName, operationId, ref } from '../schemas.js';
import { createPageCache, sendMessagePage, type PageCache } from '../page-cache.js';
import { sendDownload } from './download.js';

const MessageParams = Type.Object({ message_id: ResourceId }, { additionalProperties: false });
const AttachmentParams = Type.Object({ message_id: ResourceId, attachment_id: ResourceId }, { additionalProperties: false });
const ThreadParams = Type.Object({ thread_id: ResourceId }, { additionalProperties: false });
const NoQuery = Type.Object({}, { additionalProperties: false });
const GetQuery = Type.Object({ mark_read: Type.Optional(Type.Boolean({ default: false })) }, { additionalProperties: false });
const ReadInput = Type.Object({ read: Type.Optional(Type.Boolean({ description: 'default true' })) }, { additionalProperties: false });
const FlagsInput = Type.Object(
  {
    flagged: Type.Optional(Type.Boolean({ description: 'starred (IMAP \\Flagged)' })),
    answered: Type.Optional(Type.Boolean({ description: 'replied to (IMAP \\Answered)' })),
  },
  { additionalProperties: false, title: 'FlagsInput' },
);
const FlagsResponse = Type.Object({ ok: Type.Literal(true), message_id: Type.String(), flagged: Type.Boolean(), answered: Type.Boolean() }, { title: 'MessageFlags' });
const MoveInput = Type.Object({ folder: Type.Optional(folderName(Type.String({ minLength: 1, maxLength: 32 }))) }, { additionalProperties: false });
const InboxQuery = Type.Object(
  {
    mailbox: Type.Optional(Email),
    folder: Type.Optional(folderName(Type.String({ minLength: 1, maxLength: 32, description: 'default inbox; with q, every folder' }))),
    q: Type.Optional(SearchText),
    limit: Type.Optional(Limit),
    offset: Type.Optional(Offset),
  },
  { additionalProperties: false },
);
const MessagesQuery = Type.Object(
  {
    mailbox: Type.Optional(Email),
    folder: Type.Optional(folderName(Type.String({ minLength: 1, maxLength: 32 }))),
    label: Type.Optional(Label),
    thread_id: Type.Optional(ResourceId),
    unread: Type.Optional(Type.Boolean()),
    flagged: Type.Optional(Type.Boolean({ description: 'true: only starred messages' })),
    q: Type.Optional(SearchText),
    limit: Type.Optional(Limit),
    offset: Type.Optional(Offset),
  },
  { additionalProperties: false },
);
const ThreadsQuery = Type.Object(
  {
    mailbox: Type.Optional(Email),
    folder: Type.Optional(folderName(Type.String({ minLength: 1, maxLength: 32, description: "only threads with a message in this folder, by that folder's newest" }))),
    label: Type.Optional(Label),
    q: Type.Optional(SearchText),
    limit: Type.Optional(Limit),
    offset: Type.Optional(Offset),
  },
  { additionalProperties: false },
);
const ActionResponse = Type.Object(
  { ok: Type.Literal(true), message_id: Type.String(), read: Type.Optional(Type.Boolean()), folder: Type.Optional(folderName()) },
  { title: 'MessageAction' },
);
const StatsResponse = Type.Object(
  {
    mailboxes: Type.Integer(),
    messages: Type.Integer(),
    unread: Type.Integer(),
    threads: Type.Integer(),
    folders: Type.Record(Type.Union(FOLDERS.map((folder) => Type.Literal(folder))), Type.Object({ total: Type.Integer(), unread: Type.Integer() })),
  },
  { title: 'Stats' },
);
const ThreadPage = Type.Object(
  {
    threads: Type.Array(ref(ThreadSchema)),
    total: Type.Integer(),
    total_capped: Type.Optional(Type.Boolean({ description: "with folder only: true when total counted only the folder's newest 10,000 messages" })),
    limit: Type.Integer(),
    offset: Type.Integer(),
  },
  { title: 'ThreadPage' },
);
export const Download = (description: string, contentType: string) => ({
  description,
  headers: { 'Content-Disposition': { type: 'string', description: 'attachment; filename="…"; filename*=UTF-8\'\'…' } },
  content: { [contentType]: { schema: { type: 'string', format: 'binary' } } },
});

export interface MessageRouteOptions {
  messages: MessageService;
  tenant: (request: FastifyRequest) => TenantContext;
  surface: 'api-key' | 'session';
  /** Answered pages of single mailboxes (page-cache.ts); none kept when not given. */
  pages?: PageCache | undefined;
}

/** Merge query parameters and an optional JSON body (the body wins), as docs/api.md allows on POST. */
function merged<T extends object>(query: T, body: T | null | undefined): T {
  return { ...query, ...(body ?? {}) };
}

/**
 * Message, thread and stats routes. Both surfaces get the same operations; the API-key surface lists
 * with `GET /inbox` (folder defaults to inbox), the session surface with `GET /messages` and filters.
 */
export function messageRoutes(options: MessageRouteOptions): FastifyPluginAsyncTypebox {
  const { messages, tenant, surface, pages = createPageCache(0) } = options;
  const security = surface === 'api-key' ? [{ apiKey: [] }] : [{ session: [] }];
  const tags = [surface === 'api-key' ? 'messages (API key)' : 'messages (session)'];
  const common = errors(400, 401, 403, 404, 429);
  // With `q`, a list is a search: 429 `search_busy` and 503 `search_timeout` too.
  const searching = errors(400, 401, 403, 404, 429, 503);
  const op = (name: string) => operationId(surface, name);

  return async (app) => {
    if (surface === 'api-key') {
      app.get(
        '/inbox',
        {
          schema: {
            operationId: 'listInbox',
            summary: 'A page of one folder (default inbox), newest first',
            tags,
            security,
            querystring: InboxQuery,
            response: { 200: answer('A page of messages, newest first', MessagePage), ...searching },
          },
        },
        async (request, reply) => {
          const q = request.query;
          const page = { mailbox: q.mailbox, limit: q.limit ?? 50, offset: q.offset ?? 0 };
          // A search looks in every folder unless told otherwise, as a mail client's search box does.
          if (q.q !== undefined) return messages.search(tenant(request), { ...page, folder: q.folder, q: q.q });
          return sendMessagePage(reply, pages, messages, tenant(request), { ...page, folder: q.folder ?? 'inbox' });
        },
      );
    } else {
      app.get(
        '/messages',
        {
          schema: {
            operationId: 'appListMessages',
            summary: 'Messages of the workspace, filtered, newest first',
            tags,
            security,
            querystring: MessagesQuery,
            response: { 200: answer('A page of messages, newest first', MessagePage), ...searching },
          },
        },
        async (request, reply) => {
          const q = request.query;
          const query = { ...q, limit: q.limit ?? 50, offset: q.offset ?? 0 };
          if (query.q !== undefined) return messages.search(tenant(request), { ...query, q: query.q });
          return sendMessagePage(reply, pages, messages, tenant(request), query);
        },
      );
    }

    app.get(
      '/messages/:message_id',
      {
        schema: {
          operationId: op('getMessage'),
          summary: 'One message with text, html and headers (an outbound one with its delivery, recipient by recipient)',
          tags,
          security,
          params: MessageParams,
          querystring: GetQuery,
          response: { 200: answer('The message', ref(MessageDetail)), ...common },
        },
      },
      async (request) =>
        messages.get(tenant(request), request.params.message_id, { markRead: request.query.mark_read === true }),
    );

    app.post(
      '/messages/:message_id/read',
      {
        schema: {
          operationId: op('setMessageRead'),
          summary: 'Set the read flag (read defaults to true)',
          tags,
          security,
          params: MessageParams,
          querystring: ReadInput,
          body: optionalBody(ReadInput),
          response: { 200: answer('The flag is set', ActionResponse), ...common },
        },
      },
      async (request) => messages.setRead(tenant(request), request.params.message_id, merged(request.query, request.body).read ?? true),
    );

    app.post(
      '/messages/:message_id/flags',
      {
        schema: {
          operationId: op('setMessageFlags'),
          summary: 'Set the flagged (starred) and answered flags (those given; the others stay)',
          tags,
          security,
          params: MessageParams,
          querystring: NoQuery,
          body: FlagsInput,
          response: { 200: answer("The message's flags now", FlagsResponse), ...errors(400, 401, 403, 404, 413, 415, 429) },
        },
      },
      async (request) => messages.setFlags(tenant(request), request.params.message_id, request.body),
    );

    app.post(
      '/messages/:message_id/move',
      {
        schema: {
          operationId: op('moveMessage'),
          summary: 'Move to a folder: inbox, archive, sent, spam, trash',
          tags,
          security,
          params: MessageParams,
          querystring: MoveInput,
          body: optionalBody(MoveInput),
          response: { 200: answer('The message is in the folder', ActionResponse), ...common },
        },
      },
      async (request) => {
        const { folder } = merged(request.query, request.body);
        if (folder === undefined) throw invalid('invalid_request', 'folder is required (query parameter or JSON body)');
        return messages.move(tenant(request), request.params.message_id, folder);
      },
    );

    for (const [action, folder, name] of [['spam', 'spam', 'markMessageSpam'], ['not-spam', 'inbox', 'markMessageNotSpam']] as const) {
      app.post(
        `/messages/:message_id/${action}`,
        {
          schema: {
            operationId: op(name),
            summary: `Move to ${folder}`,
            tags,
            security,
            params: MessageParams,
            querystring: NoQuery,
            response: { 200: answer(`The message is in ${folder}`, ActionResponse), ...common },
          },
        },
        async (request) => messages.move(tenant(request), request.params.message_id, folder),
      );
    }

    app.delete(
      '/messages/:message_id',
      {
        schema: {
          operationId: op('deleteMessage'),
          summary: 'Delete a message for good',
          tags,
          security,
          params: MessageParams,
          querystring: NoQuery,
          response: { 200: answer('The message is gone', ActionResponse), ...common },
        },
      },
      async (request) => messages.remove(tenant(request), request.params.message_id),
    );

    app.post(
      '/messages/:message_id/labels',
      {
        schema: {
          operationId: op('changeMessageLabels'),
          summary: 'Add and remove labels',
          tags,
          security,
          params: MessageParams,
          querystring: NoQuery,
          body: LabelChange,
          response: { 200: answer("The message's labels now", LabelsResponse), ...errors(400, 401, 403, 404, 413, 415, 429) },
        },
      },
      async (request) => messages.setLabels(tenant(request), request.params.message_id, request.body),
    );

    app.get(
      '/messages/:message_id/thread',
      {
        schema: {
          operationId: op('getMessageThread'),
          summary: "The message's thread, messages oldest first",
          tags,
          security,
          params: MessageParams,
          querystring: NoQuery,
          response: { 200: answer('The thread with its messages', ref(ThreadDetail)), ...common },
        },
      },
      async (request) => messages.threadOf(tenant(request), request.params.message_id),
    );

    app.get(
      '/messages/:message_id/attachments',
      {
        schema: {
          operationId: op('listAttachments'),
          summary: "The message's attachments",
          tags,
          security,
          params: MessageParams,
          querystring: NoQuery,
          response: { 200: answer('The attachments, in the order of the message', AttachmentList), ...common },
        },
      },
      async (request) => messages.attachments(tenant(request), request.params.message_id),
    );

    app.get(
      '/messages/:message_id/attachments/:attachment_id',
      {
        schema: {
          operationId: op('downloadAttachment'),
          summary: 'Download an attachment',
          tags,
          security,
          params: AttachmentParams,
          querystring: NoQuery,
          response: { 200: Download("The attachment's bytes, with its own Content-Type", '*/*'), ...common },
        },
      },
      async (request, reply) => {
        const { message_id, attachment_id } = request.params;
        return sendDownload(reply, await messages.attachment(tenant(request), message_id, attachment_id));
      },
    );

    app.get(
      '/messages/:message_id/raw',
      {
        schema: {
          operationId: op('downloadRawMessage'),
          summary: 'Download the RFC 5322 source (message/rfc822)',
          tags,
          security,
          params: MessageParams,
          querystring: NoQuery,
          response: { 200: Download('The message as it was stored', 'message/rfc822'), ...common },
        },
      },
      async (request, reply) => sendDownload(reply, await messages.raw(tenant(request), request.params.message_id)),
    );

    app.get(
      '/stats',
      {
        schema: {
          operationId: op('getStats'),
          summary: 'Counts of mailboxes, messages, unread and threads, per folder',
          tags,
          security,
          querystring: NoQuery,
          response: { 200: answer('The counts', StatsResponse), ...common },
        },
      },
      async (request) => messages.stats(tenant(request)),
    );

    app.get(
      '/threads',
      {
        schema: {
          operationId: op('listThreads'),
          summary: 'Threads, most recent first',
          tags,
          security,
          querystring: ThreadsQuery,
          response: { 200: answer('A page of threads, most recent first', ThreadPage), ...searching },
        },
      },
      async (request) => {
        const q = request.query;
        const query = { ...q, limit: q.limit ?? 50, offset: q.offset ?? 0 };
        if (query.q !== undefined && query.folder !== undefined) throw invalid('invalid_request', 'folder and q cannot be combined');
        if (query.q !== undefined) return messages.searchThreads(tenant(request), { ...query, q: query.q });
        return messages.listThreads(tenant(request), query);
      },
    );

    app.get(
      '/threads/:thread_id',
      {
        schema: {
          operationId: op('getThread'),
          summary: 'A thread with its messages, oldest first',
          tags,
          security,
          params: ThreadParams,
          querystring: NoQuery,
          response: { 200: answer('The thread with its messages', ref(ThreadDetail)), ...common },
        },
      },
      async (request) => messages.getThread(tenant(request), request.params.thread_id),
    );

    app.post(
      '/threads/:thread_id/labels',
      {
        schema: {
          operationId: op('changeThreadLabels'),
          summary: 'Add and remove labels on every message of a thread',
          tags,
          security,
          params: ThreadParams,
          querystring: NoQuery,
          body: LabelChange,
          response: { 200: answer("The thread's labels now", LabelsResponse), ...errors(400, 401, 403, 404, 413, 415, 429) },
        },
      },
      async (request) => messages.setThreadLabels(tenant(request), request.params.thread_id, request.body),
    );
  };
}
