import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { AUDIT_ACTION_NAMES, MAX_AUDIT_PAGE, type AuditLog } from '../../../modules/audit/audit.service.js';
import type { TenantContext } from '../../../modules/tenancy/tenancy.types.js';
import { StringEnum, answer, documentedEnum, errors } from '../schemas.js';

const ACTOR_KINDS = ['user', 'api_key', 'service_token', 'operator', 'system'] as const;
const Nullable = (description: string) => Type.Union([Type.String(), Type.Null()], { description });

const AuditEntry = Type.Object(
  {
    audit_id: Type.String({ description: 'aud_…; ids sort by creation (the `before` cursor)' }),
    action: documentedEnum(AUDIT_ACTION_NAMES, Type.String({ description: 'what changed: see docs/operations.md, Audit log' })),
    actor: Type.Object(
      {
        kind: StringEnum(ACTOR_KINDS, { description: 'operator: the command line; system: the service itself (a failing webhook disabled)' }),
        id: Nullable('the user (usr_…), API key (key_…) or service token (tok_…); null for operator and system'),
        email: Nullable("the user's email, for a user"),
      },
      { title: 'AuditActor' },
    ),
    ip: Nullable("the client's address of the request; null for the command line and the service"),
    created_at: Type.String({ format: 'date-time' }),
    target: Type.Union([Type.Object({ kind: Type.String(), id: Type.String() }, { title: 'AuditTarget' }), Type.Null()], { description: 'what was changed; null when the workspace itself' }),
    details: Type.Object({}, { additionalProperties: true, description: 'before and after values where they help; never a secret' }),
  },
  { title: 'AuditEntry' },
);
const AuditPage = Type.Object(
  {
    entries: Type.Array(AuditEntry),
    next_before: Type.Optional(Type.String({ description: 'present when older entries remain: pass it as `before`' })),
  },
  { title: 'AuditLogPage' },
);
const AuditQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_AUDIT_PAGE, default: 50, description: `page size, 1..${MAX_AUDIT_PAGE}` })),
    before: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'entries older than this audit id (the `next_before` of the previous page)' })),
    action: Type.Optional(Type.String({ minLength: 1, maxLength: 82, description: 'an action (member.added) or a family: webhook, webhook. or webhook.*' })),
    actor: Type.Optional(Type.String({ minLength: 1, maxLength: 254, description: 'an actor id (usr_…, key_…, tok_…), a kind (operator, system, api_key…) or a user\'s email' })),
  },
  { additionalProperties: false },
);

/** GET /app/api/audit-log: who changed what in the workspace (owner or admin). */
export function auditRoutes({ audit, tenant }: { audit: Pick<AuditLog, 'list'>; tenant: (request: FastifyRequest) => TenantContext }): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/audit-log',
      {
        schema: {
          operationId: 'appListAuditLog',
          summary: "The workspace's audit log, newest first",
          tags: ['audit log'],
          security: [{ session: [] }],
          querystring: AuditQuery,
          response: { 200: answer('A page of entries, newest first', AuditPage), ...errors(400, 401, 403, 429) },
        },
      },
      async (request) => audit.list(tenant(request), request.query),
    );
  };
}
