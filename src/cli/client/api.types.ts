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

/**
 * What the user typed, for a field the API types as one of its names (a folder, an event, a list, a DNS type): sent
 * as it is, since the server refuses another with its own error, which the command shows as it is.
 */
export function given<T extends string>(value: string): T;
export function given<T extends string>(value: string | undefined): T | undefined;
export function given<T extends string>(value: string | undefined): T | undefined {
  return value as T | undefined;
}

/**
 * Every member of the string union `T` (an enum of the API) as a list in the client's own order: a member left out,
 * or a value the API does not have, fails to compile, so the client's lists cannot drift from the API's.
 */
export const everyOf =
  <T extends string>() =>
  <const V extends readonly T[]>(values: V & ([Exclude<T, V[number]>] extends [never] ? unknown : { readonly missing: Exclude<T, V[number]> })): V =>
    values;
