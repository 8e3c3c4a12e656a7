import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { MAX_ATTACHMENTS, MAX_FILENAME_LENGTH } from '../../../modules/sending/attachments.js';
import { MAX_RECIPIENTS } from '../../../modules/sending/recipients.js';
import type { SendingService } from '../../../modules/sending/sending.service.js';
import type { TenantContext } from '../../../modules/tenancy/tenancy.types.js';
import { Email, Limit, Offset, SentPage, answer, errors, operationId, type Surface } from '../schemas.js';

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

/**
 * The JSON body of a route that takes attachments: 25 MiB of files as base64 (a third more) plus both bodies at
 * their limits; every other route keeps the 1 MiB of contract §2 (app.ts).
 */
export const ATTACHMENT_BODY_LIMIT_BYTES = 40 * 1024 * 1024;

/**
 * `attachments` of every send surface and of drafts (issue 27). The schema checks the shape; attachments.ts checks
 * the rest (media type, base64, the 25 MiB total) and names the field in its 400/413. `content` has no `maxLength`:
 * the body limit bounds it, and the validator would count its characters one by one.
 */
export const Attachments = Type.Array(
  Type.Object(
    {
      filename: Type.String({ minLength: 1, maxLength: MAX_FILENAME_LENGTH, description: 'the name the recipient sees; no control characters' }),
      content_type: Type.String({ minLength: 3, maxLength: 255, description: 'type/subtype, e.g. application/pdf' }),
      content: Type.String({ description: 'the file, base64 (standard alphabet; line breaks allowed)', contentEncoding: 'base64' }),
      content_id: Type.Optional(Type.String({ minLength: 1, maxLength: 257, description: 'makes it an inline part: the HTML shows it as <img src="cid:…">' })),
    },
    { additionalProperties: false, title: 'AttachmentUpload' },
  ),
  { maxItems: MAX_ATTACHMENTS, description: 'files sent as MIME parts; at most 25 MiB decoded in all' },
);
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
    attachments: Type.Optional(Attachments),
  },
  { additionalProperties: false, title: 'SendRequest' },
);
export const Queued = Type.Object({ message_id: Type.String(), status: Type.Literal('queued') }, { title: 'Queued' });
const SentQuery = Type.Object({ mailbox: Type.Optional(Email), limit: Type.Optional(Limit), offset: Type.Optional(Offset) }, { additionalProperties: false });
const NoQuery = Type.Object({}, { additionalProperties: false });

/** POST /send and GET /sent (with each message's delivery, recipient by recipient) on both surfaces. */
export function sendingRoutes({ sending, tenant, surface }: { sending: SendingService; tenant: (request: FastifyRequest) => TenantContext; surface: Surface }): FastifyPluginAsyncTypebox {
  const security = surface === 'api-key' ? [{ apiKey: [] }] : [{ session: [] }];
  const tags = ['sending'];
  return async (app) => {
    app.post(
      '/send',
      {
        bodyLimit: ATTACHMENT_BODY_LIMIT_BYTES,
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
    app.get(
      '/sent',
      {
        schema: {
          operationId: operationId(surface, 'listSent'),
          summary: 'Sent messages with their delivery status, recipients and attempts, newest first',
          tags,
          security,
          querystring: SentQuery,
          response: { 200: answer('A page of sent messages with their delivery status, recipients and attempts, newest first', SentPage), ...errors(400, 401, 403, 404, 429) },
        },
      },
      async (request) => {
        const q = request.query;
        return sending.listSent(tenant(request), { mailbox: q.mailbox, limit: q.limit ?? 50, offset: q.offset ?? 0 });
      },
    );
  };
}
