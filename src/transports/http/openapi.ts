import { isDeepStrictEqual } from 'node:util';
import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import type { FastifyInstance, FastifySchema, RouteOptions } from 'fastify';
import { OPTIONAL_BODY, STREAMED_BODY } from './plugins/validation.js';
import { DOCUMENTED_ENUM, WILDCARD_NAME } from './schemas.js';

/**
 * How /openapi.json is made (decisions 250–253). Routes state what only they know: an `operationId`, a `summary`,
 * their success answers with `answer()` and the errors particular to them. What every route shares is filled in
 * here: the errors any route may answer, their descriptions and schema (one `components.responses` entry each),
 * the surface's security scheme, named schemas, and the wildcard parameter. `redocly.yaml` lints the result and
 * test/openapi.test.ts fails on any problem, so a route that misses its part is caught there.
 */

type Json = Record<string, unknown>;
/** An OpenAPI security requirement list: `[]` for a public route, `[{ session: [] }]` for a session route. */
export type Security = Array<Record<string, string[]>>;

const ERROR_SCHEMA_REF = '#/components/schemas/Error';

/** The error answers, by status, each one `components.responses` entry with the shared `{error, detail}` body. */
const ERROR_ANSWERS: Record<string, { name: string; description: string; retryAfter?: true }> = {
  '400': { name: 'BadRequest', description: 'Invalid input: a missing, unknown or wrongly typed field or query value (the detail names it), malformed JSON or a malformed URL' },
  '401': { name: 'Unauthorized', description: 'The credential is missing, malformed, expired or revoked, or is not one this surface takes' },
  '403': {
    name: 'Forbidden',
    description: "Authenticated but not allowed: the member's role, the token's scope, an X-Tenant-ID other than the key's workspace, or a workspace the operator suspended (workspace_suspended)",
  },
  '404': { name: 'NotFound', description: 'No such resource, or one of another workspace (the two are never told apart)' },
  '409': { name: 'Conflict', description: 'A conflict with the current state: a name or address taken, an entry already there, an idempotency key reused with other content' },
  '413': { name: 'PayloadTooLarge', description: 'The body is larger than the route takes (1 MiB; 40 MiB where attachments come as base64), or the attachments of one message or draft total more than 25 MiB decoded' },
  '415': { name: 'UnsupportedMediaType', description: 'The body is not JSON (send Content-Type: application/json), or, where a route takes file uploads, not multipart/form-data' },
  '422': { name: 'Unprocessable', description: 'Refused by policy: a recipient is on an outbound block list (or not on its allow list), or every recipient is suppressed (recipient_suppressed)' },
  '429': { name: 'TooManyRequests', description: 'Rate limited, or over a quota of the workspace (quota_exceeded, naming it in `quota`): Retry-After says how many seconds to wait, where waiting helps', retryAfter: true },
  '503': { name: 'ServiceUnavailable', description: 'Not now: a search past its time budget (search_timeout) or whose thread failed (search_unavailable); Retry-After says how many seconds to wait', retryAfter: true },
  default: { name: 'UnexpectedError', description: 'Any other failure: 500 internal_error (with the request id, never internals), or 503 shutting_down while the server stops' },
};

function errorComponents(): Json {
  const content = { 'application/json': { schema: { $ref: ERROR_SCHEMA_REF } } };
  const retryAfter = { 'Retry-After': { description: 'seconds to wait before the next request', schema: { type: 'integer', minimum: 1 } } };
  return Object.fromEntries(
    Object.values(ERROR_ANSWERS).map(({ name, description, retryAfter: withHeader }) => [name, { description, ...(withHeader ? { headers: retryAfter } : {}), content }]),
  );
}

/** The options of @fastify/swagger: the document's fixed parts and the two transforms below. */
export function openApiOptions(version: string): FastifyDynamicSwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Mailroom API',
        version,
        license: { name: 'MIT', identifier: 'MIT' },
        description:
          'API-key surface at the root, session surface under /app/api (its operationIds start with `app`), transactional ' +
          'surface under /v1/transactional (`transactional…`). Every error answers `{"error": "<code>", "detail": "…"}`; docs/api.md lists the codes.',
      },
      servers: [
        {
          url: '{scheme}://{host}',
          description: 'the address the api role listens on (MAILROOM_HTTP_HOST:MAILROOM_HTTP_PORT), or the proxy in front of it',
          variables: { scheme: { default: 'http', enum: ['http', 'https'] }, host: { default: '127.0.0.1:8080' } },
        },
      ],
      components: {
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: 'API key (mrk_…); optional X-Tenant-ID header' },
          session: { type: 'apiKey', in: 'header', name: 'X-Service-Session', description: 'session token (mrs_…) from POST /app/api/login' },
          serviceToken: { type: 'http', scheme: 'bearer', description: 'service token (mst_…); transactional surface only' },
        },
        // The types of @fastify/swagger take the 3.0 and 3.1 shapes of a response as one; this one is valid in both.
        responses: errorComponents() as never,
      },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    transform: ({ schema, url, route }) => transformRoute(schema, url, route),
    transformObject: (built) => ('openapiObject' in built ? transformDocument(built.openapiObject) : built.swaggerObject),
  };
}

/**
 * Every route of `scope` is documented with the security its credential hook checks: filled in when the route
 * states none, and a route stating another is a mistake that stops start-up (its document would lie).
 */
