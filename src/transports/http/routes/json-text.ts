import type { FastifyReply } from 'fastify';

/**
 * Answer 200 with JSON text the service has already written (a page of messages), without the route's
 * response serializer; the response schema still documents it. The service hands the text over as UTF-8
 * bytes: Fastify would otherwise measure a string (`Buffer.byteLength`, one pass over it, which also
 * flattens the rope a page is built as) and Node encode it again on write (a second pass); a Buffer is
 * encoded once, its length is known, and a kept page is sent as it is.
 */
export function sendJsonText(reply: FastifyReply, json: Buffer): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(json);
}
