import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { QuotaService } from '../../../modules/quotas/quota.service.js';
import type { TenantContext } from '../../../modules/tenancy/tenancy.types.js';
import { answer, errors, operationId, type Surface } from '../schemas.js';

const Limit = (description: string) => Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: `${description}; null = unlimited` });
const UsageReport = Type.Object(
  {
    usage: Type.Object(
      {
        mailboxes: Type.Integer({ minimum: 0 }),
        stored_bytes: Type.Integer({ minimum: 0, description: 'the raw size of every stored message, received mail and sent copies' }),
        sent_last_hour: Type.Integer({ minimum: 0, description: 'messages sent (accepted for sending) in the current clock hour' }),
        sent_last_day: Type.Integer({ minimum: 0, description: 'messages sent in the current clock hour and the 23 before it' }),
      },
      { additionalProperties: false },
    ),
    quotas: Type.Object(
      {
        mailboxes: Limit('mailboxes the workspace may have'),
        stored_bytes: Limit('bytes it may store; past them inbound mail is refused with 452 4.2.2'),
        sent_per_hour: Limit('messages it may send in a clock hour'),
        sent_per_day: Limit('messages it may send in 24 clock hours'),
        api_requests_per_minute: Limit('API requests it may make in a minute, every credential together'),
      },
      { additionalProperties: false },
    ),
  },
  { title: 'Usage', additionalProperties: false },
);
const NoQuery = Type.Object({}, { additionalProperties: false });

/** The workspace's usage beside its quotas: `GET /usage` (API key) and `GET /app/api/usage` (any member). */
export function usageRoutes({ quotas, tenant, surface }: { quotas: Pick<QuotaService, 'usageOf'>; tenant: (request: FastifyRequest) => TenantContext; surface: Surface }): FastifyPluginAsyncTypebox {
  const security = surface === 'api-key' ? [{ apiKey: [] }] : [{ session: [] }];
  return async (app) => {
    app.get(
      '/usage',
      {
        schema: {
          operationId: operationId(surface, 'getUsage'),
          summary: "The workspace's usage and its quotas",
          tags: ['usage'],
          security,
          querystring: NoQuery,
          response: { 200: answer('Usage beside the quotas in force (null = unlimited)', UsageReport), ...errors(400, 401, 403, 429) },
        },
      },
      async (request) => quotas.usageOf(tenant(request).workspaceId),
    );
  };
}
