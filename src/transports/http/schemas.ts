import { Type, type Static, type TSchema, type TUnsafe } from 'typebox';
import { EVENT_TYPES } from '../../modules/events/event.types.js';
import { LIST_DIRECTIONS, LIST_TYPES, type EntryKind } from '../../modules/lists/list.table.js';
import { FOLDERS, type MessageListView } from '../../modules/messages/message.types.js';
import type { Attempt, DeliveryStatus, RecipientStatus } from '../../modules/mail/outbound.table.js';
import { ROLES } from '../../modules/tenancy/tenancy.table.js';

/** Shared route schemas: they validate requests and generate /openapi.json. */
export const ErrorResponse = Type.Object(
  {
    error: Type.String({ description: 'stable snake_case code' }),
    detail: Type.String({ description: 'a sentence for a person' }),
    position: Type.Optional(Type.Integer({ minimum: 0, description: 'invalid_query only: the 0-based character (code point) of q where the problem is' })),
    dependents: Type.Optional(
      Type.Object(
        {
          mailbox_count: Type.Integer({ minimum: 0 }),
          mailboxes: Type.Array(Type.String(), { description: 'their addresses, at most 100' }),
          service_token_count: Type.Integer({ minimum: 0 }),
          service_tokens: Type.Array(Type.Object({ token_id: Type.String(), name: Type.String() }), { description: 'at most 100' }),
        },
        { description: 'domain_in_use only: what still uses the sending domain' },
      ),
    ),
    suppressed: Type.Optional(Type.Array(Type.String(), { description: 'recipient_suppressed only: the suppressed recipients (every recipient of the send)' })),
    quota: Type.Optional(Type.String({ description: 'quota_exceeded only: the quota (mailboxes, stored_bytes, sent_per_hour, sent_per_day, api_requests_per_minute)' })),
  },
  { $id: 'Error' },
);

/**
 * A reference to a shared schema (`$ref`, resolved through `addSchema`, and named in /openapi.json), typed as
 * the value that schema describes, so the type provider checks a route's reply against it.
 */
export function ref<T extends TSchema>(schema: T): TUnsafe<Static<T>> {
  if (!('$id' in schema) || typeof schema.$id !== 'string') throw new Error('ref() takes a shared schema, one with an $id');
  return Type.Unsafe<Static<T>>(Type.Ref(schema.$id));
}

/**
 * The error statuses particular to a route, each with the shared error body. The ones every route shares (400, 401
 * with a credential, 413/415 with a body, 429, and the rest as `default`) are added to its document by openapi.ts.
 */
export function errors(...statuses: number[]): Record<number, TSchema> {
  return Object.fromEntries(statuses.map((s) => [s, Type.Ref('Error')]));
}

/** The key @fastify/swagger reads a response's description from (and leaves out of its schema). */
export const RESPONSE_DESCRIPTION = 'x-response-description';

/**
 * A success answer: its schema, and the sentence /openapi.json describes it with. Without one the document says
 * "Default Response", which redocly.yaml refuses.
 */
export function answer<T extends TSchema>(description: string, schema: T): T {
  // A reference is resolved before the key above is read, so it carries the sentence as its `description`.
  return { ...schema, ['$ref' in schema ? 'description' : RESPONSE_DESCRIPTION]: description };
}

/** Where the surface is named in a route module that both the API-key and the session surface mount. */
export type Surface = 'api-key' | 'session';

/**
 * The operationId of a route both surfaces mount: the API-key surface's is `name`, the session surface's the same
 * with `app` before it (`listMailboxes`, `appListMailboxes`), as every session route's is.
 */
export function operationId(surface: Surface, name: string): string {
  return surface === 'api-key' ? name : `app${name[0]!.toUpperCase()}${name.slice(1)}`;
}

/** The key that names a wildcard route's `*` parameter in /openapi.json. */
export const WILDCARD_NAME = 'x-wildcard-name';

/**
 * The `*` parameter of a wildcard route (the rest of the path), documented as the path parameter `name`: a client
 * sends it as one segment with its slashes as %2F, and the router takes that as it takes the raw slashes.
 */
export function wildcard<T extends TSchema>(name: string, schema: T): T {
  return { ...schema, [WILDCARD_NAME]: name };
}

/** One of these strings: typed as their union, documented and serialized as a string with an `enum`. */
export function StringEnum<const V extends readonly string[]>(values: V, options: { description?: string } = {}): TUnsafe<V[number]> {
  return Type.Unsafe<V[number]>({ type: 'string', enum: [...values], ...options });
}

