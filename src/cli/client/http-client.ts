import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Answer, Method, PathOf, RequestArgs } from './api.types.js';
import { createMailroomClient } from '../../sdk/index.js';
import { ApiError, CliError } from './errors.js';
import { trimEnd } from './format.js';

/** How long the client waits for a server's answer to start (a download may then take as long as it takes). */
export const REQUEST_TIMEOUT_MS = 30_000;
export const DEFAULT_SERVER = 'http://127.0.0.1:8080';
const USER_AGENT = 'mailroom-cli/0.1.0';

type Query = Record<string, string | number | boolean | undefined>;

/** One request's parts, as api.types.ts `Request` types them for each path. */
interface RequestParts {
  /** The values of the path template's `{placeholders}`. */
  path?: Record<string, string>;
  query?: Query;
  /** A JSON body; `undefined` sends none. */
  body?: unknown;
}

export interface Download {
  /** The answer's body, to be read to its end or destroyed. */
  body: IncomingMessage;
  contentType: string;
  /** The file name from Content-Disposition (`filename*` preferred), unsanitised, or null. */
  filename: string | null;
}

type Call<M extends Method> = <P extends PathOf<M>>(path: P, ...request: RequestArgs<M, P>) => Promise<Answer<M, P>>;

/** One file part of a multipart/form-data upload. */
export interface UploadFile {
  filename: string;
  contentType: string;
  content: Buffer;
}

/**
 * The session API as the commands see it, typed by the generated API types (api.types.ts): a path template,
 * its `{ path, query, body }`, and the route's success answer. Refusals are ApiError, no server a CliError. The
 * calls go through the SDK's client (`createMailroomClient`), the one the web app uses.
 */
export interface ApiClient {
  get: Call<'get'>;
  post: Call<'post'>;
  patch: Call<'patch'>;
  delete: Call<'delete'>;
  /** POST files as multipart/form-data (one part per file; `contentId` makes the first inline); the answer as the route types it. */
  upload<P extends PathOf<'post'>>(path: P, values: Record<string, string>, files: readonly UploadFile[], contentId?: string): Promise<Answer<'post', P>>;
  download<P extends PathOf<'get'>>(path: P, ...request: RequestArgs<'get', P>): Promise<Download>;
  /** A long-lived GET (an event stream): the answer's body once its head arrives, with these extra headers. */
  stream(path: PathOf<'get'>, headers: Record<string, string>): Promise<IncomingMessage>;
}

/**
 * A server URL as the user gave it, checked and normalised: http or https, no credentials, query or
 * fragment, no trailing slash (a path prefix, for a server behind a reverse proxy, is kept).
 */
export function normaliseServer(value: string, from = '--server'): string {
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw new CliError(`${from} '${value}' is not a URL (for example ${DEFAULT_SERVER})`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new CliError(`${from} must be an http:// or https:// URL, not '${value}'`);
  if (url.username || url.password) throw new CliError(`${from} must not carry a user name or password`);
  if (url.search || url.hash) throw new CliError(`${from} must not have a query or a fragment`);
  return `${url.origin}${trimEnd(url.pathname, '/')}`;
}

/** Encode one path segment (ids, addresses, list entries with slashes). */
const seg = (value: string): string => encodeURIComponent(value);

/** A path template with its `{placeholders}` filled in, each one encoded as one segment. */
export function expandPath(template: string, values: Record<string, string> = {}): string {
  return template.replace(/\{(\w+)\}/g, (_match, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`${template}: no value for {${name}}`);
    return seg(value);
  });
}

type NetworkError = Error & { code?: string; errors?: (Error & { code?: string })[] };

/** Why a request never got an answer, in a few words. */
export function describeNetworkError(err: unknown, timeoutMs: number = REQUEST_TIMEOUT_MS): string {
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) return `no answer within ${timeoutMs / 1000} s`;
  // node:http's errors carry their code (an AggregateError, of every address tried, the attempts' codes too); an
  // error that wraps another carries it on its cause.
  const cause: NetworkError | undefined = err instanceof Error ? ((err.cause as NetworkError | undefined) ?? err) : undefined;
  const code = cause?.code ?? cause?.errors?.[0]?.code;
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host not found';
    case 'ECONNRESET':
      return 'connection closed by the server';
    case 'ETIMEDOUT':
      return 'connection timed out';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
    default:
      if (cause?.message) return code && /CERT|TLS|SSL/i.test(code) ? `TLS: ${cause.message}` : cause.message;
      return err instanceof Error ? err.message : String(err);
  }
}

