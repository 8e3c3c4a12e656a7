import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { EVENT_TYPES } from '../../../modules/events/event.types.js';
import { MAX_URL_LENGTH } from '../../../modules/webhooks/address-rules.js';
import type { WebhookService } from '../../../modules/webhooks/webhook.service.js';
import type { TenantContext } from '../../../modules/tenancy/tenancy.types.js';
import { EventName, Limit, OkResponse, ResourceId, answer, documentedEnum, errors } from '../schemas.js';

// The webhook service refuses another name with invalid_event_type, saying which names it knows.
const EventNameInput = documentedEnum(EVENT_TYPES, Type.String({ minLength: 1, maxLength: 64, description: `one of ${EVENT_TYPES.join(', ')}` }));
const fields = {
  url: Type.String({ minLength: 1, maxLength: MAX_URL_LENGTH, description: 'http(s) URL of a public address; checked against the address rules' }),
  event_types: Type.Array(EventNameInput, { maxItems: 50, description: 'events to deliver; empty or omitted = every event' }),
  secret: Type.String({ minLength: 1, maxLength: 200, description: 'whsec_ + base64 of a 24–64 byte key; never shown again' }),
  active: Type.Boolean(),
};
const CreateBody = Type.Object(
  { url: fields.url, event_types: Type.Optional(fields.event_types), secret: Type.Optional(fields.secret), active: Type.Optional(fields.active) },
  { additionalProperties: false, title: 'WebhookCreate' },
);
const PatchBody = Type.Object(
  { url: Type.Optional(fields.url), event_types: Type.Optional(fields.event_types), secret: Type.Optional(fields.secret), active: Type.Optional(fields.active) },
  { additionalProperties: false, title: 'WebhookChange' },
);
const TestBody = Type.Object({ event_type: EventNameInput }, { additionalProperties: false });
const webhookProperties = {
  webhook_id: Type.String(),
  url: Type.String(),
  event_types: Type.Array(EventName),
  active: Type.Boolean(),
  has_secret: Type.Boolean(),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
  disabled_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'when the service disabled the endpoint (every attempt failing for 5 days, or a 410 answer); null otherwise' }),
  disabled_reason: Type.Union([Type.String(), Type.Null()], { description: 'why the service disabled it, with the last error; cleared by PATCH active: true' }),
};
// Response schemas list every field shown: Fastify's serializer drops the rest, so no secret can slip out.
const Webhook = Type.Object(webhookProperties, { title: 'Webhook' });
const CreatedWebhook = Type.Object(
  { ...webhookProperties, secret: Type.Optional(Type.String({ description: 'only when the service generated it, and only in this answer' })) },
  { title: 'CreatedWebhook' },
);
const Delivery = Type.Object({
  delivery_id: Type.String(),
  event_id: Type.String(),
  event_type: EventName,
  attempt: Type.Integer(),
  status_code: Type.Union([Type.Integer(), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
  success: Type.Boolean(),
  duration_ms: Type.Integer(),
  delivered_at: Type.String({ format: 'date-time' }),
}, { title: 'WebhookDelivery' });
const WebhookParams = Type.Object({ webhook_id: ResourceId }, { additionalProperties: false });
const DeliveryParams = Type.Object({ webhook_id: ResourceId, event_id: ResourceId }, { additionalProperties: false });
const RecoverBody = Type.Object(
  {
    since: Type.String({ minLength: 1, maxLength: 64, description: 'ISO 8601 date-time with a zone, not in the future and at most 30 days ago' }),
    before: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: "a previous answer's next_before: continue the walk back from there" })),
  },
  { additionalProperties: false, title: 'WebhookRecover' },
);
const Recovered = Type.Object(
  {
    ok: Type.Literal(true),
    queued: Type.Integer({ description: 'events queued for the endpoint now' }),
    next_before: Type.Union([Type.String(), Type.Null()], { description: 'null when done; otherwise call again with the same since and this as before' }),
  },
  { title: 'WebhookRecovered' },
);
const Queued = Type.Object({ ok: Type.Literal(true), event_id: Type.String() }, { title: 'WebhookEventQueued' });
const Replayed = Type.Object(
  {
    ok: Type.Literal(true),
    event_id: Type.String(),
    queued: Type.Boolean({ description: 'false when a delivery of this event to this endpoint was pending already: nothing was added' }),
  },
  { title: 'WebhookEventReplayed' },
);
const DeliveriesQuery = Type.Object({ limit: Type.Optional(Limit) }, { additionalProperties: false });
const NoQuery = Type.Object({}, { additionalProperties: false });

