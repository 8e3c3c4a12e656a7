import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import { MAX_ATTACHMENTS, MAX_FILENAME_LENGTH } from '../../../modules/sending/attachments.js';
import { MAX_RECIPIENTS } from '../../../modules/sending/recipients.js';
import { MAX_BATCH_MESSAGES, type BatchOutcome, type SendingService } from '../../../modules/sending/sending.service.js';
import type { TenantContext } from '../../../modules/tenancy/tenancy.types.js';
import { describeValidationIssues, toHttpError } from '../plugins/errors.js';
import { compileBodyValidator, itemsApart } from '../plugins/validation.js';
import { Email, ErrorResponse, Limit, Offset, ResourceId, SendAt, SentMessage, SentPage, answer, errors, operationId, ref, type Surface } from '../schemas.js';

/** Characters of a comma-separated recipient list: MAX_RECIPIENTS addresses of up to 254 characters and their separators. */
const RECIPIENT_LIST_MAX_CHARS = MAX_RECIPIENTS * 256;

/**
 * `to`, `cc`, `bcc`: one address, a comma list, or an array of up to 50, as `parseRecipients`
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
 * their limits; every other route keeps the 1 MiB of app.ts.
 */
export const ATTACHMENT_BODY_LIMIT_BYTES = 40 * 1024 * 1024;

/**
 * `attachments` of every send surface and of drafts. The schema checks the shape; attachments.ts checks
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
/** `delivery_notification` of every send surface. */
export const DeliveryNotification = Type.Boolean({
  description: 'delivery notification: receivers that offer DSN (RFC 3461) are asked to report delivery as well as failure (NOTIFY=SUCCESS,FAILURE), and a delivery report that comes back emits message.delivered; default false',
});
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
    send_at: Type.Optional(SendAt),
    attachments: Type.Optional(Attachments),
    unsubscribe: Type.Optional(
      Type.Boolean({ description: "one-click unsubscribe (RFC 8058): each recipient's copy carries List-Unsubscribe (a link and a mailto address of its own) and List-Unsubscribe-Post, signed by DKIM; default false" }),
    ),
    delivery_notification: Type.Optional(DeliveryNotification),
  },
  { additionalProperties: false, title: 'SendRequest' },
);
/** The answer of every send (202): the message's id and whether it is queued now or waits for its send_at. */
export const Queued = Type.Object(
  {
    message_id: Type.String(),
    status: Type.Union([Type.Literal('queued'), Type.Literal('scheduled')], { description: 'scheduled: it waits for send_at; queued: delivery starts now' }),
    send_at: Type.Optional(Type.String({ format: 'date-time', description: 'scheduled messages only: when it leaves' })),
    suppressed: Type.Optional(Type.Array(Type.String(), { description: 'recipients left out because this workspace suppresses them (see Suppressions); absent when none was' })),
  },
  { title: 'Queued' },
);
const MessageParams = Type.Object({ message_id: ResourceId }, { additionalProperties: false });
const RescheduleBody = Type.Object({ send_at: SendAt }, { additionalProperties: false, title: 'RescheduleRequest' });
/**
 * A batch's body may be far larger than the 1 MiB of other routes: up to 100 messages, each of which may carry
 * attachments (decision 339).
 */
export const BATCH_BODY_LIMIT_BYTES = 50 * 1024 * 1024;
const BatchSendBody = Type.Object(
  {
    messages: itemsApart(
      Type.Array(SendBody, {
        minItems: 1,
        maxItems: MAX_BATCH_MESSAGES,
        description: `1..${MAX_BATCH_MESSAGES} messages, each as POST /send takes it; each is validated on its own, so a bad one fails only itself`,
      }),
    ),
  },
  { additionalProperties: false, title: 'BatchSendRequest' },
);
const BatchQueued = Type.Object({ index: Type.Integer({ minimum: 0, description: 'its place in the request, from 0' }), ...Queued.properties }, { title: 'BatchQueued' });
const BatchRefused = Type.Object(
  {
    index: Type.Integer({ minimum: 0, description: 'its place in the request, from 0' }),
    status_code: Type.Integer({ description: 'the HTTP status POST /send would have answered for this message alone (400, 404, 422…)' }),
    error: ref(ErrorResponse),
  },
  { title: 'BatchRefused' },
);
const BatchSendResult = Type.Object(
  {
    messages: Type.Array(Type.Union([BatchQueued, BatchRefused]), { description: 'one entry per message, in the order sent' }),
    queued: Type.Integer({ minimum: 0 }),
    failed: Type.Integer({ minimum: 0 }),
  },
  { title: 'BatchSendResult' },
);
/** Each message of a batch checked as POST /send checks its body (the request's own validator skips them). */
const validateSendBody = compileBodyValidator(SendBody);
type BatchItem = Static<typeof BatchQueued> | Static<typeof BatchRefused>;

