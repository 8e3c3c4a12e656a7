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

/** Tell the app its session ended (the event stream learns it outside api()). */
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

/** A request to the session API (`/app/api` + path) with the session header; JSON in, JSON out. */
export async function api<T>(path: string, init: { method?: string; body?: unknown; query?: Record<string, string | number | boolean | undefined> } = {}): Promise<T> {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(init.query ?? {})) if (v !== undefined && v !== '') params.set(k, String(v));
  const qs = params.toString();
  const headers: Record<string, string> = { ...sessionHeaders(), accept: 'application/json' };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`/app/api${path}${qs ? `?${qs}` : ''}`, {
    method: init.method ?? 'GET',
    headers,
    body: init.body === undefined ? null : JSON.stringify(init.body),
  });
  if (!res.ok) {
    const err = await errorOf(res);
    if (res.status === 401 && path !== '/login') sessionEnded();
    throw err;
  }
  return (await res.json()) as T;
}

/** Upload files as multipart/form-data (the browser writes the Content-Type with its boundary); JSON out, as api(). */
export async function apiForm<T>(path: string, form: FormData): Promise<T> {
  const res = await fetch(`/app/api${path}`, { method: 'POST', headers: { ...sessionHeaders(), accept: 'application/json' }, body: form });
  if (!res.ok) {
    const err = await errorOf(res);
    if (res.status === 401) sessionEnded();
    throw err;
  }
  return (await res.json()) as T;
}

/** Download an attachment: the request needs the session header, so fetch it and hand the browser a blob URL. */
export async function download(path: string, filename: string): Promise<void> {
  const res = await fetch(`/app/api${path}`, { headers: sessionHeaders() });
  if (!res.ok) throw await errorOf(res);
  const url = URL.createObjectURL(await res.blob());
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  document.body.append(link);
  link.click();
  link.remove();
  // The browser has taken the URL once click() returns; keep it a moment for slow starts.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
