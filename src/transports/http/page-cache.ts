/**
 * Answered pages of single mailboxes, kept in this process as the bytes the route's response serializer wrote, for
 * as long as their mailbox's folders are unchanged: a client polling `GET /inbox?mailbox=` for new mail (the
 * commonest request there is) is then answered with one small read instead of the page's rows.
 *
 * Why a kept page is never stale:
 * - A page of one mailbox (filtered by folder and read state, or not) shows only that mailbox's messages in
 *   the folders it reads, and those folders' counters.
 * - Every transaction that changes such a message also raises the folder's `modseq` (folder_counts), which only
 *   ever grows while the mailbox exists: every operation of the mail store that changes a message does it
 *   (`bumpFolder` in modules/mail/message.store.ts).
 * - A page is kept under its *version*: the mailbox's id and the sum of those folders' modseqs, read in the
 *   same statement as the page (one snapshot; the mail store's `pageAndVersion`, behind `MessageService.list`). The
 *   sum changes with every such transaction, so a later request that reads the same version (`pageVersion`, behind
 *   `MessageService.pageVersion`) would read the same page.
 * - The mailbox id is part of the version: a mailbox deleted and created again at its address starts its
 *   modseqs anew.
 * - An outbound message's delivery `status` and `events` change without a modseq: a page showing a delivery
 *   that is still `scheduled`, `queued` or `processing` has no version (`pageAndVersion` gives none) and is never
 *   kept (decision 216), and a final one does not change. Whatever changes a final delivery state must raise the
 *   folder's modseq.
 * - The key holds everything of the request that decides the answer apart from the version: the route (its
 *   serializer), the workspace and every query parameter.
 * Each process keeps its own pages; the version is read from the database on every request, so changes
 * made by any process (an smtp role storing mail, another api role moving it) are seen at once.
 */
import type { FastifyReply } from 'fastify';
import type { MessageService } from '../../modules/messages/message.service.js';
import type { MessageListQuery } from '../../modules/messages/message.types.js';
import type { TenantContext } from '../../modules/tenancy/tenancy.types.js';

export interface KeptPage {
  version: string;
  /** The answer's body: the page as the route's serializer wrote it, in UTF-8. */
  body: Buffer;
}

export interface PageCache {
  /** The page kept under `key`, whatever its version (the caller compares it with the current one). */
  get(key: string): KeptPage | undefined;
  /** Keep `body` as the page `key` at `version`, dropping the least recently used pages beyond the budget. */
  set(key: string, version: string, body: Buffer): void;
  /** Bytes held (bodies only). */
  readonly bytes: number;
}

/**
 * The key of a page: the route and workspace, and every query parameter as asked (the service reads the same
 * mailbox for the same spelling of its address every time).
 */
export function pageKey(route: string, workspaceId: string, query: MessageListQuery): string {
  const unread = query.unread === undefined ? '' : query.unread ? '1' : '0';
  return [route, workspaceId, query.mailbox ?? '', query.folder ?? '', query.label ?? '', query.thread_id ?? '', unread, query.limit, query.offset].join('\u0000');
}

/**
 * A least-recently-used cache holding at most `maxBytes` of page bodies (0: keeps nothing). A Map keeps its
 * insertion order, so re-inserting on use makes its first key the least recently used one.
 */
export function createPageCache(maxBytes: number): PageCache {
  const pages = new Map<string, KeptPage>();
  let bytes = 0;

  function drop(key: string): void {
    const kept = pages.get(key);
    if (!kept) return;
    pages.delete(key);
    bytes -= kept.body.length;
  }

  return {
    get(key) {
      const kept = pages.get(key);
      if (kept) {
        pages.delete(key);
        pages.set(key, kept);
      }
      return kept;
    },
    set(key, version, body) {
      drop(key);
      if (body.length > maxBytes) return;
      while (bytes + body.length > maxBytes) drop(pages.keys().next().value!);
      pages.set(key, { version, body });
      bytes += body.length;
    },
    get bytes() {
      return bytes;
    },
  };
}

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Answer a page of messages: the kept answer while its version stands (one small read, no rows), else the
 * service's page written by the route's response serializer, kept when the page has a version. The bytes are
 * sent as a Buffer: encoded once, their length known, and a kept page sent as it is.
 */
export async function sendMessagePage(
  reply: FastifyReply,
  pages: PageCache,
  messages: Pick<MessageService, 'list' | 'pageVersion'>,
  tenant: TenantContext,
  query: MessageListQuery,
): Promise<FastifyReply> {
  const key = pageKey(reply.request.routeOptions.url ?? '', tenant.workspaceId, query);
  const kept = pages.get(key);
  if (kept !== undefined && (await messages.pageVersion(tenant, query)) === kept.version) return reply.type(JSON_TYPE).send(kept.body);
  const page = await messages.list(tenant, query);
  if (page.version === undefined) return reply.send(page);
  // The route's serializer (fast-json-stringify) writes text; Fastify's type allows a custom one bytes.
  const written = reply.serialize(page);
  const body = typeof written === 'string' ? Buffer.from(written, 'utf8') : Buffer.from(new Uint8Array(written));
  pages.set(key, page.version, body);
  return reply.type(JSON_TYPE).send(body);
}
