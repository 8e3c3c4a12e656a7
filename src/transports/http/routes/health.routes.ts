import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type Static } from 'typebox';
import type { ReadyReport } from '../../../lib/health.js';
import { answer } from '../schemas.js';

export interface HealthCheck {
  /** Resolves when the database answers. */
  check(): Promise<void>;
  /** Whether this process should be sent work (lib/health.ts). */
  ready(): Promise<ReadyReport>;
}

/** Each check: `ok`, or a short reason why it is not. */
const Checks = Type.Object(
  {
    database: Type.String({ description: 'The database answers (`ok`, or `the database does not answer`)' }),
    migrations: Type.String({ description: 'Every migration of this build is applied (`ok`, or `N not applied (run mailroom migrate)`)' }),
    listeners: Type.Optional(Type.String({ description: 'This process\'s listeners are up (`ok`, or `not listening: smtp`); in a process started by `mailroom serve`' })),
    running: Type.String({ description: '`ok`, or `shutting down` once the process got SIGTERM' }),
  },
  { description: 'Each check: `ok`, or why it is not' },
);

/**
 * GET /health — no credential; 200 when the database answers, 503 otherwise. GET /health/live and GET
 * /health/ready for orchestrators: the process is up; the process should be sent work.
 */
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

    app.get(
      '/health/live',
      {
        schema: {
          operationId: 'getHealthLive',
          summary: 'Liveness: the process is up and its event loop turns (nothing else is checked)',
          tags: ['health'],
          security: [],
          response: { 200: answer('The process is up', Type.Object({ ok: Type.Literal(true) })) },
        },
        config: { rateLimit: false },
      },
      async () => ({ ok: true as const }),
    );

    app.get(
      '/health/ready',
      {
        schema: {
          operationId: 'getHealthReady',
          summary: 'Readiness: the database answers, every migration is applied, this process\'s listeners are up and it is not shutting down',
          tags: ['health'],
          security: [],
          response: {
            200: answer('Ready for work', Type.Object({ ok: Type.Literal(true), checks: Checks })),
            503: answer('Not ready: a check failed, or the process is shutting down', Type.Object({ ok: Type.Literal(false), checks: Checks })),
          },
        },
        config: { rateLimit: false },
      },
      async (_request, reply) => {
        const report = await health.ready();
        // The checks main.ts adds, by the names the schema documents.
        const checks = report.checks as Static<typeof Checks>;
        return report.ok ? { ok: true as const, checks } : reply.code(503).send({ ok: false as const, checks });
      },
    );
  };
}
