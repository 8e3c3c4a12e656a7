import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { notFound } from '../../../lib/errors.js';

/** What the route asks: the key authorization of a pending HTTP-01 challenge (modules/certificates), or null. */
export interface AcmeChallenges {
  challengeAnswer(token: string): Promise<string | null>;
}

/**
 * GET /.well-known/acme-challenge/:token (RFC 8555 section 8.3): no credential and no rate limit, since the CA
 * asks from addresses of its own; the answer is the key authorization as text. A token no order waits on (or
 * every token, with ACME off) is a 404. Plumbing of the certificate, so not in the API's OpenAPI document.
 */
export function acmeChallengeRoutes(challenges: AcmeChallenges | null): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/.well-known/acme-challenge/:token',
      {
        schema: { hide: true, params: Type.Object({ token: Type.String({ maxLength: 256 }) }) },
        config: { rateLimit: false },
      },
      async (request, reply) => {
        const answer = challenges ? await challenges.challengeAnswer(request.params.token) : null;
        if (answer === null) throw notFound('challenge_not_found', 'no ACME challenge with this token is pending');
        return reply.type('text/plain; charset=utf-8').send(answer);
      },
    );
  };
}
