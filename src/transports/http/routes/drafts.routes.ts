import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { DraftService } from '../../../modules/sending/draft.service.js';
import { MAX_BODY_LENGTH } from '../../../modules/sending/sending.service.js';
import type { TenantContext } from '../../../modules/tenancy/tenancy.types.js';
import { readUploads, registerUploads } from '../plugins/uploads.js';
import { optionalBody, streamedBody } from '../plugins/validation.js';
import { Email, Limit, Offset, OkResponse, ResourceId, SendAt, answer, errors } from '../schemas.js';
import { sendDownload } from './download.js';
import { Download } from './messages.routes.js';
import { ATTACHMENT_BODY_LIMIT_BYTES, Attachments, Queued, recipientsSchema } from './sending.routes.js';

/** As a send takes them (one address, a comma list, an array); stored and shown as an array, lower-case. */
const Addresses = recipientsSchema(0);
const fields = {
  to: Addresses,
  cc: Addresses,
  bcc: Addresses,
  subject: Type.String({ maxLength: 998 }),
  body: Type.String({ maxLength: MAX_BODY_LENGTH, description: 'plain text' }),
  html: Type.Union([Type.String({ maxLength: MAX_BODY_LENGTH }), Type.Null()]),
  in_reply_to: Type.Union([ResourceId, Type.Null()], { description: 'message_id (msg_…) of a message of the workspace this draft answers' }),
  attachments: Attachments,
};
const CreateBody = Type.Object(
  {
    mailbox: Email,
    to: Type.Optional(fields.to),
    cc: Type.Optional(fields.cc),
    bcc: Type.Optional(fields.bcc),
    subject: Type.Optional(fields.subject),
    body: Type.Optional(fields.body),
    html: Type.Optional(fields.html),
    in_reply_to: Type.Optional(fields.in_reply_to),
    attachments: Type.Optional(fields.attachments),
  },
  { additionalProperties: false, title: 'DraftCreate' },
);
/** Sending a draft may schedule it or hold it for the undo window; no body (or `{}`) sends it now. */
const DraftSendBody = Type.Object(
  {
    send_at: Type.Optional(SendAt),
    hold: Type.Optional(
      Type.Boolean({
        description:
          "true: held for the server's undo window (MAILROOM_UNDO_SEND_SECONDS) before it leaves, as a message scheduled that far ahead; POST /app/api/messages/{message_id}/undo-send takes it back as a draft meanwhile. No effect with a send_at ahead, or when the window is 0",
      }),
    ),
  },
  { additionalProperties: false, title: 'DraftSendRequest' },
);
/** A draft send's answer: a send's, with the hold's length when it was held. */
const DraftQueued = Type.Object(
  { ...Queued.properties, hold_seconds: Type.Optional(Type.Integer({ minimum: 1, description: 'a held send only: the seconds it waits (it leaves at send_at); undo-send takes it back until then' })) },
  { title: 'DraftQueued' },
);
const MessageParams = Type.Object({ message_id: ResourceId }, { additionalProperties: false });
const PatchBody = Type.Object(
  {
    mailbox: Type.Optional(Email),
    to: Type.Optional(fields.to),
    cc: Type.Optional(fields.cc),
    bcc: Type.Optional(fields.bcc),
    subject: Type.Optional(fields.subject),
    body: Type.Optional(fields.body),
    html: Type.Optional(fields.html),
    in_reply_to: Type.Optional(fields.in_reply_to),
    attachments: Type.Optional({ ...fields.attachments, description: "replaces all of the draft's files (uploads included); [] removes them" }),
  },
  { additionalProperties: false, title: 'DraftChange' },
);
const DraftAttachment = Type.Object({
  attachment_id: Type.String(),
  filename: Type.String(),
  content_type: Type.String(),
  size: Type.Integer({ description: 'bytes' }),
  content_id: Type.Union([Type.String(), Type.Null()]),
  inline: Type.Boolean({ description: 'true when it has a content_id: an inline part the HTML shows as cid:…' }),
}, { title: 'DraftAttachment' });
const Draft = Type.Object({
  draft_id: Type.String(),
  mailbox: Type.String(),
  to: Type.Array(Type.String()),
  cc: Type.Array(Type.String()),
  bcc: Type.Array(Type.String()),
  subject: Type.String(),
  body: Type.String(),
  html: Type.Union([Type.String(), Type.Null()]),
  in_reply_to: Type.Union([Type.String(), Type.Null()]),
  attachments: Type.Array(DraftAttachment),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
}, { title: 'Draft' });
const DraftPage = Type.Object({ drafts: Type.Array(Draft), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer() }, { title: 'DraftPage' });
const DraftParams = Type.Object({ draft_id: ResourceId }, { additionalProperties: false });
const AttachmentParams = Type.Object({ draft_id: ResourceId, attachment_id: ResourceId }, { additionalProperties: false });
const UploadForm = Type.Object(
  {
    file: Type.Array(Type.String({ format: 'binary' }), { description: 'one or more file parts (any field name), each with a filename and its Content-Type' }),
    content_id: Type.Optional(Type.String({ description: 'makes the file part after it an inline part (cid:…)' })),
  },
  { title: 'DraftAttachmentUpload' },
);
const ListQuery = Type.Object({ mailbox: Type.Optional(Email), limit: Type.Optional(Limit), offset: Type.Optional(Offset) }, { additionalProperties: false });
const NoQuery = Type.Object({}, { additionalProperties: false });

