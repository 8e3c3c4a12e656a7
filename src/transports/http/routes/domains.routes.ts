import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { DomainService } from '../../../modules/domains/domain.service.js';
import type { TenantContext } from '../../../modules/tenancy/tenancy.types.js';
import type { CheckStatus } from '../../../modules/domains/dns-checks.js';
import type { DomainStatus } from '../../../modules/domains/domain.table.js';
import { LiteralUnion, ResourceId, answer, errors, everyOf } from '../schemas.js';

const DomainParams = Type.Object({ domain_id: ResourceId }, { additionalProperties: false });
const NoQuery = Type.Object({}, { additionalProperties: false });
const ReturnPathHost = Type.String({ minLength: 1, maxLength: 253, description: 'a subdomain of the sending domain, such as bounces.<domain>, with its MX at Mailroom' });
const CreateBody = Type.Object({ domain: Type.String({ minLength: 1, maxLength: 253 }), return_path_host: Type.Optional(Type.Union([ReturnPathHost, Type.Null()])) }, { additionalProperties: false });
const UpdateBody = Type.Object({ return_path_host: Type.Union([ReturnPathHost, Type.Null()], { description: 'null clears it' }) }, { additionalProperties: false });
const ReturnPathRecord = Type.Object({ record_name: Type.String(), record_type: LiteralUnion(['MX', 'TXT']), record_value: Type.String() }, { title: 'ReturnPathRecord' });
const Record = Type.Object({ record_name: Type.String(), record_type: Type.Literal('TXT'), record_value: Type.String() }, { title: 'DnsRecord' });
const domainProperties = {
  domain_id: Type.String(),
  domain: Type.String(),
  status: LiteralUnion(everyOf<DomainStatus>()(['pending', 'verified'])),
  dkim: Type.Object({ selector: Type.String(), record_name: Type.String(), record_type: Type.Literal('TXT'), record_value: Type.String() }, { title: 'DkimRecord' }),
  spf: Type.Object(
    { record_name: Type.String(), record_type: Type.Literal('TXT'), record_value: Type.String() },
    { description: 'advice, never required: an SPF record for the domain that includes the return-path domain', title: 'SpfRecord' },
  ),
  created_at: Type.String(),
  verified_at: Type.Union([Type.String(), Type.Null()]),
  return_path_host: Type.Union([Type.String(), Type.Null()], { description: 'the envelope sender’s domain for mail from this domain once its records verify; null: the hosted bounce domain' }),
  return_path_verified_at: Type.Union([Type.String(), Type.Null()], { description: 'when a verify last found the return-path host’s MX and SPF right; null: not in use' }),
  return_path_records: Type.Union([Type.Object({ mx: ReturnPathRecord, spf: ReturnPathRecord }), Type.Null()], { description: 'the records to publish at the return-path host' }),
};
const DomainSchema = Type.Object(domainProperties, { title: 'SendingDomain' });
const CreatedSchema = Type.Object({ ...domainProperties, verification: Record }, { title: 'CreatedSendingDomain' });
const Check = Type.Object(
  {
    record_name: Type.String(),
    record_type: LiteralUnion(['TXT', 'MX']),
    expected: Type.String({ description: 'the value to publish (for the verification record, a description: the token is not stored)' }),
    found: Type.Union([Type.Array(Type.String()), Type.Null()], { description: 'the relevant values DNS returned now (an MX as `<preference> <host>`); null when none (or not looked up)' }),
    status: LiteralUnion(everyOf<CheckStatus>()(['ok', 'missing', 'mismatch', 'error'])),
    reason: Type.String({ description: 'a sentence for a person: what is wrong and what to do' }),
  },
  { title: 'RecordCheck' },
);
const CheckedSchema = Type.Object(
  {
    ...domainProperties,
    checks: Type.Object({
      verification: Check,
      dkim: Check,
      spf: Check,
      return_path_mx: Type.Optional(Check),
      return_path_spf: Type.Optional(Check),
    }),
    summary: Type.String({ description: 'one sentence for the whole domain' }),
  },
  { title: 'CheckedSendingDomain' },
);
const DeletedSchema = Type.Object({ ok: Type.Literal(true), domain_id: Type.String(), domain: Type.String() }, { title: 'DeletedSendingDomain' });

/** Sending domains on the session surface (owner or admin of the active workspace). */
export function domainRoutes({ domains, tenant }: { domains: DomainService; tenant: (request: FastifyRequest) => TenantContext }): FastifyPluginAsyncTypebox {
  const tags = ['sending domains'];
  const security = [{ session: [] }];
  const one = { tags, security, params: DomainParams, querystring: NoQuery };
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
      { schema: { operationId: 'appGetSendingDomain', summary: 'One sending domain with its DKIM and SPF records', ...one, response: { 200: answer('The sending domain', DomainSchema), ...errors(401, 403, 404, 429) } } },
      async (request) => domains.get(tenant(request), request.params.domain_id),
    );
    app.patch(
      '/sending-domains/:domain_id',
      {
        schema: {
          operationId: 'appUpdateSendingDomain',
          summary: 'Set or clear the domain’s return-path host (a new one is used once a verify finds its MX and SPF)',
          ...one,
          body: UpdateBody,
          response: { 200: answer('The sending domain', DomainSchema), ...errors(400, 401, 403, 404, 413, 415, 429) },
        },
      },
      async (request) => domains.update(tenant(request), request.params.domain_id, request.body),
    );
    app.delete(
      '/sending-domains/:domain_id',
      {
        schema: {
          operationId: 'appDeleteSendingDomain',
          summary: 'Delete a sending domain that no mailbox uses (409 domain_in_use names what does)',
          ...one,
          response: { 200: answer('Deleted', DeletedSchema), ...errors(401, 403, 404, 409, 429) },
        },
      },
      async (request) => ({ ok: true as const, ...(await domains.remove(tenant(request), request.params.domain_id)) }),
    );
    app.post(
      '/sending-domains/:domain_id/verify',
      {
        schema: {
          operationId: 'appVerifySendingDomain',
          summary: 'Look the domain’s records up now: verified when the verification record matches; per-record status and reasons',
          ...one,
          response: { 200: answer('The sending domain with each record’s check: verified once the verification record matches, else still pending', CheckedSchema), ...errors(401, 403, 404, 429) },
        },
      },
      async (request) => domains.verify(tenant(request), request.params.domain_id),
    );
    app.post(
      '/sending-domains/:domain_id/records',
      {
        schema: {
          operationId: 'appRegenerateSendingDomainRecords',
          summary: 'Show a pending domain’s records again with a new verification token (the earlier token stops verifying)',
          ...one,
          response: { 200: answer('The domain’s records with a new verification token (shown only in this answer)', CreatedSchema), ...errors(401, 403, 404, 409, 429) },
        },
      },
      async (request) => domains.regenerateRecords(tenant(request), request.params.domain_id),
    );
  };
}