/** The `{error, detail}` of a refusal; other bodies (a proxy's HTML page, Fastify's own shapes) made into one. */
function refusal(status: number, statusText: string, text: string): ApiError {
  try {
    const body = JSON.parse(text) as Record<string, unknown>;
    if (typeof body.error === 'string' && typeof body.detail === 'string') return new ApiError(status, body.error, body.detail);
    if (typeof body.message === 'string') return new ApiError(status, typeof body.code === 'string' ? body.code : 'error', body.message);
  } catch {
    // not JSON
  }
  const line = text.replace(/\s+/g, ' ').trim().slice(0, 120);
  return new ApiError(status, statusText.toLowerCase().replace(/\W+/g, '_') || 'error', line || 'the server gave no detail');
}

/** Parse the value of Content-Disposition for its file name (RFC 6266: `filename*` wins over `filename`). */
export function dispositionFilename(header: string | null): string | null {
  if (!header) return null;
  // The charset (group 1) is read from the first non-space after `=`, so that no two quantifiers share the spaces.
  const extended = /filename\*\s*=\s*([^'\s][^']*|)'[^']*'([^;]+)/i.exec(header);
  if (extended?.[2]) {
    try {
      return decodeURIComponent(extended[2].trim());
    } catch {
      // a broken encoding: fall back to the plain parameter
    }
  }
  const plain = /filename\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]+))/i.exec(header);
  const value = plain?.[1]?.replace(/\\(.)/g, '$1') ?? plain?.[2]?.trim();
  return value || null;
}

/** A header parameter value as a quoted string: quotes and backslashes escaped, line breaks (never valid there) dropped. */
const quoted = (value: string) => `"${value.replace(/[\r\n]/g, '').replace(/(["\\])/g, '\\$1')}"`;

/**
 * A multipart/form-data body (RFC 7578) of file parts, each under the field name `file`, and its Content-Type; a
 * `content_id` field first when given (the server applies it to the file part after it).
 */
export function multipartBody(files: readonly UploadFile[], contentId?: string): { body: Buffer; contentType: string } {
  const boundary = `----mailroom-${randomBytes(12).toString('hex')}`;
  const field = contentId === undefined ? [] : [Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="content_id"\r\n\r\n${contentId}\r\n`)];
  const parts = files.flatMap((f) => [
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename=${quoted(f.filename)}\r\nContent-Type: ${f.contentType}\r\n\r\n`),
    f.content,
    Buffer.from('\r\n'),
  ]);
  return { body: Buffer.concat([...field, ...parts, Buffer.from(`--${boundary}--\r\n`)]), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** The whole body of an answer as text. */
async function readText(body: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Send one request and resolve with the answer's head once it arrives (its body still to read), or reject when none
 * comes within `timeoutMs`. node:http rather than fetch: loading fetch's implementation was a large share of a command's
 * start (decision 217; bench/HISTORY.md). The https module is loaded only for an https server.
 */
async function exchange(url: URL, method: string, headers: Record<string, string>, body: string | Buffer | undefined, timeoutMs: number): Promise<IncomingMessage> {
  const { request } = url.protocol === 'https:' ? await import('node:https') : await import('node:http');
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) } });
    const timer = setTimeout(() => req.destroy(new DOMException('no answer in time', 'TimeoutError')), timeoutMs);
    req.on('response', (res) => {
      clearTimeout(timer);
      resolve(res);
    });
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end(body);
  });
}

/** The path of a request's URL below the server (as the commands name it: no query), for messages. */
const pathBelow = (server: string, url: string): string => url.slice(server.length).split('?')[0] ?? '';

/** The query string as the client has always sent it: every value that is not undefined. */
function queryString(query: Record<string, unknown>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    // The API's query parameters are strings, numbers and booleans (the generated types of every call say so).
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') params.set(key, String(value));
  }
  return params.toString();
}

type Send = (method: string, url: string, headers: Record<string, string>, body?: string | Buffer) => Promise<IncomingMessage>;

/**
 * One request to `server` over node:http: the answer's head once it arrives (its body still to read). No answer,
 * a redirect (not followed: the token would go wherever it points) and a refusal throw, in the CLI's words.
 */
