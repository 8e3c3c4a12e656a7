/**
 * Copying stored messages between folders of one mailbox (IMAP COPY): each copy is a new message (new id, the next
 * UID of the target folder) with the same raw bytes, bodies, attachments, flags, labels and thread, written by
 * INSERT … SELECT from the originals (their kept FETCH structures too), so nothing is parsed again and no body passes
 * through the process. SQLite's full-text index is contentless (its words cannot be read back), so its rows for the
 * copies are made from the stored fields by `copySources`, which the caller runs before its transaction.
 */
import { sql, type Expression } from 'kysely';
import type { DialectInfo } from '../../db/dialect.js';
import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { searchDocumentOf, type SearchDocument, type SearchSource } from '../../lib/mail-text.js';
import { bumpFolder, mailDb, type MailDb } from './message.store.js';
import type { MessageTable } from './message.table.js';
import { indexFts } from './search.store.js';
import type { UidRanges } from './sync.store.js';

/** A message to copy, read before the copy's transaction (its SQLite index words made from the stored fields). */
export interface CopySource {
  id: string;
  uid: number;
  size: number;
  document: SearchDocument | null;
}

/** A copy made: the original's UID and the copy's id and UID in the target folder. */
export interface CopiedMessage {
  sourceUid: number;
  id: string;
  uid: number;
}

/** Most messages one copy transaction takes (the caller splits larger sets). */
export const COPY_CHUNK = 500;
/** Most attachments one INSERT … SELECT copies (each is two bound values of a CASE). */
const ATTACHMENTS_PER_STATEMENT = 1_000;

type Scope = { workspaceId: string; mailboxId: string; folder: string };

const MESSAGE_COPY_COLUMNS = [
  'workspace_id', 'mailbox_id', 'thread_id', 'direction', 'read', 'labels', 'from_json', 'from_address', 'to_json', 'cc_json', 'subject', 'snippet', 'size',
  'date', 'internet_message_id', 'auth_json', 'envelope_json', 'created_at', 'flagged', 'answered', 'deleted',
] as const satisfies ReadonlyArray<keyof MessageTable>;

/** `CASE column WHEN old THEN new … END` over a map of old → new values (at least one entry). */
function mapped(column: Expression<unknown>, map: ReadonlyMap<string, unknown>, otherwise?: Expression<unknown>) {
  const branches = [...map].map(([from, to]) => sql`when ${from} then ${to}`);
  return otherwise ? sql`case ${column} ${sql.join(branches, sql` `)} else ${otherwise} end` : sql`case ${column} ${sql.join(branches, sql` `)} end`;
}

/** The attachments of `ids` with new ids for their copies, and each message's attachment list rewritten to them. */
async function attachmentIds(db: MailDb, workspaceId: string, rows: ReadonlyArray<{ id: string; attachments_json: string }>) {
  const withAttachments = rows.filter((r) => r.attachments_json !== '[]');
  const renamed = new Map<string, string>();
  const lists = new Map<string, string>();
  if (withAttachments.length === 0) return { renamed, lists };
  const found = await db.selectFrom('attachments').select(['id']).where('workspace_id', '=', workspaceId).where('message_id', 'in', withAttachments.map((r) => r.id)).execute();
  for (const a of found) renamed.set(a.id, newId('att'));
  for (const row of withAttachments) {
    const list = JSON.parse(row.attachments_json) as Array<{ attachment_id: string }>;
    lists.set(row.id, JSON.stringify(list.map((a) => ({ ...a, attachment_id: renamed.get(a.attachment_id) ?? a.attachment_id }))));
  }
  return { renamed, lists };
}

/** Each thread gains its copies (counts only: the labels and latest activity are those of messages it has). */
async function countIntoThreads(db: MailDb, workspaceId: string, rows: ReadonlyArray<{ thread_id: string; read: number }>, now: number): Promise<void> {
  const perThread = new Map<string, { total: number; unread: number }>();
  for (const row of rows) {
    const c = perThread.get(row.thread_id) ?? { total: 0, unread: 0 };
    c.total += 1;
    c.unread += row.read === 1 ? 0 : 1;
    perThread.set(row.thread_id, c);
  }
  for (const threadId of [...perThread.keys()].sort()) {
    const c = perThread.get(threadId)!;
    await db
      .updateTable('threads')
      .set({ message_count: sql<number>`${sql.ref('message_count')} + ${c.total}`, unread_count: sql<number>`${sql.ref('unread_count')} + ${c.unread}`, updated_at: now })
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', threadId)
      .execute();
  }
}

