/**
 * Typed domain errors with a stable snake_case `code`. Transports map `kind` to their own
 * vocabulary (an HTTP status, an SMTP reply); nothing here knows about HTTP.
 */
export type ErrorKind =
  | 'invalid'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'unprocessable'
  | 'too_large'
  | 'rate_limited'
  | 'unavailable';

export class DomainError extends Error {
  readonly kind: ErrorKind;
  readonly code: string;
  /** Seconds the caller should wait before trying again (rate limits). */
  readonly retryAfterSeconds: number | undefined;
  /** Where in the caller's input the problem is (0-based), when the input is text (a search query). */
  readonly position: number | undefined = undefined;
  /** More members of the error body beside `error` and `detail` (a refused delete's `dependents`); set by `withFields`. */
  fields: Readonly<Record<string, unknown>> | undefined = undefined;

  constructor(kind: ErrorKind, code: string, detail: string, retryAfterSeconds?: number) {
    super(detail);
    this.name = 'DomainError';
    this.kind = kind;
    this.code = code;
    this.retryAfterSeconds = retryAfterSeconds;
  }

  get detail(): string {
    return this.message;
  }
}

export const invalid = (code: string, detail: string): DomainError => new DomainError('invalid', code, detail);
export const unauthorized = (code: string, detail: string): DomainError =>
  new DomainError('unauthorized', code, detail);
export const forbidden = (code: string, detail: string): DomainError => new DomainError('forbidden', code, detail);
export const notFound = (code: string, detail: string): DomainError => new DomainError('not_found', code, detail);
export const conflict = (code: string, detail: string): DomainError => new DomainError('conflict', code, detail);
/** Past a size limit of the content (not of the request's bytes, which the transport refuses itself). */
export const tooLarge = (code: string, detail: string): DomainError => new DomainError('too_large', code, detail);
export const rateLimited = (code: string, detail: string, retryAfterSeconds: number): DomainError =>
  new DomainError('rate_limited', code, detail, retryAfterSeconds);

/** The error with more members for its body; each transport's error schema names the ones it may carry. */
export function withFields(error: DomainError, fields: Readonly<Record<string, unknown>>): DomainError {
  error.fields = fields;
  return error;
}

export const isDomainError = (err: unknown): err is DomainError => err instanceof DomainError;
