import type { FastifyReply, FastifyRequest } from 'fastify';
import { unauthorized } from '../../../lib/errors.js';
import type { AuthService } from '../../../modules/tenancy/auth.service.js';
import type { SessionContext, TenantContext } from '../../../modules/tenancy/tenancy.types.js';
import type { ServiceTokenContext, ServiceTokenService } from '../../../modules/transactional/service-token.service.js';
import type { CredentialLimit } from './rate-limit.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the API-key hook (or derived from the session) on tenant-scoped routes. */
    tenantContext: TenantContext | null;
    /** Set by the session hook on /app/api routes. */
    sessionContext: SessionContext | null;
    /** Set by the service-token hook on /v1/transactional routes. */
    serviceTokenContext: ServiceTokenContext | null;
  }
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

function headerValue(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The token of `Authorization: Bearer <token>`; 401 when the header is missing or has another shape. */
function bearerToken(request: FastifyRequest, credential: string): string {
  const header = headerValue(request, 'authorization');
  if (header === undefined) throw unauthorized('missing_credential', `send Authorization: Bearer <${credential}>`);
  const match = BEARER.exec(header);
  if (!match) throw unauthorized('invalid_credential', `the Authorization header must be "Bearer <${credential}>"`);
  return match[1]!;
}

/** preParsing hook of the API-key surface: `Authorization: Bearer mrk_…` and optional `X-Tenant-ID`. */
export function apiKeyAuth(auth: AuthService, limit: CredentialLimit) {
  return async <P>(request: FastifyRequest, reply: FastifyReply, payload: P): Promise<P> => {
    await limit(request, reply, async () => {
      const { apiKeyId, ...tenant } = await auth.authenticateApiKey(bearerToken(request, 'API key'), headerValue(request, 'x-tenant-id'));
      request.tenantContext = tenant;
      return `key:${apiKeyId}`;
    });
    return payload;
  };
}

/** preParsing hook of the session surface: `X-Service-Session: mrs_…`. */
export function sessionAuth(auth: AuthService, limit: CredentialLimit) {
  return async <P>(request: FastifyRequest, reply: FastifyReply, payload: P): Promise<P> => {
    await limit(request, reply, async () => {
      const token = headerValue(request, 'x-service-session')?.trim();
      if (!token) throw unauthorized('missing_credential', 'send X-Service-Session: <session token> (POST /app/api/login gives one)');
      request.sessionContext = await auth.authenticateSession(token);
      return `ses:${request.sessionContext.sessionId}`;
    });
    return payload;
  };
}

/** The tenant of an API-key request; the hook guarantees it is set. */
export function tenantOf(request: FastifyRequest): TenantContext {
  if (!request.tenantContext) throw unauthorized('missing_credential', 'this route needs a credential');
  return request.tenantContext;
}

export function sessionOf(request: FastifyRequest): SessionContext {
  if (!request.sessionContext) throw unauthorized('missing_credential', 'this route needs a session');
  return request.sessionContext;
}

/** preParsing hook of the transactional surface: `Authorization: Bearer mst_…` (nothing else gets in). */
export function serviceTokenAuth(tokens: ServiceTokenService, limit: CredentialLimit) {
  return async <P>(request: FastifyRequest, reply: FastifyReply, payload: P): Promise<P> => {
    await limit(request, reply, async () => {
      request.serviceTokenContext = await tokens.authenticate(bearerToken(request, 'service token'));
      return `tok:${request.serviceTokenContext.tokenId}`;
    });
    return payload;
  };
}

export function serviceTokenOf(request: FastifyRequest): ServiceTokenContext {
  if (!request.serviceTokenContext) throw unauthorized('missing_credential', 'this route needs a service token');
  return request.serviceTokenContext;
}
