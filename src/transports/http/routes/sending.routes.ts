import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import type { SendingService } from '../../../modules/sending/sending.service.js';
import type { TenantContext } from '../../../modules/tenancy/tenancy.types.js';
import { Email, Limit, Offset, errors } from '../schemas.js';

/** `to`, `cc`, `bcc`: one address, a comma list, or an array of 1–50 (contract §4 Sending). */
export const Recipients = Type.Union([Type.String({ minLength: 3, maxLength: 50 * 256 }), Type.Array(Type.String({ minLength: 3, maxLength: 254 }), { minItems: 1, maxItems: 50 })]);
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
  { additionalProperties: false },
);
const Queued = Type.Object({ message_id: Type.String(), status: Type.Literal('queued') });
const SentQuery = Type.Object({ mailbox: Type.Optional(Email), limit: Type.Optional(Limit), offset: Type.Optional(Offset) }, { additionalProperties: false });
const NoQuery = Type.Object({}, { additionalProperties: false });

/** POST /send on both surfaces, and GET /sent (session) with delivery status. */
export function sendingRoutes({ sending, tenant, surface }: { sending: SendingService; tenant: (request: FastifyRequest) => TenantContext; surface: 'api-key' | 'session' }): FastifyPluginAsync {
  const security = surface === 'api-key' ? [{ apiKey: [] }] : [{ session: [] }];
  const tags = ['sending'];
  return async (app) => {
    app.post(
      '/send',
      {
        schema: {
          summary: 'Send a message: stored in sent, queued for delivery (202)',
          tags,
          security,
          querystring: NoQuery,
          body: SendBody,
          response: { 202: Queued, ...errors(400, 401, 403, 404, 413, 415, 422, 429) },
        },
      },
      async (request, reply) => reply.code(202).send(await sending.enqueue(tenant(request), request.body as Static<typeof SendBody>)),
    );
    if (surface !== 'session') return;
    app.get(
      '/sent',
      { schema: { summary: 'Sent messages with delivery status, newest first', tags, security, querystring: SentQuery, response: errors(400, 401, 403, 404, 429) } },
      async (request) => {
        const q = request.query as Static<typeof SentQuery>;
        return sending.listSent(tenant(request), { mailbox: q.mailbox, limit: q.limit ?? 50, offset: q.offset ?? 0 });
      },
    );
  };
}
