import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { BULK_ACTIONS, MAX_BULK_MESSAGES, MAX_BULK_THREADS, type BulkService } from '../../../modules/messages/bulk.service.js';
import type { TenantContext } from '../../../modules/tenancy/tenancy.types.js';
import { Email, Label, ResourceId, SearchText, answer, documentedEnum, errors, folderName, operationId } from '../schemas.js';

const Folder = folderName(Type.String({ minLength: 1, maxLength: 32 }));
const Labels = Type.Array(Label, { maxItems: 100 });
const NoQuery = Type.Object({}, { additionalProperties: false });

const Selection = Type.Object(
  {
    mailbox: Type.Optional(Email),
    folder: Type.Optional(Folder),
    label: Type.Optional(Label),
    unread: Type.Optional(Type.Boolean()),
    q: Type.Optional(SearchText),
    thread_ids: Type.Optional(Type.Array(ResourceId, { minItems: 1, maxItems: MAX_BULK_THREADS })),
  },
  { additionalProperties: false, title: 'BulkSelection', description: 'every message that matches these filters (as the list routes take them; thread_ids: only those threads), at most 1000' },
);
const BulkInput = Type.Object(
  {
    action: documentedEnum(BULK_ACTIONS, Type.String({ minLength: 1, maxLength: 32 })),
    message_ids: Type.Optional(Type.Array(ResourceId, { minItems: 1, maxItems: MAX_BULK_MESSAGES })),
    selection: Type.Optional(Selection),
    folder: Type.Optional(Folder),
    add: Type.Optional(Labels),
    remove: Type.Optional(Labels),
  },
  { additionalProperties: false, title: 'BulkInput' },
);
const Previous = Type.Object(
  { folder: Folder, read: Type.Boolean(), flagged: Type.Boolean(), labels: Type.Array(Type.String()) },
  { title: 'BulkPrevious' },
);
const RestoreItem = Type.Object(
  {
    message_id: ResourceId,
    folder: Type.Optional(Folder),
    read: Type.Optional(Type.Boolean()),
    flagged: Type.Optional(Type.Boolean()),
    labels: Type.Optional(Labels),
  },
  { additionalProperties: false, title: 'RestoreItem' },
);
const RestoreInput = Type.Object({ items: Type.Array(RestoreItem, { minItems: 1, maxItems: MAX_BULK_MESSAGES }) }, { additionalProperties: false, title: 'RestoreInput' });
const BulkResponse = Type.Object(
  {
    action: Type.String(),
    results: Type.Array(
      Type.Object({ message_id: Type.String(), ok: Type.Boolean(), error: Type.Optional(Type.String()), previous: Type.Optional(Previous) }, { title: 'BulkResult' }),
    ),
    undo: Type.Object({ items: Type.Array(RestoreItem) }),
  },
  { title: 'BulkAnswer' },
);

/**
 * Bulk organising on both surfaces: `POST /messages/bulk` (one action over ids or a selection) and
 * `POST /messages/bulk/restore` (the undo). Per-message outcomes are in the answer, never a 404 for the request.
 */
export function bulkRoutes({ bulk, tenant, surface }: { bulk: BulkService; tenant: (request: FastifyRequest) => TenantContext; surface: 'api-key' | 'session' }): FastifyPluginAsyncTypebox {
  const security = surface === 'api-key' ? [{ apiKey: [] }] : [{ session: [] }];
  const tags = [surface === 'api-key' ? 'messages (API key)' : 'messages (session)'];
  // A selection with `q` is a search: 429 `search_busy` and 503 `search_timeout` too.
  const refusals = errors(400, 401, 403, 404, 413, 415, 429, 503);
  return async (app) => {
    app.post(
      '/messages/bulk',
      {
        schema: {
          operationId: operationId(surface, 'bulkMessages'),
          summary: 'One action (archive, spam, delete, move, label, read, unread, flag, unflag) on many messages',
          tags,
          security,
          querystring: NoQuery,
          body: BulkInput,
          response: { 200: answer('Each message\'s outcome, and the body that undoes the request', BulkResponse), ...refusals },
        },
      },
      async (request) => bulk.apply(tenant(request), request.body),
    );
    app.post(
      '/messages/bulk/restore',
      {
        schema: {
          operationId: operationId(surface, 'restoreMessages'),
          summary: 'Set messages back to a former state (the undo of a bulk request)',
          tags,
          security,
          querystring: NoQuery,
          body: RestoreInput,
          response: { 200: answer('Each message\'s outcome', BulkResponse), ...errors(400, 401, 403, 413, 415, 429) },
        },
      },
      async (request) => bulk.restore(tenant(request), request.body.items),
    );
  };
}
