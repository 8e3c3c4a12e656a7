import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isDomainError, type ErrorKind } from '../../../lib/errors.js';

const STATUS: Record<ErrorKind, number> = {
  invalid: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  unprocessable: 422,
  too_large: 413,
  rate_limited: 429,
  unavailable: 503,
};

/** Fastify's own client errors, by code, with our stable names. */
const FASTIFY_CODES: Record<string, { status: number; error: string; detail?: string }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, error: 'unsupported_media_type', detail: 'send the body as application/json' },
  // @fastify/multipart, on a route that takes file uploads (plugins/uploads.ts) given another body.
  FST_INVALID_MULTIPART_CONTENT_TYPE: { status: 415, error: 'unsupported_media_type', detail: 'send the files as multipart/form-data' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, error: 'invalid_request', detail: 'Content-Length does not match the body' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, error: 'invalid_json', detail: 'the body is empty but Content-Type says JSON' },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, error: 'invalid_json', detail: 'the body is not valid JSON' },
  FST_ERR_CTP_INVALID_TYPE: { status: 400, error: 'invalid_request', detail: 'Content-Type is malformed' },
};

/** Errors the router raises before a route is chosen (Fastify's `frameworkErrors`). */
const FRAMEWORK_CODES: Record<string, { status: number; error: string; detail: string }> = {
  FST_ERR_BAD_URL: { status: 400, error: 'invalid_url', detail: 'the URL path is not valid (broken percent-encoding or bytes)' },
  FST_ERR_MAX_PARAM_LENGTH: { status: 414, error: 'uri_too_long', detail: 'a path parameter is longer than 512 characters' },
};

/** Errors Node's HTTP parser raises before there is a request at all (the server's 'clientError'). */
const CLIENT_ERROR_CODES: Record<string, { status: number; error: string; detail: string }> = {
  HPE_HEADER_OVERFLOW: { status: 431, error: 'headers_too_large', detail: 'the request headers are larger than 16 KiB' },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, error: 'request_timeout', detail: 'the request (headers and body) did not arrive in time' },
};
const MALFORMED_REQUEST = { status: 400, error: 'bad_request', detail: 'the request is not valid HTTP/1.1' };

interface ValidationIssue {
  instancePath?: string;
  message?: string;
  keyword?: string;
  params?: Record<string, unknown>;
}

function describeValidation(context: string | undefined, issue: ValidationIssue | undefined): string {
  const where = `${context ?? 'request'}${issue?.instancePath ? issue.instancePath.replaceAll('/', '.') : ''}`;
  if (!issue) return `${where} is invalid`;
  if (issue.keyword === 'additionalProperties') return `${where} has an unknown field '${String(issue.params?.additionalProperty)}'`;
  if (issue.keyword === 'required') return `${where} is missing the required field '${String(issue.params?.missingProperty)}'`;
  return `${where} ${issue.message ?? 'is invalid'}`;
}

/**
 * The issue to report. A value that fits none of a union's forms (`to`: a string or an array) fails every form; the
 * form it was meant as is the one whose type it has, so the issue that is not about the type says what is wrong
 * (`must NOT have more than 50 items` rather than `must be string`).
 */
function firstIssue(issues: readonly ValidationIssue[]): ValidationIssue | undefined {
  if (!issues.some((i) => i.keyword === 'anyOf')) return issues[0];
  return issues.find((i) => i.keyword !== 'type' && i.keyword !== 'anyOf') ?? issues[0];
}

/** What a body that failed its schema answers: `context` names it (`body`, `body.messages.3`), the first issue says why. */
export function describeValidationIssues(context: string, issues: readonly ValidationIssue[]): string {
  return describeValidation(context, firstIssue(issues));
}

type ErrorBody = { error: string; detail: string; position?: number; [field: string]: unknown };

/** A route's body limit as the 413 states it: `1 MiB`, `40 MiB` (every limit here is whole mebibytes or bytes). */
function bytesText(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
}

/**
 * Map any error to `{error, detail}` and a status; a 5xx never carries internals. `bodyLimit`: the route's own (most
 * routes 1 MiB, those that take attachments more), which a 413 for the request's size names.
 */