/** One of these strings, written as a union of constants (`anyOf` of `const`): the form the older answers have. */
export function LiteralUnion<const V extends readonly string[]>(values: V, options: { description?: string } = {}): TUnsafe<V[number]> {
  return Type.Unsafe<V[number]>(Type.Union(values.map((value) => Type.Literal(value)), options));
}

/** The key a field's documented `enum` travels under until openapi.ts writes it as `enum` (see `documentedEnum`). */
export const DOCUMENTED_ENUM = 'x-documented-enum';

/**
 * A field documented (and so typed in the SDK) as one of `values`, but validated and typed on the server as `schema`:
 * a request field whose other values the service refuses with its own error code (`invalid_folder`,
 * `invalid_event_type`) rather than the validator's, or an answer field the service's view types as a plain string.
 */
export function documentedEnum<T extends TSchema>(values: readonly string[], schema: T): T {
  return { ...schema, [DOCUMENTED_ENUM]: [...values] };
}

/**
 * Every member of the string union `T` as a list, for unions a module types without keeping a list of them: a
 * member left out, or a value that is none, fails to compile, so the document cannot drift from the type.
 */
export function everyOf<T extends string>() {
  return <const V extends readonly T[]>(values: V & ([Exclude<T, V[number]>] extends [never] ? unknown : { readonly missing: Exclude<T, V[number]> })): V => values;
}

/** What an outbound message's delivery attempt came to. */
export const ATTEMPT_OUTCOMES = everyOf<Attempt['outcome']>()(['sent', 'rejected', 'deferred', 'ambiguous', 'no_route']);
/** An event name in an answer (the services' views type it as a string). */
export const EventName = documentedEnum(EVENT_TYPES, Type.String());
/** A folder, in an answer or a request (the message service refuses another with invalid_folder). */
export const folderName = (schema = Type.String()) => documentedEnum(FOLDERS, schema);
/** A member's role (validated by the schema: the service takes no other). */
export const RoleSchema = LiteralUnion(ROLES);

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

export const MailboxList = Type.Object({ mailboxes: Type.Array(ref(MailboxSchema)) }, { title: 'MailboxList' });

export const OkResponse = Type.Object({ ok: Type.Literal(true) }, { additionalProperties: true, title: 'Ok' });

export const WorkspaceMembership = Type.Object(
  {
    workspace_id: Type.String(),
    name: Type.String(),
    role: RoleSchema,
  },
  { title: 'WorkspaceMembership' },
);

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

export const LoginResponse = Type.Object(
  {
    ok: Type.Literal(true),
    session_token: Type.String({ description: 'send as X-Service-Session; shown only here' }),
    expires_at: Type.String({ format: 'date-time' }),
    user: Type.Object({ user_id: Type.String(), email: Type.String() }),
    workspaces: Type.Array(WorkspaceMembership),
    active_workspace_id: Type.Union([Type.String(), Type.Null()]),
  },
  { title: 'Login' },
);


// ---- messages and threads ----

export const Limit = Type.Integer({ minimum: 1, maximum: 500, default: 50, description: 'page size, 1..500' });
/**
 * The largest offset taken: 2^31 − 1, which every database and driver binds as an integer (a larger
 * number reached SQLite as a float and failed the query), and far past any list a workspace holds.
 */
export const MAX_OFFSET = 2_147_483_647;
export const Offset = Type.Integer({ minimum: 0, maximum: MAX_OFFSET, default: 0, description: `items to skip, 0..${MAX_OFFSET}` });
export const ResourceId = Type.String({ minLength: 1, maxLength: 100 });
export const Label = Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-z0-9_.:-]+$' });

