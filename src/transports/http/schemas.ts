import { Type, type TSchema } from 'typebox';

/** Shared route schemas: they validate requests and generate /openapi.json. */
export const ErrorResponse = Type.Object(
  {
    error: Type.String({ description: 'stable snake_case code' }),
    detail: Type.String({ description: 'a sentence for a person' }),
  },
  { $id: 'Error' },
);

/** The error statuses a route may answer, each with the shared error body. */
export function errors(...statuses: number[]): Record<number, TSchema> {
  return Object.fromEntries(statuses.map((s) => [s, Type.Ref('Error')]));
}

export const Email = Type.String({ minLength: 3, maxLength: 254, description: 'an email address' });

export const MailboxSchema = Type.Object(
  {
    address: Type.String(),
    description: Type.String(),
    created_at: Type.String({ format: 'date-time' }),
    message_count: Type.Integer(),
    unread_count: Type.Integer(),
  },
  { $id: 'Mailbox' },
);

export const MailboxInput = Type.Object(
  {
    address: Type.Optional(Email),
    description: Type.Optional(Type.String({ maxLength: 1000 })),
  },
  { additionalProperties: false },
);

export const MailboxList = Type.Object({ mailboxes: Type.Array(Type.Ref('Mailbox')) });

export const OkResponse = Type.Object({ ok: Type.Literal(true) }, { additionalProperties: true });

export const WorkspaceMembership = Type.Object({
  workspace_id: Type.String(),
  name: Type.String(),
  role: Type.Union([Type.Literal('owner'), Type.Literal('admin'), Type.Literal('member')]),
});

export const SessionSchema = Type.Object(
  {
    ok: Type.Literal(true),
    expires_at: Type.String({ format: 'date-time' }),
    user: Type.Object({ user_id: Type.String(), email: Type.String() }),
    workspaces: Type.Array(WorkspaceMembership),
    active_workspace_id: Type.Union([Type.String(), Type.Null()]),
  },
  { $id: 'Session' },
);

export const LoginResponse = Type.Object({
  ok: Type.Literal(true),
  session_token: Type.String({ description: 'send as X-Service-Session; shown only here' }),
  expires_at: Type.String({ format: 'date-time' }),
  user: Type.Object({ user_id: Type.String(), email: Type.String() }),
  workspaces: Type.Array(WorkspaceMembership),
  active_workspace_id: Type.Union([Type.String(), Type.Null()]),
});

/** Every shared schema registered with `addSchema` so `Type.Ref` resolves. */
export const SHARED_SCHEMAS = [ErrorResponse, MailboxSchema, SessionSchema];
