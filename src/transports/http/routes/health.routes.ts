import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { answer } from '../schemas.js';

export interface HealthCheck {
  /** Resolves when the database answers. */
  check(): Promise<void>;
}

/** GET /health — no credential; 200 when the database answers, 503 otherwise. */
export function healthRoutes(health: HealthCheck): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/health',
      {
        schema: {
          operationId: 'getHealth',
          summary: 'Liveness and database check',
          tags: ['health'],
          security: [],
          response: {
            200: answer('The service and its database answer', Type.Object({ ok: Type.Literal(true), database: Type.Literal('ok') })),
            503: answer('The database does not answer', Type.Object({ ok: Type.Literal(false), error: Type.String(), detail: Type.String() })),
          },
        },
        config: { rateLimit: false },
      },
      async (request, reply) => {
        try {
          await health.check();
          return { ok: true as const, database: 'ok' as const };
        } catch (err) {
          request.log.error({ err }, 'health check failed');
          return reply.code(503).send({ ok: false, error: 'database_unavailable', detail: 'the database does not answer' });
        }
      },
    );
  };
}
