import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { WorkspaceAdminService } from '../../../modules/tenancy/workspace-admin.service.js';
import type { TenantContext } from '../../../modules/tenancy/tenancy.types.js';
import { Email, OkResponse, ResourceId, RoleSchema, answer, errors } from '../schemas.js';

const NoQuery = Type.Object({}, { additionalProperties: false });
const Time = Type.String({ format: 'date-time' });

const keyProperties = {
  key_id: Type.String(),
  name: Type.String(),
  created_at: Time,
  last_used_at: Type.Union([Time, Type.Null()]),
  revoked_at: Type.Union([Time, Type.Null()]),
};
const ApiKeySchema = Type.Object(keyProperties, { title: 'ApiKey' });
const ApiKeyWithSecret = Type.Object(
  { ...keyProperties, api_key: Type.String({ description: 'the credential (mrk_…), shown only in this answer' }) },
  { title: 'ApiKeyWithSecret' },
);
const KeyParams = Type.Object({ key_id: ResourceId }, { additionalProperties: false });
const CreateKeyBody = Type.Object({ name: Type.Optional(Type.String({ maxLength: 100 })) }, { additionalProperties: false });

const memberProperties = { user_id: Type.String(), email: Type.String(), role: RoleSchema, joined_at: Time };
const MemberSchema = Type.Object(memberProperties, { title: 'Member' });
const MemberParams = Type.Object({ user_id: ResourceId }, { additionalProperties: false });
const AddMemberBody = Type.Object(
  {
    email: Email,
    role: RoleSchema,
    password: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'create the user with this password; without it the user must exist' })),
  },
  { additionalProperties: false },
);
const RoleBody = Type.Object({ role: RoleSchema }, { additionalProperties: false });

interface Deps {
  workspace: WorkspaceAdminService;
  tenant: (request: FastifyRequest) => TenantContext;
}

/** The active workspace's API keys on the session surface (owner or admin). */
export function apiKeyRoutes({ workspace, tenant }: Deps): FastifyPluginAsyncTypebox {
  const tags = ['API keys'];
  const security = [{ session: [] }];
  return async (app) => {
    app.get(
      '/api-keys',
      {
        schema: {
          operationId: 'appListApiKeys',
          summary: "The workspace's API keys, revoked ones included (never the keys)",
          tags,
          security,
          querystring: NoQuery,
          response: { 200: answer('The API keys, newest first', Type.Object({ api_keys: Type.Array(ApiKeySchema) })), ...errors(400, 401, 403, 429) },
        },
      },
      async (request) => workspace.listApiKeys(tenant(request)),
    );
    app.post(
      '/api-keys',
      {
        schema: {
          operationId: 'appCreateApiKey',
          summary: 'Create a workspace API key; the key is shown only in this answer',
          tags,
          security,
          querystring: NoQuery,
          body: CreateKeyBody,
          response: { 201: answer('The key, with its credential (only here)', ApiKeyWithSecret), ...errors(400, 401, 403, 409, 413, 415, 429) },
        },
      },
      async (request, reply) => reply.code(201).send(await workspace.createApiKey(tenant(request), request.body)),
    );
    app.delete(
      '/api-keys/:key_id',
      {
        schema: {
          operationId: 'appRevokeApiKey',
          summary: 'Revoke an API key at once',
          tags,
          security,
          params: KeyParams,
          querystring: NoQuery,
          response: { 200: answer('The key, revoked', ApiKeySchema), ...errors(400, 401, 403, 404, 429) },
        },
      },
      async (request) => workspace.revokeApiKey(tenant(request), request.params.key_id),
    );
  };
}

/** The active workspace's members and their roles (every role lists; owner or admin changes). */
export function memberRoutes({ workspace, tenant }: Deps): FastifyPluginAsyncTypebox {
  const tags = ['members'];
  const security = [{ session: [] }];
  return async (app) => {
    app.get(
      '/members',
      {
        schema: {
          operationId: 'appListMembers',
          summary: 'Members of the workspace with their roles, oldest first',
          tags,
          security,
          querystring: NoQuery,
          response: { 200: answer('The members, oldest first', Type.Object({ members: Type.Array(MemberSchema) })), ...errors(400, 401, 403, 429) },
        },
      },
      async (request) => workspace.listMembers(tenant(request)),
    );
    app.post(
      '/members',
      {
        schema: {
          operationId: 'appAddMember',
          summary: 'Add an existing user by email, or create the user when a password is given',
          tags,
          security,
          querystring: NoQuery,
          body: AddMemberBody,
          response: {
            201: answer('The member, added', Type.Object({ ...memberProperties, user_created: Type.Boolean() }, { title: 'AddedMember' })),
            ...errors(400, 401, 403, 404, 409, 413, 415, 429),
          },
        },
      },
      async (request, reply) => reply.code(201).send(await workspace.addMember(tenant(request), request.body)),
    );
    app.patch(
      '/members/:user_id',
      {
        schema: {
          operationId: 'appChangeMemberRole',
          summary: "Change a member's role",
          tags,
          security,
          params: MemberParams,
          querystring: NoQuery,
          body: RoleBody,
          response: { 200: answer('The member with the new role', MemberSchema), ...errors(400, 401, 403, 404, 409, 413, 415, 429) },
        },
      },
      async (request) => workspace.setRole(tenant(request), request.params.user_id, request.body.role),
    );
    app.delete(
      '/members/:user_id',
      {
        schema: {
          operationId: 'appRemoveMember',
          summary: 'Remove a member from the workspace (the user stays)',
          tags,
          security,
          params: MemberParams,
          querystring: NoQuery,
          response: { 200: answer('The member is removed', OkResponse), ...errors(400, 401, 403, 404, 409, 429) },
        },
      },
      async (request) => {
        const { user_id } = request.params;
        await workspace.removeMember(tenant(request), user_id);
        return { ok: true as const, user_id };
      },
    );
  };
}
