import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { ServiceTokenService } from '../../../modules/transactional/service-token.service.js';
import type { TenantContext } from '../../../modules/tenancy/tenancy.types.js';
import { SERVICE_TOKEN_SCOPES } from '../../../modules/transactional/transactional.table.js';
import { Email, OkResponse, ResourceId, answer, documentedEnum, errors } from '../schemas.js';

const TokenParams = Type.Object({ token_id: ResourceId }, { additionalProperties: false });
const NoQuery = Type.Object({}, { additionalProperties: false });
const CreateBody = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: 100 })),
    domain_id: ResourceId,
    mailbox: Email,
    // Any string reaches the service, which answers 400 invalid_scope with a clear reason.
    scope: Type.Optional(documentedEnum(SERVICE_TOKEN_SCOPES, Type.String({ maxLength: 100 }))),
  },
  { additionalProperties: false },
);
const tokenProperties = {
  token_id: Type.String(),
  name: Type.String(),
  scope: Type.Literal('message:send'),
  domain_id: Type.String(),
  mailbox: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
  last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
};
const TokenSchema = Type.Object(tokenProperties, { title: 'ServiceToken' });
const TokenWithSecret = Type.Object(
  { ...tokenProperties, token: Type.String({ description: 'the credential (mst_…), shown only in this answer' }) },
  { title: 'ServiceTokenWithSecret' },
);

/** Service tokens on the session surface (owner or admin of the active workspace). */
export function serviceTokenRoutes({ tokens, tenant }: { tokens: ServiceTokenService; tenant: (request: FastifyRequest) => TenantContext }): FastifyPluginAsyncTypebox {
  const tags = ['service tokens'];
  const security = [{ session: [] }];
  return async (app) => {
    app.get(
      '/service-tokens',
      {
        schema: {
          operationId: 'appListServiceTokens',
          summary: 'Service tokens of the workspace (never their credentials)',
          tags,
          security,
          querystring: NoQuery,
          response: { 200: answer('The service tokens', Type.Object({ service_tokens: Type.Array(TokenSchema) })), ...errors(400, 401, 403, 429) },
        },
      },
      async (request) => tokens.list(tenant(request)),
    );
    app.post(
      '/service-tokens',
      {
        schema: {
          operationId: 'appCreateServiceToken',
          summary: 'Create a token for one verified domain and one mailbox in it; the credential is shown only in this answer',
          tags,
          security,
          querystring: NoQuery,
          body: CreateBody,
          response: { 201: answer('The token, with its credential (only here)', TokenWithSecret), ...errors(400, 401, 403, 413, 415, 429) },
        },
      },
      async (request, reply) => reply.code(201).send(await tokens.create(tenant(request), request.body)),
    );
    app.get(
      '/service-tokens/:token_id',
      {
        schema: {
          operationId: 'appGetServiceToken',
          summary: 'One service token',
          tags,
          security,
          params: TokenParams,
          querystring: NoQuery,
          response: { 200: answer('The service token (never its credential)', TokenSchema), ...errors(400, 401, 403, 404, 429) },
        },
      },
      async (request) => tokens.get(tenant(request), request.params.token_id),
    );
    app.post(
      '/service-tokens/:token_id/rotate',
      {
        schema: {
          operationId: 'appRotateServiceToken',
          summary: 'Replace the credential: the old one stops working now; idempotency keys carry over',
          tags,
          security,
          params: TokenParams,
          querystring: NoQuery,
          response: { 200: answer('The token, with its new credential (only here)', TokenWithSecret), ...errors(400, 401, 403, 404, 429) },
        },
      },
      async (request) => tokens.rotate(tenant(request), request.params.token_id),
    );
    app.delete(
      '/service-tokens/:token_id',
      {
        schema: {
          operationId: 'appRevokeServiceToken',
          summary: 'Revoke a token at once',
          tags,
          security,
          params: TokenParams,
          querystring: NoQuery,
          response: { 200: answer('The token is revoked', OkResponse), ...errors(400, 401, 403, 404, 429) },
        },
      },
      async (request) => {
        const { token_id } = request.params;
        await tokens.delete(tenant(request), token_id);
        return { ok: true as const, token_id };
      },
    );
  };
}