const AddressSchema = Type.Object({ name: Type.String(), address: Type.String() }, { title: 'Address' });
const AttachmentSchema = Type.Object({
  attachment_id: Type.String(),
  filename: Type.String(),
  content_type: Type.String(),
  size: Type.Integer(),
  inline: Type.Boolean(),
  content_id: Type.Optional(Type.Union([Type.String(), Type.Null()])),
}, { title: 'Attachment' });
/** One delivery attempt of an outbound message (message.types.ts DeliveryEvent). */
export const DeliveryEventSchema = Type.Object({
  at: Type.String({ format: 'date-time' }),
  mx: Type.Union([Type.String(), Type.Null()]),
  recipients: Type.Array(Type.String()),
  outcome: documentedEnum(ATTEMPT_OUTCOMES, Type.String({ description: 'sent, rejected, deferred, ambiguous or no_route' })),
  response: Type.String(),
  tls: Type.Union([
    Type.Object({
      version: Type.String({ description: 'the TLS protocol version, e.g. TLSv1.3' }),
      cipher: Type.String({ description: 'the cipher suite (its standard name)' }),
      verified: Type.Boolean({ description: "whether the server's certificate chained to a trusted CA and was valid for the MX host, whether or not that was required" }),
    }, { title: 'AttemptTls' }),
    Type.Null(),
  ], { description: 'the TLS session of the SMTP transaction; null when it ran in plain text, no session was made, or the attempt predates this field' }),
  mta_sts: Type.Union([LiteralUnion(['enforce', 'testing']), Type.Null()], { description: "the recipient domain's MTA-STS policy mode applied: enforce (only listed MX hosts over verified TLS) or testing (noted only); null: no policy, or the relay" }),
}, { title: 'DeliveryEvent' });
/** An outbound message's delivery status (mail/outbound.table.ts DeliveryStatus; docs/api.md "Delivery status"). */
export const deliveryStatus = (description: string) =>
  LiteralUnion(everyOf<DeliveryStatus>()(['scheduled', 'queued', 'processing', 'accepted', 'failed', 'unknown', 'cancelled']), { description });
