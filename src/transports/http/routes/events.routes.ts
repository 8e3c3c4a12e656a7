import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { EventStreamService, StreamEvent } from '../../../modules/events/event-stream.service.js';
import type { TenantContext } from '../../../modules/tenancy/tenancy.types.js';
import { errors } from '../schemas.js';

const StreamQuery = Type.Object(
  { last_event_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'for clients that cannot send the Last-Event-ID header' })) },
  { additionalProperties: false },
);

export interface EventRouteDeps {
  events: EventStreamService;
  tenant: (request: FastifyRequest) => TenantContext;
  /** Interval of the `: ping` comment lines that keep proxies from closing an idle stream. */
  heartbeatMs: number;
}

/** One SSE message; the payload is one line of JSON, so one `data:` line carries it. */
const frame = (event: StreamEvent): string => `id: ${event.id}\nevent: ${event.type}\ndata: ${event.payload}\n\n`;

/**
 * GET /app/api/events/stream: the active workspace's events as Server-Sent Events (docs/api.md). A slow
 * reader is not buffered for: past the socket's high-water mark the follower stops, and on `drain` it
 * reads on from the table where it stopped (decision 231).
 */
export function eventRoutes(deps: EventRouteDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    const open = new Set<() => void>();
    // Streams never end by themselves: end them so that closing the server does not wait for them.
    app.addHook('preClose', async () => {
      for (const end of [...open]) end();
    });

    app.get(
      '/events/stream',
      {
        // Open for as long as the client listens: not one of the workspace's requests under way (plugins/admission.ts).
        config: { longLived: true },
        schema: {
          operationId: 'appStreamEvents',
          summary: 'Stream the active workspace\'s events (Server-Sent Events; resumable with Last-Event-ID)',
          tags: ['events'],
          security: [{ session: [] }],
          querystring: StreamQuery,
          headers: Type.Object({ 'last-event-id': Type.Optional(Type.String({ maxLength: 64 })) }),
          response: {
            200: {
              description: 'text/event-stream: `id: <event_id>`, `event: <event_type>`, `data: <event JSON as webhooks deliver it>`; `: ping` comments',
              content: { 'text/event-stream': { schema: { type: 'string' } } },
            },
            ...errors(400, 401, 403, 429),
          },
        },
      },
      async (request, reply) => {
        const tenant = deps.tenant(request);
        const lastEventId = request.headers['last-event-id'] ?? request.query.last_event_id;
        reply.hijack();
        const res = reply.raw;
        res.writeHead(200, {
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-cache',
          'x-accel-buffering': 'no',
          // The socket closes with the stream: an ended stream must not linger as a keep-alive connection at shutdown.
          connection: 'close',
          'x-request-id': request.id,
        });
        res.write(': connected\n\n');
        let ended = false;
        let beat: NodeJS.Timeout | undefined;
        let stopFollowing = (): void => undefined;
        const end = (): void => {
          if (ended) return;
          ended = true;
          open.delete(end);
          clearInterval(beat);
          stopFollowing();
          res.end();
        };
        open.add(end);
        res.on('close', end);
        try {
          const follower = await deps.events.follow(tenant.workspaceId, lastEventId, { write: (event) => res.write(frame(event)) });
          stopFollowing = () => follower.close();
          if (ended) {
            follower.close();
            return;
          }
          res.on('drain', () => follower.resume());
          beat = setInterval(() => {
            res.write(': ping\n\n');
            follower.poke();
          }, deps.heartbeatMs);
        } catch (err) {
          request.log.error({ err }, 'event stream failed to start');
          end();
        }
      },
    );
  };
}