export function createCopyMessagesStore({ clock, dialect }: { clock: Clock; dialect: DialectInfo }) {
  /** The bodies, attachments and labels of the copies, by INSERT … SELECT from the originals'. */
  async function copyParts(db: MailDb, workspaceId: string, ids: ReadonlyMap<string, string>, renamed: ReadonlyMap<string, string>): Promise<void> {
    const originals = [...ids.keys()];
    const pg = dialect.fullText === 'tsvector';
    await db
      .insertInto('message_contents')
      .columns(['message_id', 'workspace_id', 'text_body', 'html_body', 'headers_json', 'raw', ...(pg ? (['search_document'] as const) : [])])
      .expression(
        db
          .selectFrom('message_contents')
          .select((eb) => [
            mapped(eb.ref('message_contents.message_id'), ids).as('message_id'),
            'workspace_id', 'text_body', 'html_body', 'headers_json', 'raw',
            ...(pg ? (['search_document'] as const) : []),
          ])
          .where('workspace_id', '=', workspaceId)
          .where('message_id', 'in', originals),
      )
      .execute();
    // The kept FETCH structures go with the copies (the raw bytes are the same); any version, as kept.
    await db
      .insertInto('message_structures')
      .columns(['message_id', 'workspace_id', 'version', 'structure'])
      .expression(
        db
          .selectFrom('message_structures')
          .select((eb) => [mapped(eb.ref('message_structures.message_id'), ids).as('message_id'), 'workspace_id', 'version', 'structure'])
          .where('workspace_id', '=', workspaceId)
          .where('message_id', 'in', originals),
      )
      .execute();
    const attachments = [...renamed.keys()];
    for (let start = 0; start < attachments.length; start += ATTACHMENTS_PER_STATEMENT) {
      const chunk = new Map(attachments.slice(start, start + ATTACHMENTS_PER_STATEMENT).map((id) => [id, renamed.get(id)!]));
      await db
        .insertInto('attachments')
        .columns(['id', 'workspace_id', 'message_id', 'filename', 'content_type', 'size', 'inline', 'content_id', 'content'])
        .expression(
          db
            .selectFrom('attachments')
            .select((eb) => [mapped(eb.ref('attachments.id'), chunk).as('id'), 'workspace_id', mapped(eb.ref('attachments.message_id'), ids).as('message_id'), 'filename', 'content_type', 'size', 'inline', 'content_id', 'content'])
            .where('workspace_id', '=', workspaceId)
            .where('id', 'in', [...chunk.keys()]),
        )
        .execute();
    }
    await db
      .insertInto('message_labels')
      .columns(['message_id', 'workspace_id', 'label'])
      .expression(
        db
          .selectFrom('message_labels')
          .select((eb) => [mapped(eb.ref('message_labels.message_id'), ids).as('message_id'), 'workspace_id', 'label'])
          .where('workspace_id', '=', workspaceId)
          .where('message_id', 'in', originals),
      )
      .execute();
  }

  return {
    /**
     * The messages of the folder's UID ranges (at most COPY_CHUNK), in UID order, as a copy needs them; on SQLite with
     * the words of their index rows, made here, outside the copy's transaction.
     */
    async copySources(work: Work, scope: Scope, ranges: UidRanges): Promise<CopySource[]> {
      if (ranges.length === 0) return [];
      const db = mailDb(work);
      const base = db
        .selectFrom('messages')
        .select(['messages.id', 'messages.uid', 'messages.size'])
        .where('messages.workspace_id', '=', scope.workspaceId)
        .where('messages.mailbox_id', '=', scope.mailboxId)
        .where('messages.folder', '=', scope.folder)
        .where((eb) => eb.or(ranges.map(([from, to]) => eb.between('messages.uid', from, to))))
        .orderBy('messages.uid')
        .limit(COPY_CHUNK);
      if (dialect.fullText !== 'fts5') return (await base.execute()).map((r) => ({ id: r.id, uid: Number(r.uid), size: r.size, document: null }));
      const rows = await base
        .innerJoin('message_contents', (join) => join.onRef('message_contents.message_id', '=', 'messages.id').onRef('message_contents.workspace_id', '=', 'messages.workspace_id'))
        .select(['messages.subject', 'messages.from_json', 'messages.to_json', 'messages.cc_json', 'messages.attachments_json', 'message_contents.text_body', 'message_contents.html_body'])
        .execute();
      return rows.map((r) => ({
        id: r.id,
        uid: Number(r.uid),
        size: r.size,
        document: searchDocumentOf({
          subject: r.subject,
          from: JSON.parse(r.from_json) as SearchSource['from'],
          to: JSON.parse(r.to_json) as SearchSource['to'],
          cc: JSON.parse(r.cc_json) as SearchSource['cc'],
          text: r.text_body,
          html: r.html_body,
          attachments: JSON.parse(r.attachments_json) as Array<{ filename: string }>,
        }),
      }));
    },

    /**
     * Copy `sources` (of the folder `scope`, read by `copySources`) into `folder` of the same mailbox, in the caller's
     * transaction. Lock order: the originals (PostgreSQL), their threads in id order, the target's counter. The copies
     * take the target's next UIDs in the originals' UID order and its new modseq; those gone meanwhile are left out.
     */
    async copyMessages(work: Work, scope: Scope, sources: readonly CopySource[], folder: string): Promise<CopiedMessage[]> {
      if (sources.length === 0) return [];
      if (sources.length > COPY_CHUNK) throw new RangeError(`at most ${COPY_CHUNK} messages per copy`);
      const db = mailDb(work);
      const { workspaceId, mailboxId } = scope;
      let query = db
        .selectFrom('messages')
        .select(['id', 'uid', 'thread_id', 'read', 'size', 'attachments_json'])
        .where('workspace_id', '=', workspaceId)
        .where('mailbox_id', '=', mailboxId)
        .where('folder', '=', scope.folder)
        .where('id', 'in', sources.map((s) => s.id))
        .orderBy('uid');
      if (dialect.supportsRowLocks) query = query.forUpdate();
      const rows = await query.execute();
      if (rows.length === 0) return [];
      const now = clock.now();
      const ids = new Map(rows.map((r) => [r.id, newId('msg')]));
      const { renamed, lists } = await attachmentIds(db, workspaceId, rows);
      await countIntoThreads(db, workspaceId, rows, now);
      const unread = rows.filter((r) => r.read !== 1).length;
      await bumpFolder(db, workspaceId, mailboxId, folder, rows.length, unread, rows.reduce((n, r) => n + r.size, 0), rows.length);
      // The counter row is locked by the bump until commit: the UIDs and modseq read here are the copies' own.
      const counter = await db.selectFrom('folder_counts').select(['uidnext', 'modseq']).where('workspace_id', '=', workspaceId).where('mailbox_id', '=', mailboxId).where('folder', '=', folder).executeTakeFirstOrThrow();
      const first = Number(counter.uidnext) - rows.length;
      const uids = new Map(rows.map((r, i) => [r.id, sql.lit(first + i)]));
      await db
        .insertInto('messages')
        .columns(['id', ...MESSAGE_COPY_COLUMNS, 'folder', 'attachments_json', 'updated_at', 'uid', 'modseq'])
        .expression(
          db
            .selectFrom('messages')
            .select((eb) => [
              mapped(eb.ref('messages.id'), ids).as('id'),
              ...MESSAGE_COPY_COLUMNS,
              sql<string>`cast(${folder} as text)`.as('folder'),
              (lists.size > 0 ? mapped(eb.ref('messages.id'), lists, eb.ref('messages.attachments_json')) : sql`${eb.ref('messages.attachments_json')}`).as('attachments_json'),
              sql.lit(now).as('updated_at'),
              mapped(eb.ref('messages.id'), uids).as('uid'),
              sql.lit(Number(counter.modseq)).as('modseq'),
            ])
            .where('workspace_id', '=', workspaceId)
            .where('id', 'in', [...ids.keys()]),
        )
        .execute();
      await copyParts(db, workspaceId, ids, renamed);
      if (dialect.fullText === 'fts5') {
        const documents = new Map(sources.map((s) => [s.id, s.document]));
        for (const [original, copy] of ids) {
          const doc = documents.get(original);
          if (doc) await indexFts(db, workspaceId, copy, doc);
        }
      }
      return rows.map((r, i) => ({ sourceUid: Number(r.uid), id: ids.get(r.id)!, uid: first + i }));
    },

    /** The UID of a message of the workspace (an APPEND's answer), or null when it is gone. */
    async messageUid(work: Work, workspaceId: string, id: string): Promise<number | null> {
      const row = await mailDb(work).selectFrom('messages').select('uid').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();
      return row ? Number(row.uid) : null;
    },
  };
}