/** Drafts (session surface): CRUD, and send, which hands the draft to the outbound pipeline and deletes it. */
export function draftRoutes({ drafts, tenant }: { drafts: DraftService; tenant: (request: FastifyRequest) => TenantContext }): FastifyPluginAsyncTypebox {
  const security = [{ session: [] }];
  const tags = ['drafts'];
  const common = errors(400, 401, 403, 404, 429);
  const withBody = errors(400, 401, 403, 404, 413, 415, 429);
  return async (app) => {
    app.get(
      '/drafts',
      {
        schema: {
          operationId: 'appListDrafts',
          summary: 'Drafts of the workspace, newest first',
          tags,
          security,
          querystring: ListQuery,
          response: { 200: answer('A page of drafts, newest first', DraftPage), ...common },
        },
      },
      async (request) => {
        const q = request.query;
        return drafts.list(tenant(request), { mailbox: q.mailbox, limit: q.limit ?? 50, offset: q.offset ?? 0 });
      },
    );

    app.post(
      '/drafts',
      {
        bodyLimit: ATTACHMENT_BODY_LIMIT_BYTES,
        schema: {
          operationId: 'appCreateDraft',
          summary: 'Create a draft (only mailbox is required)',
          tags,
          security,
          querystring: NoQuery,
          body: CreateBody,
          response: { 201: answer('The draft, created', Draft), ...withBody },
        },
      },
      async (request, reply) => reply.code(201).send(await drafts.create(tenant(request), request.body)),
    );

    app.get(
      '/drafts/:draft_id',
      { schema: { operationId: 'appGetDraft', summary: 'One draft', tags, security, params: DraftParams, querystring: NoQuery, response: { 200: answer('The draft', Draft), ...common } } },
      async (request) => drafts.get(tenant(request), request.params.draft_id),
    );

    app.patch(
      '/drafts/:draft_id',
      {
        bodyLimit: ATTACHMENT_BODY_LIMIT_BYTES,
        schema: {
          operationId: 'appUpdateDraft',
          summary: 'Change the fields given',
          tags,
          security,
          params: DraftParams,
          querystring: NoQuery,
          body: PatchBody,
          response: { 200: answer('The draft, changed', Draft), ...withBody },
        },
      },
      async (request) => drafts.update(tenant(request), request.params.draft_id, request.body),
    );

    app.delete(
      '/drafts/:draft_id',
      {
        schema: {
          operationId: 'appDeleteDraft',
          summary: 'Delete a draft',
          tags,
          security,
          params: DraftParams,
          querystring: NoQuery,
          response: { 200: answer('The draft is gone', OkResponse), ...common },
        },
      },
      async (request) => drafts.remove(tenant(request), request.params.draft_id),
    );

    app.post(
      '/drafts/:draft_id/send',
      {
        schema: {
          operationId: 'appSendDraft',
          summary: 'Send the draft: queued for delivery, a copy in sent, the draft deleted (202)',
          tags,
          security,
          params: DraftParams,
          querystring: NoQuery,
          body: optionalBody(DraftSendBody),
          response: { 202: answer('Stored in sent and queued for delivery (or scheduled, or held); the draft is gone', DraftQueued), ...errors(400, 401, 403, 404, 413, 415, 422, 429) },
        },
      },
      async (request, reply) => reply.code(202).send(await drafts.send(tenant(request), request.params.draft_id, { send_at: request.body?.send_at, hold: request.body?.hold })),
    );

    app.post(
      '/messages/:message_id/undo-send',
      {
        schema: {
          operationId: 'appUndoSend',
          summary: 'Take back a message that has not left yet (held or scheduled): cancelled, its sent copy deleted, a draft again (201)',
          tags,
          security,
          params: MessageParams,
          querystring: NoQuery,
          response: { 201: answer('The new draft, made of the message', Draft), ...errors(400, 401, 403, 404, 409, 429) },
        },
      },
      async (request, reply) => reply.code(201).send(await drafts.undoSend(tenant(request), request.params.message_id)),
    );

    await app.register(draftAttachmentRoutes({ drafts, tenant }));
  };
}

