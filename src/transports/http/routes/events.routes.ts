import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { EventStreamService, StreamEvent, StreamGrant } from '../../../modules/events/event-stream.service.js';
import { errors } from '../schemas.js';

const StreamQuery = Type.Object(
  { last_event_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'for clients that cannot send the Last-Event-ID header' })) },
  { additionalProperties: false },
);

export interface EventRouteDeps {
  events: EventStreamService;
  /** The session, workspace and role the stream is opened with (it ends when they no longer hold). */
  grant: (request: FastifyRequest) => StreamGrant;
}

/** One SSE message; the payload is one line of JSON, so one `data:` line carries it. */
const frame = (event: StreamEvent): string => `id: ${event.id}\nevent: ${event.type}\ndata: ${event.payload}\n\n`;

/**
 * GET /app/api/events/stream: the active workspace's events as Server-Sent Events (docs/api.md). A slow
 * reader is not buffered for: past the socket's high-water mark the follower stops, and on `drain` it
 * reads on from the table where it stopped (decision 231). Admission is checked before the answer starts, so a
 * refused stream gets its 429/503 in the usual error body; the service ends a stream whose credential ended.
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
        const ticket = deps.events.admit(deps.grant(request));
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
        // Written once the follower is in place (or with the first event, which proves it): a client that commits
        // after seeing it gets that event.
        let greeted = false;
        const greet = (): void => {
          if (greeted) return;
          greeted = true;
          res.write(': connected\n\n');
        };
        let ended = false;
        let stopFollowing = (): void => ticket.release();
        const end = (): void => {
          if (ended) return;
          ended = true;
          open.delete(end);
          stopFollowing();
          res.end();
        };
        open.add(end);
        res.on('close', end);
        try {
          const follower = await ticket.follow(lastEventId, {
            write: (event) => {
              greet();
              return res.write(frame(event));
            },
            ping: () => void (greeted && res.write(': ping\n\n')),
            end,
          });
          stopFollowing = () => follower.close();
          if (ended) {
            follower.close();
            return;
          }
          greet();
          res.on('drain', () => follower.resume());
        } catch (err) {
          request.log.error({ err }, 'event stream failed to start');
          end();
        }
      },
    );
  };
}
