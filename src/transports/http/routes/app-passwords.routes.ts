import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { AppPasswordService } from '../../../modules/app-passwords/app-password.service.js';
import type { TenantContext } from '../../../modules/tenancy/tenancy.types.js';
import { Email, OkResponse, ResourceId, answer, errors } from '../schemas.js';

const NoQuery = Type.Object({}, { additionalProperties: false });
const Time = Type.String({ format: 'date-time' });
const Port = Type.Union([Type.Integer({ minimum: 0, maximum: 65535 }), Type.Null()]);

const properties = {
  app_password_id: Type.String(),
  name: Type.String(),
  mailbox: Type.String({ description: 'the mailbox it opens; also the user name a mail client logs in with' }),
  created_at: Time,
  last_used_at: Type.Union([Time, Type.Null()], { description: 'the last login with it (updated at most once a minute)' }),
};
const AppPasswordSchema = Type.Object(properties, { title: 'AppPassword' });
const AppPasswordWithSecret = Type.Object(
  { ...properties, password: Type.String({ description: 'the password (four groups of four characters), shown only in this answer' }) },
  { title: 'AppPasswordWithSecret' },
);
const ServersSchema = Type.Object(
  {
    host: Type.String({ description: 'the server name mail clients connect to' }),
    imap_port: Port,
    imaps_port: Port,
    submission_port: Port,
    submissions_port: Port,
  },
  { title: 'MailClientServers', description: 'where mail clients connect; a null port is a listener that is off' },
);
const Params = Type.Object({ app_password_id: ResourceId }, { additionalProperties: false });
const CreateBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 100, description: 'what it is for ("Phone")' }), mailbox: Email },
  { additionalProperties: false },
);

/**
 * App passwords on the session surface: a member makes one per mail client and mailbox; members see and revoke their
 * own, owners and admins every one of the workspace.
 */
export function appPasswordRoutes({ appPasswords, tenant }: { appPasswords: AppPasswordService; tenant: (request: FastifyRequest) => TenantContext }): FastifyPluginAsyncTypebox {
  const tags = ['app passwords'];
  const security = [{ session: [] }];
  return async (app) => {
    app.get(
      '/app-passwords',
      {
        schema: {
          operationId: 'appListAppPasswords',
          summary: "App passwords (yours; an owner's or admin's: the workspace's), never the passwords, and the servers mail clients use",
          tags,
          security,
          querystring: NoQuery,
          response: {
            200: answer('The app passwords, newest first, and the servers', Type.Object({ app_passwords: Type.Array(AppPasswordSchema), servers: ServersSchema })),
            ...errors(400, 401, 403, 429),
          },
        },
      },
      async (request) => appPasswords.list(tenant(request)),
    );
    app.post(
      '/app-passwords',
      {
        schema: {
          operationId: 'appCreateAppPassword',
          summary: 'Create an app password for a mailbox of the workspace; the password is shown only in this answer',
          tags,
          security,
          querystring: NoQuery,
          body: CreateBody,
          response: { 201: answer('The app password, with the password (only here)', AppPasswordWithSecret), ...errors(400, 401, 403, 409, 413, 415, 429) },
        },
      },
      async (request, reply) => reply.code(201).send(await appPasswords.create(tenant(request), request.body)),
    );
    app.delete(
      '/app-passwords/:app_password_id',
      {
        schema: {
          operationId: 'appRevokeAppPassword',
          summary: 'Revoke an app password at once; mail clients logged in with it are disconnected',
          tags,
          security,
          params: Params,
          querystring: NoQuery,
          response: { 200: answer('The app password is revoked', OkResponse), ...errors(400, 401, 403, 404, 429) },
        },
      },
      async (request) => {
        const { app_password_id } = request.params;
        await appPasswords.revoke(tenant(request), app_password_id);
        return { ok: true as const, app_password_id };
      },
    );
  };
}
