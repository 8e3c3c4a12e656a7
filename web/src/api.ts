import type { Middleware } from 'openapi-fetch';
import { createMailroomClient } from '../../src/sdk/index';
import { loadToken } from './session';

/** An error answer of the API: `{error, detail}` and, for `invalid_query`, `position`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly position: number | null = null,
  ) {
    super(detail);
    this.name = 'ApiError';
  }
}

type Listener = () => void;
const onUnauthorized = new Set<Listener>();

/** Called when a request answers 401: the session ended (logged out elsewhere, expired). */
export function whenUnauthorized(listener: Listener): () => void {
  onUnauthorized.add(listener);
  return () => onUnauthorized.delete(listener);
}

/** Tell the app its session ended (the event stream learns it outside the client). */
export function sessionEnded(): void {
  for (const l of onUnauthorized) l();
}

export function sessionHeaders(): Record<string, string> {
  const token = loadToken();
  return token === null ? {} : { 'x-service-session': token };
}

async function errorOf(res: Response): Promise<ApiError> {
  try {
    const body = (await res.json()) as { error?: unknown; detail?: unknown; position?: unknown };
    return new ApiError(
      res.status,
      typeof body.error === 'string' ? body.error : 'http_error',
      typeof body.detail === 'string' ? body.detail : res.statusText,
      typeof body.position === 'number' ? body.position : null,
    );
  } catch {
    return new ApiError(res.status, 'http_error', `the server answered ${res.status}`);
  }
}

/**
 * A request option of this app (openapi-fetch copies unknown options onto the request): its 401 does not end the
 * session. A failed login has none to end; a download and the last save of a closing page never ended it.
 */
export const KEEP_SESSION = { keepSession: true } as const;

/** Each request carries the session of the moment (it changes at login and logout, the client does not). */
const session: Middleware = {
  onRequest({ request }) {
    for (const [name, value] of Object.entries(sessionHeaders())) request.headers.set(name, value);
    return request;
  },
  /** A refusal becomes an ApiError, thrown by the call; a 401 tells the app its session ended. */
  async onResponse({ request, response }) {
    if (response.ok) return undefined;
    const err = await errorOf(response);
    if (response.status === 401 && (request as Request & { keepSession?: boolean }).keepSession !== true) sessionEnded();
    throw err;
  },
};

/** The query string as the app has always sent it: every value that is neither undefined nor empty. */
function queryString(query: Record<string, unknown>): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    // The API's query parameters are strings, numbers and booleans (the generated types of every call say so).
    if ((typeof v === 'string' && v !== '') || typeof v === 'number' || typeof v === 'boolean') params.set(k, String(v));
  }
  return params.toString();
}

/**
 * The session API through the SDK's client (src/sdk), typed by the generated paths: each call names a path
 * template, its parameters and body, and answers `{ data }` typed by the route's success schema. A refusal
 * throws ApiError (see `session`), so `data` is there whenever a call returns: read it with `answerOf`.
 */
export const client = createMailroomClient({ baseUrl: '', headers: { accept: 'application/json' }, querySerializer: queryString });
client.use(session);

/** The answer of a call (a refusal has thrown already). */
export async function answerOf<T>(call: Promise<{ data?: T }>): Promise<T> {
  return (await call).data as T;
}

/** Download an attachment: the request needs the session header, so fetch it and hand the browser a blob URL. */
export async function download(messageId: string, attachmentId: string, filename: string): Promise<void> {
  const { data } = await client.GET('/app/api/messages/{message_id}/attachments/{attachment_id}', {
    params: { path: { message_id: messageId, attachment_id: attachmentId } },
    headers: { accept: null },
    parseAs: 'blob',
    ...KEEP_SESSION,
  });
  const url = URL.createObjectURL(data as Blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  document.body.append(link);
  link.click();
  link.remove();
  // The browser has taken the URL once click() returns; keep it a moment for slow starts.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
