import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import type { MailboxService } from '../../../modules/mailboxes/mailbox.service.js';
import type { TenantContext } from '../../../modules/tenancy/tenancy.types.js';
import { optionalBody } from '../plugins/validation.js';
import { Email, MailboxInput, MailboxList, MailboxSchema, OkResponse, answer, errors, operationId, ref } from '../schemas.js';

type Input = Static<typeof MailboxInput>;
const AddressParams = Type.Object({ address: Email }, { additionalProperties: false });
const NoQuery = Type.Object({}, { additionalProperties: false });

export interface MailboxRouteOptions {
  mailboxes: MailboxService;
  tenant: (request: FastifyRequest) => TenantContext;
  /** The surface's tag and security scheme, for the OpenAPI document. */
  surface: 'api-key' | 'session';
  /** Register GET/DELETE /mailboxes/{address} (the API-key surface has them; the session surface only lists and creates, decision 19). */
  withItemRoutes: boolean;
}

/**
 * Mailbox routes, mounted on both surfaces. POST takes `address` and `description` as query
 * parameters or in a JSON body (the body wins where both are given).
 */
export function mailboxRoutes(options: MailboxRouteOptions): FastifyPluginAsyncTypebox {
  const { mailboxes, tenant, surface } = options;
  const security = surface === 'api-key' ? [{ apiKey: [] }] : [{ session: [] }];
  const tags = [surface === 'api-key' ? 'mailboxes (API key)' : 'mailboxes (session)'];
  const op = (name: string) => operationId(surface, name);
  return async (app) => {
    app.get(
      '/mailboxes',
      {
        schema: {
          operationId: op('listMailboxes'),
          summary: 'List mailboxes',
          tags,
          security,
          querystring: NoQuery,
          response: { 200: answer('The mailboxes of the workspace', MailboxList), ...errors(400, 401, 403, 404, 429) },
        },
      },
      async (request) => ({ mailboxes: await mailboxes.list(tenant(request)) }),
    );

    app.post(
      '/mailboxes',
      {
        schema: {
          operationId: op('createMailbox'),
          summary: 'Create a mailbox',
          tags,
          security,
          querystring: MailboxInput,
          body: optionalBody(MailboxInput),
          response: { 201: answer('The mailbox, created', ref(MailboxSchema)), ...errors(400, 401, 403, 404, 409, 413, 415, 429) },
        },
      },
      async (request, reply) => {
        const input: Input = { ...request.query, ...(request.body ?? {}) };
        return reply.code(201).send(await mailboxes.create(tenant(request), input));
      },
    );

    if (!options.withItemRoutes) return;

    app.get(
      '/mailboxes/:address',
      {
        schema: {
          operationId: op('getMailbox'),
          summary: 'Get a mailbox',
          tags,
          security,
          params: AddressParams,
          querystring: NoQuery,
          response: { 200: answer('The mailbox with its counts', ref(MailboxSchema)), ...errors(400, 401, 403, 404, 429) },
        },
      },
      async (request) => mailboxes.get(tenant(request), request.params.address),
    );

    app.delete(
      '/mailboxes/:address',
      {
        schema: {
          operationId: op('deleteMailbox'),
          summary: 'Delete a mailbox and everything in it',
          tags,
          security,
          params: AddressParams,
          querystring: NoQuery,
          response: { 200: answer('The mailbox and its mail are gone', OkResponse), ...errors(400, 401, 403, 404, 429) },
        },
      },
      async (request) => {
        const { address } = request.params;
        await mailboxes.remove(tenant(request), address);
        return { ok: true as const, address: address.toLowerCase() };
      },
    );
  };
}
