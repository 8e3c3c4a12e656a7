import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';

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
          summary: 'Liveness and database check',
          tags: ['health'],
          response: {
            200: Type.Object({ ok: Type.Literal(true), database: Type.Literal('ok') }),
            503: Type.Object({ ok: Type.Literal(false), error: Type.String(), detail: Type.String() }),
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