export function documentSecurity(scope: FastifyInstance, security: Security): void {
  scope.addHook('onRoute', (route) => {
    const stated = route.schema?.security as Security | undefined;
    if (stated !== undefined && !isDeepStrictEqual(stated, security)) {
      throw new Error(`${String(route.method)} ${route.url} states security ${JSON.stringify(stated)}, but its surface checks ${JSON.stringify(security)}`);
    }
    route.schema = { ...route.schema, security };
  });
}

/** The errors every route may answer, from what it takes: its credential, its rate limit, its input. */
function sharedErrors(schema: Json, route: RouteOptions): string[] {
  const statuses = ['400', 'default'];
  // A credential of a suspended workspace is refused with 403 workspace_suspended on every route that takes one.
  if (Array.isArray(schema.security) && schema.security.length > 0) statuses.push('401', '403');
  if ((route.config as { rateLimit?: unknown } | undefined)?.rateLimit !== false) statuses.push('429');
  if (schema.body !== undefined) statuses.push('413', '415');
  return statuses;
}

/** One route's schema as documented: shared errors added, a wildcard `*` named. The route's own schema is not changed. */
function transformRoute(schema: FastifySchema, url: string, route: RouteOptions): { schema: FastifySchema; url: string } {
  const given = schema as Json;
  const response: Json = { ...(given.response as Json | undefined) };
  for (const status of sharedErrors(given, route)) response[status] ??= { $ref: 'Error' };
  const documented: Json = { ...given, response };
  const params = given.params as { properties?: Json; required?: string[] } | undefined;
  const wildcard = params?.properties?.['*'] as Json | undefined;
  if (!url.endsWith('*') || wildcard === undefined) return { schema: documented, url };
  // A client sends the rest of the path as one parameter, its slashes as %2F; the router takes both forms.
  const name = wildcard[WILDCARD_NAME];
  if (typeof name !== 'string') throw new Error(`${url}: name the '*' parameter with wildcard()`);
  const { [WILDCARD_NAME]: _name, ...named } = wildcard;
  const { '*': _star, ...others } = params!.properties!;
  documented.params = { ...params, properties: { ...others, [name]: named }, required: params!.required?.map((p) => (p === '*' ? name : p)) };
  return { schema: documented, url: `${url.slice(0, -1)}{${name}}` };
}

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Each error answer with the shared `{error, detail}` body becomes a reference to its `components.responses` entry. */
function shareErrorAnswers(responses: Json): void {
  for (const [status, answer] of Object.entries(responses)) {
    const known = ERROR_ANSWERS[status];
    const content = isObject(answer) ? (answer.content as Json | undefined) : undefined;
    const body = content?.['application/json'] as Json | undefined;
    if (!known || !content || Object.keys(content).length !== 1 || (body?.schema as Json | undefined)?.$ref !== ERROR_SCHEMA_REF) continue;
    responses[status] = { $ref: `#/components/responses/${known.name}` };
  }
}

/** An optional body (plugins/validation.ts `optionalBody`) is documented as one: `required: false`. */
function markOptionalBody(operation: Json): void {
  const body = operation.requestBody as { required?: boolean; content?: Record<string, { schema?: Json }> } | undefined;
  for (const media of Object.values(body?.content ?? {})) {
    if (media.schema?.[STREAMED_BODY] === true) delete media.schema[STREAMED_BODY];
    if (media.schema?.[OPTIONAL_BODY] !== true) continue;
    delete media.schema[OPTIONAL_BODY];
    body!.required = false;
  }
}

/**
 * A schema with a `title` moves to `components.schemas` under that name and is referenced there, so that the
 * SDK's types name it (`components['schemas']['Draft']`). Two different schemas with one title stop the build.
 */
function hoistTitled(node: unknown, schemas: Json, isComponent = false): unknown {
  if (Array.isArray(node)) return node.map((item) => hoistTitled(item, schemas));
  if (!isObject(node)) return node;
  const out = Object.fromEntries(Object.entries(node).map(([key, value]) => [key, hoistTitled(value, schemas)]));
  const title = out.title;
  if (isComponent || typeof title !== 'string' || typeof out.type !== 'string') return out;
  if (schemas[title] !== undefined && !isDeepStrictEqual(schemas[title], out)) throw new Error(`two different schemas are titled '${title}' in /openapi.json`);
  schemas[title] = out;
  return { $ref: `#/components/schemas/${title}` };
}

/**
 * A copy of `node` in which each field marked with `documentedEnum` has its `enum` (the validator never saw one). A
 * copy: the route schemas the document was built from may be shared with the validators of another app.
 */
function withDocumentedEnums(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withDocumentedEnums);
  if (!isObject(node)) return node;
  const { [DOCUMENTED_ENUM]: values, ...rest } = node;
  const out = Object.fromEntries(Object.entries(rest).map(([key, value]) => [key, withDocumentedEnums(value)]));
  return values === undefined ? out : { ...out, enum: values };
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** The whole document, once built: documented enums, shared error answers, optional bodies, named schemas. */
function transformDocument(doc: Json): Json {
  doc.paths = withDocumentedEnums(doc.paths);
  doc.components = withDocumentedEnums(doc.components);
  const components = doc.components as { schemas: Json };
  for (const item of Object.values(doc.paths as Record<string, Json>)) {
    for (const method of METHODS) {
      const operation = item[method] as Json | undefined;
      if (!operation) continue;
      shareErrorAnswers(operation.responses as Json);
      markOptionalBody(operation);
    }
  }
  for (const [name, schema] of Object.entries(components.schemas)) components.schemas[name] = hoistTitled(schema, components.schemas, true);
  doc.paths = hoistTitled(doc.paths, components.schemas);
  return doc;
}
