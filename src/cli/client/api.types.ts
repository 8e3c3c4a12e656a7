import type { components, paths } from '../../sdk/openapi.js';

// The session API as the client sees it: the types generated from /openapi.json (src/sdk/openapi.d.ts, made by
// `npm run sdk` from the route schemas). Type-only, so nothing is loaded at run time; a route that changes its
// parameters, body or answer breaks the client's build instead of its output.

/** A schema of the API by its name in /openapi.json: `Schema<'Draft'>`. */
export type Schema<Name extends keyof components['schemas']> = components['schemas'][Name];

export type Method = 'get' | 'post' | 'patch' | 'delete';

/** The path templates that have an operation for `M`: `/app/api/messages/{message_id}`. */
export type PathOf<M extends Method> = { [P in keyof paths]: paths[P][M] extends { responses: unknown } ? P : never }[keyof paths];

type Operation<M extends Method, P extends PathOf<M>> = Extract<paths[P][M], { responses: unknown }>;
type Parameters<O> = O extends { parameters: infer X } ? X : never;

/** What a path template's placeholders take: `{ message_id: string }`. */
type PathPart<O> = Parameters<O> extends { path: infer A } ? { path: A } : unknown;
type QueryPart<O> = Parameters<O> extends { query: infer Q } ? { query: Q } : Parameters<O> extends { query?: infer Q } ? ([Q] extends [undefined] ? unknown : { query?: Q }) : unknown;
type BodyPart<O> = O extends { requestBody?: never }
  ? unknown
  : O extends { requestBody: { content: { 'application/json': infer B } } }
    ? { body: B }
    : O extends { requestBody?: { content: { 'application/json': infer B } } }
      ? { body?: B }
      : unknown;

/** The parts of one request: `path` for the template's placeholders, `query`, and the JSON `body`. */
export type Request<M extends Method, P extends PathOf<M>> = PathPart<Operation<M, P>> & QueryPart<Operation<M, P>> & BodyPart<Operation<M, P>>;

/** A request's parts as the argument after the path: optional when none is required. */
export type RequestArgs<M extends Method, P extends PathOf<M>> = Record<never, never> extends Request<M, P> ? [request?: Request<M, P>] : [request: Request<M, P>];

/** The JSON body of an operation's success answer (200, 201 or 202). */
export type Answer<M extends Method, P extends PathOf<M>> =
  Operation<M, P> extends { responses: infer R }
    ? { [S in keyof R]: S extends 200 | 201 | 202 ? (R[S] extends { content: { 'application/json': infer T } } ? T : never) : never }[keyof R]
    : never;