function sender(server: string, timeoutMs: number): Send {
  return async (method, url, headers, body) => {
    let response: IncomingMessage;
    try {
      response = await exchange(new URL(url), method, headers, body, timeoutMs);
    } catch (err) {
      throw new CliError(`cannot reach ${server} (${describeNetworkError(err, timeoutMs)})`);
    }
    const status = response.statusCode ?? 0;
    if (status >= 300 && status < 400) {
      response.destroy();
      const location = response.headers.location;
      throw new CliError(`${server} answered ${status}${location ? ` (redirect to ${location})` : ''}; redirects are not followed — check --server`);
    }
    if (status < 200 || status >= 300) throw refusal(status, response.statusMessage ?? '', await readText(response));
    return response;
  };
}

/**
 * The SDK client's `fetch`: node:http rather than fetch's own, so that refusals, redirects, time-outs and unreachable
 * servers read as they always have. A refusal throws; a success is read whole and must be JSON.
 */
function sdkTransport(server: string, send: Send): (request: Request) => Promise<Response> {
  return async (request) => {
    const headers = Object.fromEntries(request.headers);
    const body = request.body === null ? undefined : Buffer.from(await request.arrayBuffer());
    const response = await send(request.method, request.url, headers, body);
    const text = await readText(response);
    try {
      JSON.parse(text);
    } catch {
      throw new CliError(`${server} answered ${request.method} ${pathBelow(server, request.url)} with something that is not JSON; is it a Mailroom server?`);
    }
    return new Response(text, { status: response.statusCode ?? 200, headers: { 'content-type': 'application/json' } });
  };
}

/**
 * A client for one server, sending `token` (a session token) in X-Service-Session, or no credential when it is null
 * (login). Its JSON calls go through the SDK's client (src/sdk); downloads and streams, read as they arrive, go
 * straight to the transport.
 */
export function createApiClient(server: string, token: string | null, timeoutMs: number = REQUEST_TIMEOUT_MS): ApiClient {
  const send = sender(server, timeoutMs);
  const session: Record<string, string> = token === null ? {} : { 'x-service-session': token };
  const options = { baseUrl: server, headers: { accept: 'application/json', 'user-agent': USER_AGENT }, querySerializer: queryString, fetch: sdkTransport(server, send) };
  const sdk = token === null ? createMailroomClient(options) : createMailroomClient({ ...options, session: token });

  /** A raw GET (a download, a stream): the answer's head once it arrives, its body still to read. */
  function raw(template: string, parts: RequestParts = {}, extra: Record<string, string> = {}): Promise<IncomingMessage> {
    let url = `${server}${expandPath(template, parts.path)}`;
    const search = queryString(parts.query ?? {});
    if (search) url += `?${search}`;
    return send('GET', url, { accept: 'application/json', 'user-agent': USER_AGENT, ...extra, ...session });
  }

  /**
   * One JSON call through the SDK's client. The path, its parameters and its body were checked against the
   * generated types at the call (api.types.ts, over the same paths); the answer is typed by the route's schema.
   */
  function json<M extends Method>(method: M): Call<M> {
    return async (template, ...[request]) => {
      const parts = request as RequestParts | undefined;
      const init = { params: { path: parts?.path, query: parts?.query }, body: parts?.body };
      // openapi-fetch's own types would check the call again; api.types.ts did, so the generic request is enough.
      const { data } = await sdk.request(method, template as never, init as never);
      return data as never;
    };
  }

  return {
    get: json('get'),
    post: json('post'),
    patch: json('patch'),
    delete: json('delete'),
    async upload(template, values, files, contentId) {
      const { body, contentType } = multipartBody(files, contentId);
      // A body of our own making, sent as it is with its Content-Type (the multipart boundary in it).
      const init = { params: { path: values }, body, bodySerializer: (b: Buffer) => b, headers: { 'content-type': contentType } };
      const { data } = await sdk.request('post', template as never, init as never);
      return data as never;
    },
    async download(template, ...[request]) {
      const body = await raw(template, request as RequestParts | undefined);
      const disposition = body.headers['content-disposition'];
      return {
        body,
        contentType: body.headers['content-type'] ?? 'application/octet-stream',
        filename: dispositionFilename(disposition ?? null),
      };
    },
    stream: (path, headers) => raw(path, {}, { accept: 'text/event-stream', ...headers }),
  };
}