/** Validate each message, send the valid ones as one batch, and answer for every message in its place. */
async function sendBatch(sending: SendingService, tenant: TenantContext, messages: readonly unknown[], requestId: string): Promise<Static<typeof BatchSendResult>> {
  const answers: Array<BatchItem | undefined> = [];
  const valid: Array<{ index: number; input: Static<typeof SendBody> }> = [];
  messages.forEach((message, index) => {
    if (validateSendBody(message)) valid.push({ index, input: message });
    else answers[index] = { index, status_code: 400, error: { error: 'invalid_request', detail: describeValidationIssues(`body.messages.${index}`, validateSendBody.errors ?? []) } };
  });
  const outcomes: BatchOutcome[] = await sending.enqueueBatch(tenant, valid.map((v) => v.input));
  outcomes.forEach((outcome, i) => {
    const index = valid[i]!.index;
    if ('queued' in outcome) {
      answers[index] = { index, ...outcome.queued };
    } else {
      const mapped = toHttpError(outcome.error, requestId);
      answers[index] = { index, status_code: mapped.status, error: mapped.body };
    }
  });
  const items = answers.map((a) => a!);
  const queued = items.filter((a) => 'message_id' in a).length;
  return { messages: items, queued, failed: items.length - queued };
}

const SentQuery = Type.Object({ mailbox: Type.Optional(Email), limit: Type.Optional(Limit), offset: Type.Optional(Offset) }, { additionalProperties: false });
const NoQuery = Type.Object({}, { additionalProperties: false });

/**
 * POST /send, GET /sent (with each message's delivery, recipient by recipient) and the cancel and reschedule of a
 * scheduled message, on both surfaces.
 */
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
    app.post(
      '/send/batch',
      {
        bodyLimit: BATCH_BODY_LIMIT_BYTES,
        schema: {
          operationId: operationId(surface, 'sendBatch'),
          summary: `Send up to ${MAX_BATCH_MESSAGES} messages at once: each queued or refused on its own, the queued ones written in one transaction (200)`,
          tags,
          security,
          querystring: NoQuery,
          body: BatchSendBody,
          response: { 200: answer('Per message, in order: its message_id (queued) or the error its single send would have answered', BatchSendResult), ...errors(400, 401, 403, 413, 415, 429) },
        },
      },
      async (request) => sendBatch(sending, tenant(request), request.body.messages, request.id),
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
    app.post(
      '/messages/:message_id/cancel',
      {
        schema: {
          operationId: operationId(surface, 'cancelScheduledMessage'),
          summary: 'Cancel a scheduled message: it never leaves (cancelled)',
          tags,
          security,
          params: MessageParams,
          querystring: NoQuery,
          response: { 200: answer('The message, cancelled, with its delivery', ref(SentMessage)), ...errors(400, 401, 403, 404, 409, 429) },
        },
      },
      async (request) => sending.cancel(tenant(request), request.params.message_id),
    );
    app.post(
      '/messages/:message_id/reschedule',
      {
        schema: {
          operationId: operationId(surface, 'rescheduleMessage'),
          summary: 'Move a scheduled message to another send_at',
          tags,
          security,
          params: MessageParams,
          querystring: NoQuery,
          body: RescheduleBody,
          response: { 200: answer('The message, still scheduled, with its new send_at', ref(SentMessage)), ...errors(400, 401, 403, 404, 409, 413, 415, 429) },
        },
      },
      async (request) => sending.reschedule(tenant(request), request.params.message_id, request.body.send_at),
    );
  };
}
