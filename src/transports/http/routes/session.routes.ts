import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AuthService } from '../../../modules/tenancy/auth.service.js';
import { sessionOf } from '../plugins/auth.js';
import { LoginResponse, OkResponse, SessionSchema, answer, errors, ref } from '../schemas.js';

const LoginBody = Type.Object(
  {
    email: Type.String({ minLength: 1, maxLength: 254 }),
    password: Type.String({ minLength: 1, maxLength: 1024 }),
  },
  { additionalProperties: false, title: 'LoginRequest' },
);
const PasswordBody = Type.Object(
  {
    current_password: Type.String({ minLength: 1, maxLength: 1024 }),
    // The length rule (8–1024) is the service's, so it answers invalid_password as user creation does.
    new_password: Type.String({ minLength: 1, maxLength: 1024 }),
  },
  { additionalProperties: false },
);
const PasswordAnswer = Type.Object(
  { ok: Type.Literal(true), sessions_ended: Type.Integer({ minimum: 0, description: "the user's other sessions that this ended" }) },
  { title: 'PasswordChanged' },
);
const SelectBody = Type.Object({ workspace_id: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false });
const NoQuery = Type.Object({}, { additionalProperties: false });
const tags = ['session'];
const security = [{ session: [] }];

/** POST /app/api/login — the only session route without a session. */
export function loginRoute(auth: AuthService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/login',
      {
        schema: {
          operationId: 'appLogin',
          summary: 'Log in with email and password',
          tags,
          security: [],
          body: LoginBody,
          response: { 200: answer('Logged in: the session token (shown only here), the user and their workspaces', LoginResponse), ...errors(400, 401, 403, 413, 415, 429) },
        },
      },
      async (request) => {
        const { email, password } = request.body;
        return auth.login(email, password, request.ip);
      },
    );
  };
}

/** Session routes that need a session: logout, session, session/password, workspaces/select. */
export function sessionRoutes(auth: AuthService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/logout',
      {
        schema: {
          operationId: 'appLogout',
          summary: 'End the session now',
          tags,
          security,
          querystring: NoQuery,
          response: { 200: answer('The session has ended', OkResponse), ...errors(401, 429) },
        },
      },
      async (request) => {
        await auth.logout(sessionOf(request));
        return { ok: true as const };
      },
    );

    app.get(
      '/session',
      {
        schema: {
          operationId: 'appGetSession',
          summary: 'The session: user, workspaces, active workspace',
          tags,
          security,
          querystring: NoQuery,
          response: { 200: answer('The session', ref(SessionSchema)), ...errors(401, 429) },
        },
      },
      async (request) => auth.describe(sessionOf(request)),
    );

    app.post(
      '/session/password',
      {
        schema: {
          operationId: 'appChangePassword',
          summary: "Change the user's password; the user's other sessions end, this one stays",
          tags,
          security,
          querystring: NoQuery,
          body: PasswordBody,
          response: { 200: answer('The password is changed', PasswordAnswer), ...errors(400, 401, 403, 413, 415, 429) },
        },
      },
      async (request) => auth.changePassword(sessionOf(request), request.body, request.ip),
    );

    app.post(
      '/workspaces/select',
      {
        schema: {
          operationId: 'appSelectWorkspace',
          summary: 'Choose the active workspace',
          tags,
          security,
          body: SelectBody,
          response: { 200: answer('The session, with the workspace active', ref(SessionSchema)), ...errors(400, 401, 404, 413, 415, 429) },
        },
      },
      async (request) => auth.selectWorkspace(sessionOf(request), request.body.workspace_id),
    );
  };
}
