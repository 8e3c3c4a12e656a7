import type { FastifyReply } from 'fastify';

/**
 * Answer 200 with JSON text the service has already written (a page of messages). Fastify sends a
 * string as it is, without the route's response serializer; the response schema still documents it.
 */
export function sendJsonText(reply: FastifyReply, json: string): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(json);
}
