import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { MAX_RECIPIENTS } from '../../../modules/sending/recipients.js';
import type { SendingService } from '../../../modules/sending/sending.service.js';
import type { TenantContext } from '../../../modules/tenancy/tenancy.types.js';
import { DeliveryEventSchema, Email, Limit, Offset, StringEnum, answer, errors, messageListProperties, operationId, type Surface } from '../schemas.js';

/** Characters of a comma-separated recipient list: MAX_RECIPIENTS addresses of up to 254 characters and their separators. */
const RECIPIENT_LIST_MAX_CHARS = MAX_RECIPIENTS * 256;

/**
 * `to`, `cc`, `bcc`: one address, a comma list, or an array of up to 50 (contract §4 Sending), as `parseRecipients`
 * reads them. A send needs at least one (`minimum` 1); a draft may have none yet (0: `""` and `[]` clear the field).
 */
export function recipientsSchema(minimum: 0 | 1) {
  return Type.Union([
    Type.String({ minLength: minimum === 1 ? 3 : 0, maxLength: RECIPIENT_LIST_MAX_CHARS }),
    Type.Array(Type.String({ minLength: 3, maxLength: 254 }), { minItems: minimum, maxItems: MAX_RECIPIENTS }),
  ]);
}
export const Recipients = recipientsSchema(1);
export const SendBody = Type.Object(
  {
    from_mailbox: Email,
    to: Recipients,
    cc: Type.Optional(Recipients),
    bcc: Type.Optional(Recipients),
    subject: Type.String({ maxLength: 998 }),
    body: Type.String({ maxLength: 512 * 1024 }),
    html: Type.Optional(Type.String({ maxLength: 512 * 1024 })),
    from_name: Type.Optional(Type.String({ maxLength: 200 })),
    reply_to: Type.Optional(Email),
  },
  { additionalProperties: false, title: 'SendRequest' },
);
export const Queued = Type.Object({ message_id: Type.String(), status: Type.Literal('queued') }, { title: 'Queued' });
const RecipientSchema = Type.Object(
  {
    address: Type.String(),
    status: StringEnum(['pending', 'accepted', 'failed', 'unknown']),
    response: Type.Union([Type.String(), Type.Null()], { description: 'the last SMTP answer for this recipient' }),
    mx: Type.Union([Type.String(), Type.Null()], { description: 'the host that gave it' }),
  },
  { title: 'RecipientStatus' },
);
const SentMessage = Type.Object(
  {
    ...messageListProperties,
    status: StringEnum(['queued', 'processing', 'accepted', 'failed', 'unknown'], { description: 'the delivery status' }),
    recipients: Type.Array(RecipientSchema),
    attempts: Type.Array(DeliveryEventSchema, { description: 'every SMTP transaction (and failed route lookup), oldest first' }),
    last_error: Type.Union([Type.String(), Type.Null()]),
  },
  { title: 'SentMessage' },
);
const SentPage = Type.Object({ messages: Type.Array(SentMessage), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer() }, { title: 'SentPage' });
const SentQuery = Type.Object({ mailbox: Type.Optional(Email), limit: Type.Optional(Limit), offset: Type.Optional(Offset) }, { additionalProperties: false });
const NoQuery = Type.Object({}, { additionalProperties: false });

/** POST /send on both surfaces, and GET /sent (session) with delivery status. */
export function sendingRoutes({ sending, tenant, surface }: { sending: SendingService; tenant: (request: FastifyRequest) => TenantContext; surface: Surface }): FastifyPluginAsyncTypebox {
  const security = surface === 'api-key' ? [{ apiKey: [] }] : [{ session: [] }];
  const tags = ['sending'];
  return async (app) => {
    app.post(
      '/send',
      {
        schema: {
          operationId: operationId(surface, 'sendMessage'),
          summary: 'Send a message: stored in sent, queued for delivery (202)',
          tags,
          security,
          querystring: NoQuery,
          body: SendBody,
          response: { 202: answer('Stored in sent and queued for delivery', Queued), ...errors(400, 401, 403, 404, 413, 415, 422, 429) },
        },
      },
      async (request, reply) => reply.code(202).send(await sending.enqueue(tenant(request), request.body)),
    );
    if (surface !== 'session') return;
    app.get(
      '/sent',
      {
        schema: {
          operationId: 'appListSent',
          summary: 'Sent messages with delivery status, newest first',
          tags,
          security,
          querystring: SentQuery,
          response: { 200: answer('A page of sent messages with their delivery status, newest first', SentPage), ...errors(400, 401, 403, 404, 429) },
        },
      },
      async (request) => {
        const q = request.query;
        return sending.listSent(tenant(request), { mailbox: q.mailbox, limit: q.limit ?? 50, offset: q.offset ?? 0 });
      },
    );
  };
}