/** Webhook endpoints on the session surface (every role). */
export function webhookRoutes({ webhooks, tenant }: { webhooks: WebhookService; tenant: (request: FastifyRequest) => TenantContext }): FastifyPluginAsyncTypebox {
  const tags = ['webhooks'];
  const security = [{ session: [] }];
  const common = errors(400, 401, 403, 404, 429);
  const withBody = errors(400, 401, 403, 404, 413, 415, 429);
  return async (app) => {
    app.get(
      '/webhooks',
      {
        schema: {
          operationId: 'appListWebhooks',
          summary: 'Webhook endpoints of the workspace, newest first',
          tags,
          security,
          querystring: NoQuery,
          response: { 200: answer('The endpoints, newest first', Type.Object({ webhooks: Type.Array(Webhook) })), ...common },
        },
      },
      async (request) => webhooks.list(tenant(request)),
    );

    app.post(
      '/webhooks',
      {
        schema: {
          operationId: 'appCreateWebhook',
          summary: 'Add an endpoint; without a secret one is generated and shown in this answer only',
          tags,
          security,
          querystring: NoQuery,
          body: CreateBody,
          response: { 201: answer('The endpoint, created (with its secret when the service made it)', CreatedWebhook), ...errors(400, 401, 403, 409, 413, 415, 429) },
        },
      },
      async (request, reply) => reply.code(201).send(await webhooks.create(tenant(request), request.body)),
    );

    app.get(
      '/webhooks/:webhook_id',
      {
        schema: {
          operationId: 'appGetWebhook',
          summary: 'One endpoint',
          tags,
          security,
          params: WebhookParams,
          querystring: NoQuery,
          response: { 200: answer('The endpoint (never its secret)', Webhook), ...common },
        },
      },
      async (request) => webhooks.get(tenant(request), request.params.webhook_id),
    );

    app.patch(
      '/webhooks/:webhook_id',
      {
        schema: {
          operationId: 'appUpdateWebhook',
          summary: 'Change the fields given (a new secret keeps the old one signing for 24 hours)',
          tags,
          security,
          params: WebhookParams,
          querystring: NoQuery,
          body: PatchBody,
          response: { 200: answer('The endpoint, changed', Webhook), ...withBody },
        },
      },
      async (request) => webhooks.update(tenant(request), request.params.webhook_id, request.body),
    );

    app.delete(
      '/webhooks/:webhook_id',
      {
        schema: {
          operationId: 'appDeleteWebhook',
          summary: 'Delete an endpoint, its pending deliveries and its history',
          tags,
          security,
          params: WebhookParams,
          querystring: NoQuery,
          response: { 200: answer('The endpoint is gone', OkResponse), ...common },
        },
      },
      async (request) => webhooks.remove(tenant(request), request.params.webhook_id),
    );

    app.get(
      '/webhooks/:webhook_id/deliveries',
      {
        schema: {
          operationId: 'appListWebhookDeliveries',
          summary: 'Delivery attempts of the endpoint, newest first',
          tags,
          security,
          params: WebhookParams,
          querystring: DeliveriesQuery,
          response: { 200: answer('The attempts, newest first', Type.Object({ deliveries: Type.Array(Delivery) })), ...common },
        },
      },
      async (request) => webhooks.deliveries(tenant(request), request.params.webhook_id, request.query.limit ?? 50),
    );

    app.post(
      '/webhooks/:webhook_id/test',
      {
        schema: {
          operationId: 'appTestWebhook',
          summary: 'Queue one synthetic event of the given type for this endpoint only (202)',
          tags,
          security,
          params: WebhookParams,
          querystring: NoQuery,
          body: TestBody,
          response: {
            202: answer('The test event is queued for this endpoint', Queued),
            ...errors(400, 401, 403, 404, 409, 413, 415, 429),
          },
        },
      },
      async (request, reply) =>
        reply.code(202).send(await webhooks.test(tenant(request), request.params.webhook_id, request.body.event_type)),
    );

    app.post(
      '/webhooks/:webhook_id/recover',
      {
        schema: {
          operationId: 'appRecoverWebhook',
          summary: 'Queue again every event since a time that the endpoint did not receive (202)',
          tags,
          security,
          params: WebhookParams,
          querystring: NoQuery,
          body: RecoverBody,
          response: { 202: answer('The missed events are queued, oldest first', Recovered), ...errors(400, 401, 403, 404, 409, 413, 415, 429) },
        },
      },
      async (request, reply) => reply.code(202).send(await webhooks.recover(tenant(request), request.params.webhook_id, request.body)),
    );

    app.post(
      '/webhooks/:webhook_id/deliveries/:event_id/replay',
      {
        schema: {
          operationId: 'appReplayWebhookEvent',
          summary: 'Send one event to the endpoint again, with the same event id and payload (202)',
          tags,
          security,
          params: DeliveryParams,
          querystring: NoQuery,
          response: { 202: answer('The event is queued for this endpoint (once: a pending delivery of it is not doubled)', Replayed), ...errors(400, 401, 403, 404, 409, 429) },
        },
      },
      async (request, reply) => reply.code(202).send(await webhooks.replay(tenant(request), request.params.webhook_id, request.params.event_id)),
    );
  };
}
