/**
 * IMAP's Drafts mailbox over the mailbox's drafts (decisions 630-639): UIDs, modseqs and flags from the mail store's
 * drafts, FETCH from each draft's kept MIME source (ENVELOPE and BODYSTRUCTURE computed from it on every FETCH:
 * drafts are few), SEARCH text keys by reading the sources of the folder's drafts, EXPUNGE deleting the drafts.
 */
import type { Work } from '../../db/tables.js';
import { MAX_IMAP_UID, structureBytes } from '../../lib/imap-message/index.js';
import type { Logger } from '../../lib/logger.js';
import type { FolderTextField, MailStore } from '../mail/mail.store.js';
import { parseMessage, type AddressView, type ParsedMessage } from '../messages/mime.js';
import { rawHeaderFields } from '../sending/reply.js';
import type { DraftSources, ImportedDraft } from '../sending/draft.service.js';
import type { FolderView, HeaderField, ViewAccount } from './folder-view.js';
import type { FolderStatus } from '../mail/sync.store.js';

/** Most drafts one SEARCH text key reads the sources of; past it the key answers NO (a mailbox holds few drafts). */
export const MAX_DRAFTS_SEARCHED = 2_000;

export type DraftsFolderStore = Pick<
  MailStore,
  | 'draftFolderStatus'
  | 'folderModseq'
  | 'draftFolderIndex'
  | 'draftsByUid'
  | 'draftsChangedSince'
  | 'storeDraftFlags'
  | 'removeDraftsByUid'
  | 'expungedSince'
  | 'renumberFolder'
  | 'draftUid'
>;

export interface DraftsFolderDeps {
  work: Work;
  store: DraftsFolderStore;
  drafts: Pick<DraftSources, 'renderMissing'>;
  /** The folder key Drafts' counter and expunge log use. */
  folder: string;
  /** A header value with its encoded-words decoded, as the messages' SEARCH reads them. */
  decoded: (value: string) => string;
  /** Where a renumbering of Drafts (its UIDs past 32 bits) is told. */
  logger: Pick<Logger, 'warn'>;
}

/** Drafts as a folder view, and where new drafts' UIDs are after a write (a renumbering may have moved them). */
export interface DraftsFolderView extends FolderView {
  placed(account: ViewAccount, made: readonly ImportedDraft[]): Promise<{ uidvalidity: number; uids: number[] }>;
}

const addresses = (list: readonly AddressView[]) => list.map((a) => `${a.name} ${a.address}`).join(' ');

/** The text of a parsed draft a SEARCH key looks in (as the full-text index's fields are made). */
function fieldText(parsed: ParsedMessage, field: FolderTextField): string {
  const body = [parsed.text ?? '', parsed.html ?? ''].join(' ');
  switch (field) {
    case 'subject': return parsed.subject;
    case 'from': return parsed.from ? addresses([parsed.from]) : '';
    case 'to': return addresses(parsed.to);
    case 'cc': return addresses(parsed.cc);
    case 'body': return body;
    case 'text': return [parsed.headers.map((h) => `${h.name}: ${h.value}`).join(' '), parsed.subject, body].join(' ');
  }
}

const words = (text: string) => text.toLowerCase().split(/\s+/).filter((w) => w.length > 0).join(' ');

export function createDraftsFolder({ work, store, drafts, folder, decoded, logger }: DraftsFolderDeps): DraftsFolderView {
  const scope = (a: ViewAccount) => ({ workspaceId: a.workspaceId, mailboxId: a.mailboxId });

  /** Drafts' status once its UIDs fit in 32 bits: every write takes a UID, so its counter can run past them as a folder's can. */
  async function fitted(account: ViewAccount): Promise<{ status: FolderStatus; renumbered: boolean }> {
    const status = await store.draftFolderStatus(work, scope(account));
    if (status.uidnext <= MAX_IMAP_UID) return { status, renumbered: false };
    const done = await work.transaction().execute((trx) => store.renumberFolder(trx, { ...scope(account), folder }));
    if (done) logger.warn({ ...scope(account), folder, ...done }, 'imap folder UIDs renumbered: its UID counter passed 32 bits');
    return { status: await store.draftFolderStatus(work, scope(account)), renumbered: true };
  }

  return {
    async status(account) {
      // Drafts written before sources were kept get theirs the first time a client looks.
      await drafts.renderMissing(scope(account));
      return (await fitted(account)).status;
    },
    async placed(account, made) {
      const { status, renumbered } = await fitted(account);
      if (!renumbered) return { uidvalidity: status.uidvalidity, uids: made.map((d) => d.uid) };
      const uids: number[] = [];
      for (const d of made) uids.push((await store.draftUid(work, account.workspaceId, d.id)) ?? 0);
      return { uidvalidity: status.uidvalidity, uids };
    },
    modseq: (account) => store.folderModseq(work, { ...scope(account), folder }),
    async index(account) {
      const entries = await store.draftFolderIndex(work, scope(account));
      if ((entries.at(-1)?.uid ?? 0) <= MAX_IMAP_UID) return entries;
      await fitted(account);
      return store.draftFolderIndex(work, scope(account));
    },
    async messages(account, ranges, read) {
      if (read === 'index') return store.draftsByUid(work, scope(account), ranges, 'index');
      const rows = await store.draftsByUid(work, scope(account), ranges, 'raw');
      if (read === 'structure') for (const row of rows) row.structure = structureBytes(row.raw!);
      return rows;
    },
    changedSince: (account, modseq) => store.draftsChangedSince(work, scope(account), modseq),
    expungedSince: (account, modseq) => store.expungedSince(work, { ...scope(account), folder }, modseq),
    store: (account, ranges, change) => work.transaction().execute((trx) => store.storeDraftFlags(trx, scope(account), ranges, change)),
    async searchText(account, field, value) {
      const index = await store.draftFolderIndex(work, scope(account));
      if (index.length > MAX_DRAFTS_SEARCHED) return { ok: false, text: `Drafts holds more than ${MAX_DRAFTS_SEARCHED} drafts to search.` };
      const wanted = words(value);
      const uids: number[] = [];
      for (let i = 0; i < index.length; i += 100) {
        const ranges = index.slice(i, i + 100).map((e) => [e.uid, e.uid] as const);
        for (const row of await store.draftsByUid(work, scope(account), ranges, 'raw')) {
          if (words(fieldText(await parseMessage(row.raw!), field)).includes(wanted)) uids.push(row.uid);
        }
      }
      return { ok: true, uids };
    },
    async headers(account, ranges) {
      const rows = await store.draftsByUid(work, scope(account), ranges, 'raw');
      return rows.map((r) => ({ uid: r.uid, headers: rawHeaderFields(r.raw!).map((h): HeaderField => ({ name: h.name, value: decoded(h.value) })) }));
    },
    expunge: (account, ranges) => work.transaction().execute((trx) => store.removeDraftsByUid(trx, scope(account), ranges, true)),
  };
}
