import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { MAX_RETENTION_DAYS, type RetentionService } from '../../../modules/retention/retention.service.js';
import type { TenantContext } from '../../../modules/tenancy/tenancy.types.js';
import { answer, errors } from '../schemas.js';

const Days = Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: 'days; null = never deleted' });
const Retention = Type.Object(
  {
    trash_days: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: "days a message stays in trash, counted from its last change (moved there, read, labelled); null = never" }),
    spam_days: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: 'the same for spam' }),
    trash_custom: Type.Boolean({ description: "true: the workspace chose trash_days; false: the operator's default applies (and follows it)" }),
    spam_custom: Type.Boolean({ description: 'the same for spam_days' }),
    defaults: Type.Object({ trash_days: Days, spam_days: Days }, { description: "the operator's defaults (MAILROOM_RETENTION_TRASH_DAYS, MAILROOM_RETENTION_SPAM_DAYS)" }),
    records: Type.Object(
      { events_days: Days, webhook_attempts_days: Days, dead_jobs_days: Days, idempotency_days: Days },
      { description: 'how long the service keeps its own records, set by the operator for every workspace' },
    ),
  },
  { title: 'Retention' },
);
const ChangeDays = Type.Union([Type.Integer({ minimum: 0, maximum: MAX_RETENTION_DAYS }), Type.Null()], { description: `days 1..${MAX_RETENTION_DAYS}; 0 or null: never delete` });
const RetentionChange = Type.Object(
  { trash_days: Type.Optional(ChangeDays), spam_days: Type.Optional(ChangeDays) },
  { additionalProperties: false, title: 'RetentionChange' },
);
const NoQuery = Type.Object({}, { additionalProperties: false });

/** The workspace's retention periods on the session surface: GET (every role) and PATCH (owner, admin) /retention. */
export function retentionRoutes({ retention, tenant }: { retention: RetentionService; tenant: (request: FastifyRequest) => TenantContext }): FastifyPluginAsyncTypebox {
  const tags = ['retention'];
  const security = [{ session: [] }];
  return async (app) => {
    app.get(
      '/retention',
      {
        schema: {
          operationId: 'appGetRetention',
          summary: 'How long trash, spam and the service\'s records are kept',
          tags,
          security,
          querystring: NoQuery,
          response: { 200: answer('The periods', Retention), ...errors(400, 401, 403, 429) },
        },
      },
      async (request) => retention.get(tenant(request)),
    );

    app.patch(
      '/retention',
      {
        schema: {
          operationId: 'appUpdateRetention',
          summary: 'Set how long trash and spam keep messages (owner or admin)',
          tags,
          security,
          querystring: NoQuery,
          body: RetentionChange,
          response: { 200: answer('The periods, changed', Retention), ...errors(400, 401, 403, 413, 415, 429) },
        },
      },
      async (request) => retention.update(tenant(request), request.body),
    );
  };
}
