/**
 * Answered pages of single mailboxes, kept in this process for as long as their mailbox's folders are
 * unchanged: a client polling `GET /inbox?mailbox=` for new mail (the commonest request there is) is then
 * answered with one small read instead of the page's rows.
 *
 * Why a kept page is never stale:
 * - A page of one mailbox (filtered by folder and read state, or not) shows only that mailbox's messages in
 *   the folders it reads, and those folders' counters.
 * - Every transaction that changes such a message also raises the folder's `modseq` (folder_counts, see
 *   `messageRepository.bumpFolder`), which only ever grows while the mailbox exists.
 * - A page is kept under its *version*: the mailbox's id and the sum of those folders' modseqs, read in the
 *   same statement as the page (one snapshot). The sum changes with every such transaction, so a later
 *   request that reads the same version would read the same page.
 * - The mailbox id is part of the version: a mailbox deleted and created again at its address starts its
 *   modseqs anew.
 * - An outbound message's delivery `status` and `events` change without a modseq: a page showing a delivery
 *   that is still `queued` or `processing` is never kept (MessageService.list), and a final one does not change.
 *   Whatever changes a final delivery state must raise the folder's modseq.
 * Each process keeps its own pages; the version is read from the database on every request, so changes
 * made by any process (an smtp role storing mail, another api role moving it) are seen at once.
 */
export interface KeptPage {
  version: string;
  /** The answer's body: the page as UTF-8 JSON. */
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

/** The key of a page: everything of the request that decides its rows, apart from the version. */
export function pageKey(workspaceId: string, mailboxAddress: string, folder: string | undefined, unread: boolean | undefined, limit: number, offset: number): string {
  return `${workspaceId}\u0000${mailboxAddress}\u0000${folder ?? ''}\u0000${unread === undefined ? '' : unread ? '1' : '0'}\u0000${limit}\u0000${offset}`;
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