/** A draft's files: uploaded as multipart/form-data (in a scope of their own: no other route parses it), removed, downloaded. */
function draftAttachmentRoutes({ drafts, tenant }: { drafts: DraftService; tenant: (request: FastifyRequest) => TenantContext }): FastifyPluginAsyncTypebox {
  const security = [{ session: [] }];
  const tags = ['drafts'];
  const common = errors(400, 401, 403, 404, 429);
  return async (app) => {
    await registerUploads(app);
    app.post(
      '/drafts/:draft_id/attachments',
      {
        schema: {
          operationId: 'appUploadDraftAttachments',
          summary: 'Attach files to a draft (multipart/form-data: one or more file parts; 25 MiB per draft in all)',
          tags,
          security,
          params: DraftParams,
          querystring: NoQuery,
          consumes: ['multipart/form-data'],
          body: streamedBody(UploadForm),
          response: { 201: answer('The draft, with the files attached', Draft), ...errors(400, 401, 403, 404, 413, 415, 429) },
        },
      },
      async (request, reply) => {
        const t = tenant(request);
        // The draft is found, and its room known, before the first byte of the form is read.
        const room = await drafts.attachmentRoom(t, request.params.draft_id);
        const files = await readUploads(request, room);
        return reply.code(201).send(await drafts.addAttachments(t, request.params.draft_id, files));
      },
    );
    app.delete(
      '/drafts/:draft_id/attachments/:attachment_id',
      {
        schema: {
          operationId: 'appDeleteDraftAttachment',
          summary: 'Remove a file from a draft',
          tags,
          security,
          params: AttachmentParams,
          querystring: NoQuery,
          response: { 200: answer('The draft, without the file', Draft), ...common },
        },
      },
      async (request) => drafts.removeAttachment(tenant(request), request.params.draft_id, request.params.attachment_id),
    );
    app.get(
      '/drafts/:draft_id/attachments/:attachment_id',
      {
        schema: {
          operationId: 'appDownloadDraftAttachment',
          summary: "Download a draft's file",
          tags,
          security,
          params: AttachmentParams,
          querystring: NoQuery,
          response: { 200: Download("The file's bytes, with its own Content-Type", '*/*'), ...common },
        },
      },
      async (request, reply) => sendDownload(reply, await drafts.attachment(tenant(request), request.params.draft_id, request.params.attachment_id)),
    );
  };
}
