import { useSyncExternalStore } from 'react';
import { FOLDERS, type Folder } from './types';

// A router of a few lines: the app has four kinds of page, and the History API is all it needs.
// Paths stay clear of the API's own (/inbox, /messages, … at the root): the server answers index.html only
// for page requests that match no API route (src/transports/http/web.ts).

/** How a compose view starts: a new message, or an answer to (or forward of) the message `source`. */
export type ComposeMode = 'new' | 'reply' | 'all' | 'forward';

/** A list across every mailbox: every inbox, the starred messages, or a label's messages (`/mail/all`, …). */
export type CrossView = { kind: 'all' } | { kind: 'starred' } | { kind: 'label'; label: string };

/** What the main pane of a mail page shows: a folder (or a message of it), a list across mailboxes, the drafts, or the compose form. */
export type MailView =
  | { kind: 'folder' }
  | CrossView
  | { kind: 'drafts' }
  | { kind: 'compose'; draftId: string | null; source: string | null; mode: ComposeMode };

/** Whether the view is a list of messages (a folder or a list across mailboxes), where j/k and the actions work. */
export const isList = (view: MailView): view is { kind: 'folder' } | CrossView => view.kind === 'folder' || isCross(view);
export const isCross = (view: MailView): view is CrossView => view.kind === 'all' || view.kind === 'starred' || view.kind === 'label';

export type Route =
  | { page: 'login' }
  | { page: 'mail'; mailbox: string | null; folder: Folder; messageId: string | null; q: string; offset: number; view: MailView }
  | { page: 'admin'; section: string }
  | { page: 'not-found'; path: string };

const COMPOSE_MODES: readonly ComposeMode[] = ['new', 'reply', 'all', 'forward'];

/** `/mail/{mailbox}/drafts` and `/mail/{mailbox}/compose[/{draft_id}]?reply=…&mode=…`; null for any other path. */
function writingView(parts: string[], query: URLSearchParams): MailView | null {
  if (parts[2] === 'drafts' && parts.length === 3) return { kind: 'drafts' };
  if (parts[2] !== 'compose') return null;
  const mode = query.get('mode') ?? 'new';
  const source = query.get('reply');
  return {
    kind: 'compose',
    draftId: parts[3] ?? null,
    source: parts[3] === undefined ? source : null,
    mode: source !== null && parts[3] === undefined && (COMPOSE_MODES as readonly string[]).includes(mode) ? (mode as ComposeMode) : 'new',
  };
}

/** `/mail/all[/{id}]`, `/mail/starred[/{id}]`, `/mail/label/{name}[/{id}]`; null for any other path (a mailbox has an @). */
function crossView(parts: string[]): { view: CrossView; messageId: string | null } | null {
  if ((parts[1] === 'all' || parts[1] === 'starred') && parts.length <= 3) return { view: { kind: parts[1] }, messageId: parts[2] ?? null };
  if (parts[1] === 'label' && parts[2] !== undefined) return { view: { kind: 'label', label: parts[2] }, messageId: parts[3] ?? null };
  return null;
}

function offsetOf(query: URLSearchParams): number {
  const offset = Number.parseInt(query.get('offset') ?? '0', 10);
  return Number.isFinite(offset) && offset > 0 ? offset : 0;
}

const listeners = new Set<() => void>();

function notify(): void {
  for (const l of listeners) l();
}

window.addEventListener('popstate', notify);

export function navigate(to: string, options: { replace?: boolean } = {}): void {
  if (to === `${location.pathname}${location.search}`) return;
  if (options.replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  notify();
}

function isFolder(value: string | undefined): value is Folder {
  return (FOLDERS as readonly string[]).includes(value ?? '');
}

export function parseRoute(pathname: string, search: string): Route {
  const parts = pathname.split('/').filter(Boolean).map(decodeURIComponent);
  const query = new URLSearchParams(search);
  if (parts[0] === 'login' && parts.length === 1) return { page: 'login' };
  if (parts[0] === 'settings' && parts.length <= 2) return { page: 'admin', section: parts[1] ?? '' };
  if (parts.length === 0) return { page: 'mail', mailbox: null, folder: 'inbox', messageId: null, q: '', offset: 0, view: { kind: 'folder' } };
  if (parts[0] !== 'mail' || parts.length > 4) return { page: 'not-found', path: pathname };
  const cross = crossView(parts);
  if (cross !== null) return { page: 'mail', mailbox: null, folder: 'inbox', messageId: cross.messageId, q: '', offset: offsetOf(query), view: cross.view };
  const writing = writingView(parts, query);
  if (writing !== null) return { page: 'mail', mailbox: parts[1] ?? null, folder: 'inbox', messageId: null, q: '', offset: 0, view: writing };
  const folder = parts[2] ?? 'inbox';
  if (!isFolder(folder)) return { page: 'not-found', path: pathname };
  return { page: 'mail', mailbox: parts[1] ?? null, folder, messageId: parts[3] ?? null, q: query.get('q') ?? '', offset: offsetOf(query), view: { kind: 'folder' } };
}

/** The compose form of `mailbox`: a saved draft, an answer to (or forward of) `source`, or a new message. */
export function composePath(mailbox: string, target: { draftId?: string; source?: string; mode?: ComposeMode } = {}): string {
  const path = `/mail/${encodeURIComponent(mailbox)}/compose`;
  if (target.draftId) return `${path}/${encodeURIComponent(target.draftId)}`;
  if (!target.source || !target.mode || target.mode === 'new') return path;
  return `${path}?${new URLSearchParams({ reply: target.source, mode: target.mode }).toString()}`;
}

export function draftsPath(mailbox: string): string {
  return `/mail/${encodeURIComponent(mailbox)}/drafts`;
}

/** The path of a mail view; a search (`q`) and a page offset go in the query. */
export function mailPath(mailbox: string, folder: Folder, messageId: string | null = null, q = '', offset = 0): string {
  const path = `/mail/${encodeURIComponent(mailbox)}/${folder}${messageId ? `/${encodeURIComponent(messageId)}` : ''}`;
  const query = new URLSearchParams();
  if (q) query.set('q', q);
  if (offset > 0) query.set('offset', String(offset));
  const qs = query.toString();
  return qs ? `${path}?${qs}` : path;
}

/** The path of a list across mailboxes, or of one of its messages. */
export function crossPath(view: CrossView, messageId: string | null = null, offset = 0): string {
  const base = view.kind === 'label' ? `/mail/label/${encodeURIComponent(view.label)}` : `/mail/${view.kind}`;
  const path = messageId ? `${base}/${encodeURIComponent(messageId)}` : base;
  return offset > 0 ? `${path}?offset=${offset}` : path;
}

/** The path of the route's list (a folder, a search, or a list across mailboxes) at `offset`, or of one of its messages. */
export function listPath(route: Extract<Route, { page: 'mail' }>, messageId: string | null, offset: number): string | null {
  if (isCross(route.view)) return crossPath(route.view, messageId, offset);
  return route.mailbox ? mailPath(route.mailbox, route.folder, messageId, route.q, offset) : null;
}

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

const snapshot = () => `${location.pathname}${location.search}`;

export function useRoute(): Route {
  const current = useSyncExternalStore(subscribe, snapshot);
  const [pathname = '/', search = ''] = current.split(/\?(.*)/s);
  return parseRoute(pathname, search ? `?${search}` : '');
}
