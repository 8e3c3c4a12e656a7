import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isDomainError, type ErrorKind } from '../../../lib/errors.js';

const STATUS: Record<ErrorKind, number> = {
  invalid: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  unprocessable: 422,
  rate_limited: 429,
  unavailable: 503,
};

/** Fastify's own client errors, by code, with our stable names. */
const FASTIFY_CODES: Record<string, { status: number; error: string; detail?: string }> = {
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, error: 'payload_too_large', detail: 'the request body is larger than 1 MiB' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, error: 'unsupported_media_type', detail: 'send the body as application/json' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, error: 'invalid_request', detail: 'Content-Length does not match the body' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, error: 'invalid_json', detail: 'the body is empty but Content-Type says JSON' },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, error: 'invalid_json', detail: 'the body is not valid JSON' },
  FST_ERR_CTP_INVALID_TYPE: { status: 400, error: 'invalid_request', detail: 'Content-Type is malformed' },
};

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

type ErrorBody = { error: string; detail: string };

/** Map any error to `{error, detail}` and a status; a 5xx never carries internals. */
export function toHttpError(err: unknown, requestId: string): { status: number; body: ErrorBody; retryAfter?: number } {
  if (isDomainError(err)) {
    return { status: STATUS[err.kind], body: { error: err.code, detail: err.detail }, ...(err.retryAfterSeconds !== undefined ? { retryAfter: err.retryAfterSeconds } : {}) };
  }
  const e = err as FastifyError & { validation?: ValidationIssue[]; validationContext?: string };
  if (e.validation) {
    return { status: 400, body: { error: 'invalid_request', detail: describeValidation(e.validationContext, firstIssue(e.validation)) } };
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

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler(async (err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const mapped = toHttpError(err, request.id);
    if (mapped.status >= 500) request.log.error({ err }, 'request failed');
    else request.log.info({ error: mapped.body.error, status: mapped.status }, 'request refused');
    if (mapped.retryAfter !== undefined) void reply.header('retry-after', String(mapped.retryAfter));
    return reply.code(mapped.status).type('application/json; charset=utf-8').send(mapped.body);
  });
  app.setNotFoundHandler(async (request, reply) =>
    reply.code(404).send({ error: 'not_found', detail: `no route ${request.method} ${request.url.split('?')[0]}` }),
  );
}
