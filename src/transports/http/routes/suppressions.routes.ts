import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { MAX_DETAIL_LENGTH, type SuppressionService } from '../../../modules/suppressions/suppression.service.js';
import { SUPPRESSION_REASONS } from '../../../modules/mail/suppression.table.js';
import type { TenantContext } from '../../../modules/tenancy/tenancy.types.js';
import { Email, Limit, Offset, StringEnum, answer, errors } from '../schemas.js';

const Suppression = Type.Object(
  {
    address: Type.String({ description: 'lower case' }),
    reason: StringEnum(SUPPRESSION_REASONS, { description: 'hard_bounce: a 5.x.x DSN or a 5xx refusal at RCPT TO; complaint: an ARF report; manual: added with POST; unsubscribed: the recipient used a one-click unsubscribe link or its mailto address' }),
    detail: Type.Union([Type.String(), Type.Null()], { description: "the DSN's diagnostic, the SMTP reply, the feedback type, or the note given with POST" }),
    status_code: Type.Union([Type.String(), Type.Null()], { description: 'the DSN status (5.1.1) or the SMTP reply\'s enhanced code (else its basic code, 550); null for complaints and manual entries' }),
    message_id: Type.Union([Type.String(), Type.Null()], { description: 'the message whose bounce or complaint added it; null for manual entries' }),
    created_at: Type.String(),
  },
  { title: 'Suppression' },
);
const SuppressionPage = Type.Object(
  { suppressions: Type.Array(Suppression), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer() },
  { title: 'SuppressionPage' },
);
const AddressParams = Type.Object({ address: Email }, { additionalProperties: false });
const PageQuery = Type.Object(
  { reason: Type.Optional(StringEnum(SUPPRESSION_REASONS, { description: 'only entries of this reason' })), limit: Type.Optional(Limit), offset: Type.Optional(Offset) },
  { additionalProperties: false },
);
const NoQuery = Type.Object({}, { additionalProperties: false });
const SuppressionInput = Type.Object(
  { address: Email, detail: Type.Optional(Type.String({ maxLength: MAX_DETAIL_LENGTH, description: 'a note: why' })) },
  { additionalProperties: false, title: 'SuppressionInput' },
);

/** The workspace's suppression list on the session surface: /suppressions[/{address}] (every role, as the lists). */
export function suppressionRoutes({ suppressions, tenant }: { suppressions: SuppressionService; tenant: (request: FastifyRequest) => TenantContext }): FastifyPluginAsyncTypebox {
  const tags = ['suppressions'];
  const security = [{ session: [] }];
  return async (app) => {
    app.get(
      '/suppressions',
      {
        schema: {
          operationId: 'appListSuppressions',
          summary: 'Suppressed addresses, newest first',
          tags,
          security,
          querystring: PageQuery,
          response: { 200: answer('A page of the suppression list', SuppressionPage), ...errors(400, 401, 403, 429) },
        },
      },
      async (request) => {
        const q = request.query;
        return suppressions.list(tenant(request), { reason: q.reason, limit: q.limit ?? 50, offset: q.offset ?? 0 });
      },
    );

    app.post(
      '/suppressions',
      {
        schema: {
          operationId: 'appAddSuppression',
          summary: 'Suppress an address by hand (an address suppressed already keeps its entry: 200)',
          tags,
          security,
          querystring: NoQuery,
          body: SuppressionInput,
          response: { 200: answer('The address was suppressed already: its entry, unchanged', Suppression), 201: answer('The entry, added', Suppression), ...errors(400, 401, 403, 413, 415, 429) },
        },
      },
      async (request, reply) => {
        const { suppression, created } = await suppressions.add(tenant(request), request.body);
        return reply.code(created ? 201 : 200).send(suppression);
      },
    );

    app.get(
      '/suppressions/:address',
      {
        schema: {
          operationId: 'appGetSuppression',
          summary: 'One suppressed address: why, and the message that caused it',
          tags,
          security,
          params: AddressParams,
          querystring: NoQuery,
          response: { 200: answer('The entry', Suppression), ...errors(400, 401, 403, 404, 429) },
        },
      },
      async (request) => suppressions.get(tenant(request), request.params.address),
    );

    app.delete(
      '/suppressions/:address',
      {
        schema: {
          operationId: 'appRemoveSuppression',
          summary: 'Lift a suppression: the address may be sent to again',
          tags,
          security,
          params: AddressParams,
          querystring: NoQuery,
          response: { 200: answer('The suppression is gone', Type.Object({ ok: Type.Literal(true), address: Type.String() }, { title: 'SuppressionRemoved' })), ...errors(400, 401, 403, 404, 429) },
        },
      },
      async (request) => {
        const removed = await suppressions.remove(tenant(request), request.params.address);
        return { ok: true as const, address: removed.address };
      },
    );
  };
}
