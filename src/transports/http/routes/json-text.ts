import type { FastifyReply } from 'fastify';

/**
 * Answer 200 with JSON text the service has already written (a page of messages), without the route's
 * response serializer; the response schema still documents it. The text goes out as UTF-8 bytes:
 * Fastify would otherwise measure a string (`Buffer.byteLength`, one pass over it, which also flattens the
 * rope a page is built as) and Node encode it again on write (a second pass); a Buffer is encoded once
 * and its length is known.
 */
export function sendJsonText(reply: FastifyReply, json: string): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(Buffer.from(json, 'utf8'));
}
