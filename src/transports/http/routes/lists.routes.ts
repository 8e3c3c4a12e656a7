import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { ListService } from '../../../modules/lists/list.service.js';
import type { TenantContext } from '../../../modules/tenancy/tenancy.types.js';
import { LIST_DIRECTIONS, LIST_TYPES } from '../../../modules/lists/list.table.js';
import { Limit, ListEntrySchema, Offset, answer, documentedEnum, errors, ref, wildcard } from '../schemas.js';

// The list service refuses another direction or list type with its own error code.
const Direction = documentedEnum(LIST_DIRECTIONS, Type.String({ minLength: 1, maxLength: 16 }));
const ListType = documentedEnum(LIST_TYPES, Type.String({ minLength: 1, maxLength: 16 }));
const ListParams = Type.Object(
  { direction: Direction, list_type: ListType },
  { additionalProperties: false },
);
// The entry is the rest of the path: CIDRs such as 2001:db8::/32 contain slashes.
const EntryParams = Type.Object(
  {
    direction: Direction,
    list_type: ListType,
    '*': wildcard('entry', Type.String({ minLength: 1, maxLength: 320, description: 'the entry (address, domain, IP or CIDR); a slash may be sent as is or as %2F' })),
  },
  { additionalProperties: false },
);
const PageQuery = Type.Object({ limit: Type.Optional(Limit), offset: Type.Optional(Offset) }, { additionalProperties: false });
const NoQuery = Type.Object({}, { additionalProperties: false });
const EntryInput = Type.Object(
  { entry: Type.String({ minLength: 1, maxLength: 320 }), reason: Type.Optional(Type.String({ maxLength: 500 })) },
  { additionalProperties: false },
);

/** Allow/block lists on the session surface: /lists/{direction}/{list_type}[/{entry:path}]. */
export function listRoutes({ lists, tenant }: { lists: ListService; tenant: (request: FastifyRequest) => TenantContext }): FastifyPluginAsyncTypebox {
  const tags = ['lists'];
  const security = [{ session: [] }];
  return async (app) => {
    app.get(
      '/lists/:direction/:list_type',
      {
        schema: {
          operationId: 'appListListEntries',
          summary: 'Entries of one list, newest first',
          tags,
          security,
          params: ListParams,
          querystring: PageQuery,
          response: {
            200: answer('A page of the list', Type.Object({ entries: Type.Array(ref(ListEntrySchema)), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer() }, { title: 'ListEntryPage' })),
            ...errors(400, 401, 403, 429),
          },
        },
      },
      async (request) => {
        const { direction, list_type } = request.params;
        const q = request.query;
        return lists.list(tenant(request), direction, list_type, { limit: q.limit ?? 50, offset: q.offset ?? 0 });
      },
    );

    app.post(
      '/lists/:direction/:list_type',
      {
        schema: {
          operationId: 'appAddListEntry',
          summary: 'Add an address, a domain, or (inbound) an IP or CIDR',
          tags,
          security,
          params: ListParams,
          querystring: NoQuery,
          body: EntryInput,
          response: { 201: answer('The entry, added', ref(ListEntrySchema)), ...errors(400, 401, 403, 409, 413, 415, 429) },
        },
      },
      async (request, reply) => {
        const { direction, list_type } = request.params;
        return reply.code(201).send(await lists.add(tenant(request), direction, list_type, request.body));
      },
    );

    app.get(
      '/lists/:direction/:list_type/*',
      {
        schema: {
          operationId: 'appGetListEntry',
          summary: 'One entry',
          tags,
          security,
          params: EntryParams,
          querystring: NoQuery,
          response: { 200: answer('The entry', ref(ListEntrySchema)), ...errors(400, 401, 403, 404, 429) },
        },
      },
      async (request) => {
        const p = request.params;
        return lists.get(tenant(request), p.direction, p.list_type, p['*']);
      },
    );

    app.delete(
      '/lists/:direction/:list_type/*',
      {
        schema: {
          operationId: 'appRemoveListEntry',
          summary: 'Remove an entry',
          tags,
          security,
          params: EntryParams,
          querystring: NoQuery,
          response: { 200: answer('The entry is gone', Type.Object({ ok: Type.Literal(true), entry: Type.String() })), ...errors(400, 401, 403, 404, 429) },
        },
      },
      async (request) => {
        const p = request.params;
        const removed = await lists.remove(tenant(request), p.direction, p.list_type, p['*']);
        return { ok: true as const, entry: removed.entry };
      },
    );
  };
}
