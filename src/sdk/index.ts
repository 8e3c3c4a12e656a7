import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import type { components, operations, paths } from './openapi.js';

// The TypeScript SDK: the API's types, generated from /openapi.json into openapi.d.ts (`npm run sdk`), and a client
// on openapi-fetch that knows every path, its parameters, its body and its answers. It imports nothing else of
// Mailroom's, so that it can be copied into another project as it is.

export type { components, operations, paths };

/** A schema of the API by its name in /openapi.json: `Schema<'Draft'>`, `Schema<'MessageListItem'>`. */
export type Schema<Name extends keyof components['schemas']> = components['schemas'][Name];

/** The body of every refusal: `{error, detail}` (and `position` for a malformed search query). */
export type ApiError = Schema<'Error'>;

export type MailroomClient = Client<paths>;

/** At most one credential; none for `/health`, `/app/api/login` and a client that logs in first. */
type Credential =
  | { apiKey: string; tenantId?: string; session?: never; serviceToken?: never }
  | { session: string; apiKey?: never; tenantId?: never; serviceToken?: never }
  | { serviceToken: string; apiKey?: never; tenantId?: never; session?: never }
  | { apiKey?: never; tenantId?: never; session?: never; serviceToken?: never };

export type MailroomClientOptions = Omit<ClientOptions, 'baseUrl'> & {
  /** The service's address, as the CLI's --server (`http://127.0.0.1:8080`). */
  baseUrl: string;
} & Credential;

/** The headers that carry a credential: the API key or service token as a bearer token, a session in its own header. */
function credentialHeaders(options: MailroomClientOptions): Record<string, string> {
  const given = [options.apiKey, options.session, options.serviceToken].filter((c) => c !== undefined);
  if (given.length > 1) throw new Error('createMailroomClient takes one credential: apiKey, session or serviceToken');
  if (options.apiKey !== undefined) return { authorization: `Bearer ${options.apiKey}`, ...(options.tenantId !== undefined ? { 'x-tenant-id': options.tenantId } : {}) };
  if (options.session !== undefined) return { 'x-service-session': options.session };
  if (options.serviceToken !== undefined) return { authorization: `Bearer ${options.serviceToken}` };
  return {};
}

/**
 * A typed client for one Mailroom server, with an API key (the root surface: `/inbox`, `/send`…), a session
 * (`/app/api/…`, from `POST /app/api/login`) or a service token (`/v1/transactional/…`). Each call answers
 * `{ data, error, response }`: `data` typed by the route's success schema, `error` the `{error, detail}` body.
 *
 * ```ts
 * const mailroom = createMailroomClient({ baseUrl: 'http://127.0.0.1:8080', apiKey: process.env.MAILROOM_API_KEY! });
 * const { data } = await mailroom.GET('/inbox', { params: { query: { mailbox: 'helpdesk@mailroom.localhost' } } });
 * ```
 */
export function createMailroomClient(options: MailroomClientOptions): MailroomClient {
  const { apiKey: _apiKey, tenantId: _tenantId, session: _session, serviceToken: _serviceToken, headers, ...rest } = options;
  return createClient<paths>({ ...rest, headers: { ...credentialHeaders(options), ...(headers as Record<string, string> | undefined) } });
}
