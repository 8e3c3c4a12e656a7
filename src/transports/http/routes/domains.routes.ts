import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { DomainService } from '../../../modules/domains/domain.service.js';
import type { TenantContext } from '../../../modules/tenancy/tenancy.types.js';
import { ResourceId, answer, errors } from '../schemas.js';

const DomainParams = Type.Object({ domain_id: ResourceId }, { additionalProperties: false });
const NoQuery = Type.Object({}, { additionalProperties: false });
const CreateBody = Type.Object({ domain: Type.String({ minLength: 1, maxLength: 253 }) }, { additionalProperties: false });
const Record = Type.Object({ record_name: Type.String(), record_type: Type.Literal('TXT'), record_value: Type.String() }, { title: 'DnsRecord' });
const domainProperties = {
  domain_id: Type.String(),
  domain: Type.String(),
  status: Type.Union([Type.Literal('pending'), Type.Literal('verified')]),
  dkim: Type.Object({ selector: Type.String(), record_name: Type.String(), record_type: Type.Literal('TXT'), record_value: Type.String() }, { title: 'DkimRecord' }),
  created_at: Type.String(),
  verified_at: Type.Union([Type.String(), Type.Null()]),
};
const DomainSchema = Type.Object(domainProperties, { title: 'SendingDomain' });
const CreatedSchema = Type.Object({ ...domainProperties, verification: Record }, { title: 'CreatedSendingDomain' });

/** Sending domains on the session surface (owner or admin of the active workspace). */
export function domainRoutes({ domains, tenant }: { domains: DomainService; tenant: (request: FastifyRequest) => TenantContext }): FastifyPluginAsyncTypebox {
  const tags = ['sending domains'];
  const security = [{ session: [] }];
  return async (app) => {
    app.get(
      '/sending-domains',
      {
        schema: {
          operationId: 'appListSendingDomains',
          summary: 'Sending domains of the workspace',
          tags,
          security,
          querystring: NoQuery,
          response: { 200: answer('The sending domains', Type.Object({ sending_domains: Type.Array(DomainSchema) })), ...errors(401, 403, 429) },
        },
      },
      async (request) => domains.list(tenant(request)),
    );
    app.post(
      '/sending-domains',
      {
        schema: {
          operationId: 'appCreateSendingDomain',
          summary: 'Add a sending domain; the verification record is shown only in this answer',
          tags,
          security,
          querystring: NoQuery,
          body: CreateBody,
          response: { 201: answer('The domain, pending, with the records to publish', CreatedSchema), ...errors(400, 401, 403, 409, 413, 415, 429) },
        },
      },
      async (request, reply) => reply.code(201).send(await domains.create(tenant(request), request.body)),
    );
    app.get(
      '/sending-domains/:domain_id',
      {
        schema: {
          operationId: 'appGetSendingDomain',
          summary: 'One sending domain',
          tags,
          security,
          params: DomainParams,
          querystring: NoQuery,
          response: { 200: answer('The sending domain', DomainSchema), ...errors(401, 403, 404, 429) },
        },
      },
      async (request) => domains.get(tenant(request), request.params.domain_id),
    );
    app.post(
      '/sending-domains/:domain_id/verify',
      {
        schema: {
          operationId: 'appVerifySendingDomain',
          summary: 'Check the verification TXT record now',
          tags,
          security,
          params: DomainParams,
          querystring: NoQuery,
          response: { 200: answer('The sending domain: verified once the record matches, else still pending', DomainSchema), ...errors(401, 403, 404, 429) },
        },
      },
      async (request) => domains.verify(tenant(request), request.params.domain_id),
    );
  };
}
