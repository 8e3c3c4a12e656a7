import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { TransactionalService } from '../../../modules/transactional/transactional.service.js';
import { MAX_IDEMPOTENCY_KEY_LENGTH } from '../../../modules/transactional/transactional.service.js';
import { Email, ResourceId, answer, deliveryStatus, errors } from '../schemas.js';
import { serviceTokenOf } from '../plugins/auth.js';
import { ATTACHMENT_BODY_LIMIT_BYTES, Attachments, DeliveryNotification, Queued, Recipients } from './sending.routes.js';

/** Exactly these fields; anything else is a 400, so nothing unvalidated reaches the canonical hash. */
const TransactionalBody = Type.Object(
  {
    from_mailbox: Email,
    to: Recipients,
    subject: Type.String({ maxLength: 998 }),
    body: Type.String({ maxLength: 512 * 1024 }),
    html: Type.Optional(Type.String({ maxLength: 512 * 1024 })),
    from_name: Type.Optional(Type.String({ maxLength: 200 })),
    reply_to: Type.Optional(Email),
    attachments: Type.Optional(Attachments),
    delivery_notification: Type.Optional(DeliveryNotification),
  },
  { additionalProperties: false, title: 'TransactionalRequest' },
);
// The one list of delivery statuses; a transactional message is never scheduled, so never `scheduled` nor `cancelled`.
const Status = deliveryStatus('the delivery status (a transactional message is never scheduled)');
const MessageStatus = Type.Object({
  message_id: Type.String(),
  status: Status,
  idempotency_key: Type.String(),
  from_mailbox: Type.String(),
  to: Type.Array(Type.String()),
  subject: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
  attempts: Type.Array(Type.Object({}, { additionalProperties: true })),
  last_error: Type.Union([Type.String(), Type.Null()]),
  smtp_response: Type.Union([Type.String(), Type.Null()]),
  delivery_notification: Type.Boolean({ description: 'whether it was sent with delivery_notification' }),
}, { title: 'TransactionalMessage' });
const MessageParams = Type.Object({ message_id: ResourceId }, { additionalProperties: false });
const NoQuery = Type.Object({}, { additionalProperties: false });
const KeyQuery = Type.Object({ idempotency_key: Type.String({ minLength: 1, maxLength: MAX_IDEMPOTENCY_KEY_LENGTH }) }, { additionalProperties: false });

/** The transactional surface (/v1/transactional): service tokens only, exactly-once sends. */
export function transactionalRoutes({ transactional }: { transactional: TransactionalService }): FastifyPluginAsyncTypebox {
  const tags = ['transactional'];
  const security = [{ serviceToken: [] }];
  return async (app) => {
    app.post(
      '/messages',
      {
        bodyLimit: ATTACHMENT_BODY_LIMIT_BYTES,
        schema: {
          operationId: 'transactionalSendMessage',
          summary: 'Queue one message exactly once per Idempotency-Key (202; a replay answers the first 202 with Idempotent-Replayed: true)',
          tags,
          security,
          headers: Type.Object({ 'idempotency-key': Type.Optional(Type.String({ description: '1–255 printable characters, stable per logical request' })) }),
          querystring: NoQuery,
          body: TransactionalBody,
          response: { 202: answer('Queued (or, with Idempotent-Replayed: true, the first answer for this key again)', Queued), ...errors(400, 401, 403, 409, 413, 415, 422, 429) },
        },
      },
      async (request, reply) => {
        const result = await transactional.send(serviceTokenOf(request), request.headers['idempotency-key'], request.body);
        if (result.replayed) void reply.header('idempotent-replayed', 'true');
        return reply.code(202).send(result.body);
      },
    );
    app.get(
      '/messages/:message_id',
      {
        schema: {
          operationId: 'transactionalGetMessage',
          summary: "A message's delivery status (this token's messages only)",
          tags,
          security,
          params: MessageParams,
          querystring: NoQuery,
          response: { 200: answer('The message and its delivery status', MessageStatus), ...errors(400, 401, 404, 429) },
        },
      },
      async (request) => transactional.get(serviceTokenOf(request), request.params.message_id),
    );
    app.get(
      '/messages',
      {
        schema: {
          operationId: 'transactionalGetMessageByKey',
          summary: 'The message created with an Idempotency-Key, with its status',
          tags,
          security,
          querystring: KeyQuery,
          response: { 200: answer('The message and its delivery status', MessageStatus), ...errors(400, 401, 404, 429) },
        },
      },
      async (request) => transactional.getByKey(serviceTokenOf(request), request.query.idempotency_key),
    );
  };
}