export function toHttpError(err: unknown, requestId: string, bodyLimit = 1024 * 1024): { status: number; body: ErrorBody; retryAfter?: number } {
  if (isDomainError(err)) {
    const body: ErrorBody = { ...err.fields, error: err.code, detail: err.detail, ...(err.position !== undefined ? { position: err.position } : {}) };
    return { status: STATUS[err.kind], body, ...(err.retryAfterSeconds !== undefined ? { retryAfter: err.retryAfterSeconds } : {}) };
  }
  const e = err as FastifyError & { validation?: ValidationIssue[]; validationContext?: string };
  if (e.validation) {
    return { status: 400, body: { error: 'invalid_request', detail: describeValidation(e.validationContext, firstIssue(e.validation)) } };
  }
  if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return { status: 413, body: { error: 'payload_too_large', detail: `the request body is larger than ${bytesText(bodyLimit)}, this route's limit` } };
  }
  const known = e.code ? FASTIFY_CODES[e.code] : undefined;
  if (known) return { status: known.status, body: { error: known.error, detail: known.detail ?? e.message } };
  if (e.statusCode === 429) {
    const detail = (err as { detail?: unknown }).detail;
    return { status: 429, body: { error: 'rate_limited', detail: typeof detail === 'string' ? detail : 'too many requests; slow down' } };
  }
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return { status: e.statusCode, body: { error: 'invalid_request', detail: e.message } };
  }
  return { status: 500, body: { error: 'internal_error', detail: `an unexpected error occurred (request ${requestId}); it has been logged` } };
}

/** The body of a request that arrives while the server closes. */
const SHUTTING_DOWN = JSON.stringify({ error: 'shutting_down', detail: 'this server is shutting down; send the request again' });

/**
 * While the server closes, a request that still arrives (on a keep-alive connection that was busy) is
 * answered 503 in the usual body; Fastify's own `return503OnClosing` answer has another shape. The body
 * is sent as text, past the route's response schemas (which describe its own answers).
 */
function answerWhileClosing(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async (_request, reply) => {
    if (!closing) return undefined;
    return reply.code(503).header('connection', 'close').type('application/json; charset=utf-8').send(SHUTTING_DOWN);
  });
}

/**
 * `beforeNotFound` runs before an unknown route's 404 (the rate limit by client address); `page`, when given,
 * may answer it instead (the web app's index.html for a browser's page request).
 */
export function registerErrorHandling(
  app: FastifyInstance,
  beforeNotFound: (request: FastifyRequest, reply: FastifyReply) => Promise<void>,
  page: (request: FastifyRequest, reply: FastifyReply) => FastifyReply | null = () => null,
): void {
  answerWhileClosing(app);
  app.setErrorHandler(async (err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const mapped = toHttpError(err, request.id, request.routeOptions.bodyLimit);
    if (mapped.status >= 500) request.log.error({ err }, 'request failed');
    else request.log.info({ error: mapped.body.error, status: mapped.status }, 'request refused');
    if (mapped.retryAfter !== undefined) void reply.header('retry-after', String(mapped.retryAfter));
    return reply.code(mapped.status).type('application/json; charset=utf-8').send(mapped.body);
  });
  app.setNotFoundHandler(
    { preHandler: beforeNotFound },
    async (request, reply) =>
      page(request, reply) ?? reply.code(404).send({ error: 'not_found', detail: `no route ${request.method} ${request.url.split('?')[0]}` }),
  );
}

/** Fastify's `frameworkErrors`: a bad URL or an over-long path parameter, answered like every other error. */
export function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const known = FRAMEWORK_CODES[error.code] ?? { status: error.statusCode ?? 400, error: 'invalid_request', detail: error.message };
  request.log.info({ error: known.error, status: known.status }, 'request refused');
  void reply
    .code(known.status)
    .header('x-request-id', request.id)
    .type('application/json; charset=utf-8')
    .send({ error: known.error, detail: known.detail });
}

/**
 * Fastify's `clientErrorHandler` (the server's 'clientError'): headers too large, a request that is not
 * HTTP, or one that did not arrive within the time-outs. There is no request to answer through, so the
 * answer is written on the socket, which is then closed; as Node itself does, only when nothing has been
 * written on it yet (never into the middle of another answer).
 */
export function answerClientError(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const known = (err.code !== undefined ? CLIENT_ERROR_CODES[err.code] : undefined) ?? MALFORMED_REQUEST;
  if (socket.writable && socket.bytesWritten === 0) {
    const body = JSON.stringify({ error: known.error, detail: known.detail });
    socket.write(
      `HTTP/1.1 ${known.status} ${STATUS_CODES[known.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
