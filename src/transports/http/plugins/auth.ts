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

type CredentialKind = 'mrk' | 'mrs' | 'mst';

/** Where each kind of credential goes, for the 401 of a credential sent to the wrong place (told apart by prefix). */
const CREDENTIAL_USE: Record<CredentialKind, { is: string; goes: string }> = {
  mrk: { is: 'an API key (mrk_…)', goes: 'send it as Authorization: Bearer on the API-key routes (/mailboxes, /inbox, /messages/…, /send)' },
  mrs: { is: 'a session token (mrs_…)', goes: 'send it as X-Service-Session: <session token> on the session routes (/app/api/…)' },
  mst: { is: 'a service token (mst_…)', goes: 'send it as Authorization: Bearer on /v1/transactional/…' },
};

function kindOf(token: string): CredentialKind | null {
  const prefix = token.slice(0, token.indexOf('_'));
  return prefix === 'mrk' || prefix === 'mrs' || prefix === 'mst' ? prefix : null;
}

/** "This is X: send it there; this route takes Y" when `token` is a known credential of another kind than `wanted`. */
function misplacedHint(token: string, wanted: CredentialKind): string | null {
  const kind = kindOf(token);
  if (kind === null || kind === wanted) return null;
  return `this is ${CREDENTIAL_USE[kind].is}: ${CREDENTIAL_USE[kind].goes}; this route takes ${CREDENTIAL_USE[wanted].is}`;
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
      const token = bearerToken(request, 'API key');
      const hint = misplacedHint(token, 'mrk');
      if (hint) throw unauthorized('invalid_credential', hint);
      const { apiKeyId, ...tenant } = await auth.authenticateApiKey(token, headerValue(request, 'x-tenant-id'));
      // The client's address joins the actor, for the audit log.
      request.tenantContext = { ...tenant, actor: { kind: 'api_key', id: apiKeyId, email: null, ip: request.ip } };
      return `key:${apiKeyId}`;
    });
    return payload;
  };
}

/** What to say when X-Service-Session is missing: most often the session token was sent as a Bearer token. */
function missingSessionDetail(request: FastifyRequest): string {
  const bearer = BEARER.exec(headerValue(request, 'authorization') ?? '')?.[1];
  if (bearer !== undefined && kindOf(bearer) === 'mrs') {
    return 'send the session token as X-Service-Session: <session token>, not as Authorization: Bearer';
  }
  return 'send X-Service-Session: <session token> (POST /app/api/login gives one)';
}

/** preParsing hook of the session surface: `X-Service-Session: mrs_…`. */
export function sessionAuth(auth: AuthService, limit: CredentialLimit) {
  return async <P>(request: FastifyRequest, reply: FastifyReply, payload: P): Promise<P> => {
    await limit(request, reply, async () => {
      const token = headerValue(request, 'x-service-session')?.trim();
      if (!token) throw unauthorized('missing_credential', missingSessionDetail(request));
      const hint = misplacedHint(token, 'mrs');
      if (hint) throw unauthorized('invalid_session', hint);
      // The client's address goes with the session, for the audit log (sessionTenant puts it in the actor).
      request.sessionContext = { ...(await auth.authenticateSession(token)), ip: request.ip };
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
      const token = bearerToken(request, 'service token');
      const hint = misplacedHint(token, 'mst');
      if (hint) throw unauthorized('invalid_credential', hint);
      request.serviceTokenContext = await tokens.authenticate(token);
      return `tok:${request.serviceTokenContext.tokenId}`;
    });
    return payload;
  };
}

export function serviceTokenOf(request: FastifyRequest): ServiceTokenContext {
  if (!request.serviceTokenContext) throw unauthorized('missing_credential', 'this route needs a service token');
  return request.serviceTokenContext;
}