/** When a scheduled message leaves: RFC 3339 (ISO 8601 with an offset), at most 30 days ahead (schedule.ts). */
export const SendAt = Type.String({ format: 'date-time', maxLength: 64, description: 'when to send: an ISO 8601 date-time with an offset, at most 30 days ahead; a time already past sends at once' });
/** The fields of a message's list view (MessageListItem), for views that add their own. */
export const messageListProperties = {
  message_id: Type.String(),
  mailbox: Type.String(),
  direction: LiteralUnion(everyOf<MessageListView['direction']>()(['inbound', 'outbound'])),
  folder: folderName(),
  read: Type.Boolean(),
  flagged: Type.Boolean({ description: 'starred (IMAP \\Flagged)' }),
  answered: Type.Boolean({ description: 'replied to (IMAP \\Answered)' }),
  labels: Type.Array(Type.String()),
  thread_id: Type.String(),
  from: Type.Union([AddressSchema, Type.Null()]),
  to: Type.Array(AddressSchema),
  cc: Type.Array(AddressSchema),
  subject: Type.String(),
  date: Type.Union([Type.String(), Type.Null()]),
  snippet: Type.String(),
  size: Type.Integer(),
  attachments: Type.Array(AttachmentSchema),
  auth: Type.Object({ spf: Type.String(), dkim: Type.String(), dmarc: Type.String() }),
  internet_message_id: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String(),
  status: Type.Optional(deliveryStatus('outbound messages only: the delivery status')),
  events: Type.Optional(Type.Array(DeliveryEventSchema, { description: 'outbound messages only: each delivery attempt, oldest first' })),
  send_at: Type.Optional(Type.String({ format: 'date-time', description: 'outbound messages sent with a send_at only: when it was (or is) to leave' })),
};
export const MessageListItem = Type.Object(messageListProperties, { $id: 'MessageListItem' });
/** One envelope recipient of an outbound message and what became of it (mail/outbound.table.ts RecipientState). */
const DeliveryRecipientSchema = Type.Object({
  address: Type.String(),
  status: LiteralUnion(everyOf<RecipientStatus>()(['pending', 'accepted', 'failed', 'unknown'])),
  response: Type.Union([Type.String(), Type.Null()], { description: 'the last SMTP reply for it, or the routing error; null before the first attempt' }),
  mx: Type.Union([Type.String(), Type.Null()], { description: 'the host of its last attempt, or null' }),
}, { title: 'RecipientStatus' });
/** An outbound message's delivery recipient by recipient (message.types.ts DeliveryDetail), `only` saying when it is there. */
const deliveryDetailProperties = (only: string) => ({
  recipients: Type.Array(DeliveryRecipientSchema, { description: `${only}each envelope recipient (to, cc and bcc) and what became of it` }),
  attempts: Type.Array(DeliveryEventSchema, { description: `${only}each delivery attempt, oldest first (the same entries as events)` }),
  last_error: Type.Union([Type.String(), Type.Null()], { description: `${only}the last attempt's 4xx reply or routing error, or a failed message's last reply` }),
  delivery_notification: Type.Boolean({ description: `${only}whether it was sent with delivery_notification (receivers that offer DSN asked to report delivery)` }),
});
/** A message of `GET /sent`: the list view with its delivery status and detail. */
export const SentMessage = Type.Object(
  { ...messageListProperties, status: deliveryStatus('the delivery status (accepted for a message moved into sent that was never sent)'), ...deliveryDetailProperties('') },
  { $id: 'SentMessage' },
);
export const SentPage = Type.Object({ messages: Type.Array(ref(SentMessage)), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer() }, { title: 'SentPage' });
const outboundDetail = deliveryDetailProperties('outbound messages only: ');
export const MessageDetail = Type.Object(
  {
    ...messageListProperties,
    recipients: Type.Optional(outboundDetail.recipients),
    attempts: Type.Optional(outboundDetail.attempts),
    last_error: Type.Optional(outboundDetail.last_error),
    delivery_notification: Type.Optional(outboundDetail.delivery_notification),
    text: Type.Union([Type.String(), Type.Null()]),
    html: Type.Union([Type.String(), Type.Null()]),
    headers: Type.Array(Type.Object({ name: Type.String(), value: Type.String() })),
    spam: Type.Union(
      [
        Type.Object({
          score: Type.Number(),
          action: Type.String({ description: 'rspamd\'s action: no action, add header, rewrite subject, greylist, soft reject or reject' }),
          symbols: Type.Array(Type.Object({ name: Type.String(), score: Type.Number() }), { description: 'the highest-scoring symbols, at most 10' }),
        }),
        Type.Null(),
      ],
      { description: 'rspamd\'s verdict when the message was scored on arrival; null otherwise' },
    ),
  },
  { $id: 'Message' },
);
export const MessagePage = Type.Object({
  messages: Type.Array(ref(MessageListItem)),
  total: Type.Integer(),
  limit: Type.Integer(),
  offset: Type.Integer(),
  total_capped: Type.Optional(Type.Boolean({ description: 'searches (q) only: true when total is a lower bound: counting stopped at 1,000 matches, or (PostgreSQL, words in a row: a phrase, an address) at the newest 5,000 messages' })),
}, { title: 'MessagePage' });
/** `q`: a search query (docs/api.md "Search queries"); its own parser bounds it further. */
export const SearchText = Type.String({ minLength: 1, maxLength: 4096, description: 'a search query (Gmail\'s operators); see Search queries' });
const threadProperties = {
  thread_id: Type.String(),
  mailbox: Type.String(),
  subject: Type.String(),
  labels: Type.Array(Type.String()),
  message_count: Type.Integer(),
  unread_count: Type.Integer(),
  participants: Type.Array(Type.String()),
  last_message_at: Type.String(),
  snippet: Type.String(),
};
const FolderThread = Type.Object(
  {
    folder: Type.String(),
    message_count: Type.Integer(),
    unread_count: Type.Integer(),
    senders: Type.Array(AddressSchema),
    message_id: Type.String(),
    last_message_at: Type.String(),
    snippet: Type.String(),
  },
  { title: 'FolderThread', description: "with a folder filter: what that folder holds of the thread" },
);
export const ThreadSchema = Type.Object({ ...threadProperties, in_folder: Type.Optional(FolderThread) }, { $id: 'Thread' });
export const ThreadDetail = Type.Object({ ...threadProperties, messages: Type.Array(ref(MessageListItem)) }, { $id: 'ThreadDetail' });
export const AttachmentList = Type.Object({ attachments: Type.Array(AttachmentSchema) }, { title: 'AttachmentList' });
export const LabelChange = Type.Object(
  { add: Type.Optional(Type.Array(Label, { maxItems: 100 })), remove: Type.Optional(Type.Array(Label, { maxItems: 100 })) },
  { additionalProperties: false, title: 'LabelChange' },
);
export const LabelsResponse = Type.Object({ labels: Type.Array(Type.String()) }, { title: 'Labels' });
export const ListEntrySchema = Type.Object(
  {
    direction: StringEnum(LIST_DIRECTIONS),
    list_type: StringEnum(LIST_TYPES),
    entry: Type.String(),
    kind: StringEnum(everyOf<EntryKind>()(['address', 'domain', 'ip'])),
    reason: Type.Union([Type.String(), Type.Null()]),
    created_at: Type.String(),
  },
  { $id: 'ListEntry' },
);

/** Every shared schema registered with `addSchema` so `Type.Ref` resolves. */
export const SHARED_SCHEMAS: TSchema[] = [ErrorResponse, MailboxSchema, SessionSchema, MessageListItem, SentMessage, MessageDetail, ThreadSchema, ThreadDetail, ListEntrySchema];
