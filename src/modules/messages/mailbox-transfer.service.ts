/**
 * A mailbox's mail out to mbox files and in from mbox or Maildir: the operator's `export-mailbox` and
 * `import-mailbox`. Export writes one mboxrd file per folder, the stored bytes exactly; import stores each message
 * through the mail store's `storeCopy`, the write path of inbound mail (threads, search index, counters), after a
 * duplicate check, in short transactions of a few messages. Both stream: neither holds more than a page of messages.
 */
import { createReadStream, createWriteStream, existsSync, mkdirSync, readdirSync, statSync, type WriteStream } from 'node:fs';
import { opendir, readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { once } from 'node:events';
import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { conflict, notFound } from '../../lib/errors.js';
import { countMaildir, isMaildir, walkMaildir } from '../../lib/maildir.js';
import { fromLine, headerBlock, headerValue, mboxrdBody, NotMboxError, readMbox, type MboxFormat } from '../../lib/mbox.js';
import type { MailStore, TransferCursor, TransferRow } from '../mail/mail.store.js';
import { notChecked } from './authentication.js';
import { LABEL_PATTERN, type Folder } from './message.types.js';
import { messageIds, parseMessage, type ParsedMessage } from './mime.js';
import { sizeChunks } from '../../lib/size-chunks.js';

export type TransferStore = Pick<MailStore, 'transferMailbox' | 'transferFolders' | 'transferPage' | 'transferRaws' | 'importDuplicate' | 'storeCopy'>;

/** A mailbox named by the operator: its address, and the workspace it must be in (null: wherever it is). */
export interface MailboxRef {
  address: string;
  workspaceId: string | null;
}

/** How far an export or import is: messages and bytes done, and the whole when it is known. */
export interface TransferProgress {
  messages: number;
  bytes: number;
  totalMessages: number | null;
  totalBytes: number | null;
}

export interface ExportSummary {
  address: string;
  workspace_id: string;
  directory: string;
  folders: Array<{ folder: string; file: string; messages: number; bytes: number }>;
  messages: number;
  bytes: number;
}

export interface ImportSummary {
  address: string;
  workspace_id: string;
  source: 'mbox' | 'mbox directory' | 'maildir';
  imported: number;
  duplicates: number;
  /** Messages not stored: larger than the SMTP size limit, or empty. */
  refused: number;
  /** Messages with a flag Mailroom does not keep (flagged, answered, draft): imported without it. */
  flags_ignored: number;
  /** Messages imported per folder. */
  folders: Record<string, number>;
}

export interface ImportOptions {
  /** mboxrd (default) undoes `>From ` quoting; mboxo keeps such lines as they are. */
  format?: MboxFormat;
  /** The folder of a single mbox file (else its file name says, else the inbox). */
  folder?: Folder;
  onProgress?: (progress: TransferProgress) => void;
  onWarning?: (text: string) => void;
}

export interface MailboxTransferService {
  exportMailbox(ref: MailboxRef, directory: string, onProgress?: (progress: TransferProgress) => void): Promise<ExportSummary>;
  importMailbox(ref: MailboxRef, path: string, options?: ImportOptions): Promise<ImportSummary>;
}

export interface MailboxTransferDeps {
  work: Work;
  store: TransferStore;
  clock: Clock;
  /** The largest message stored (MAILROOM_SMTP_MAX_SIZE): larger ones in a source are refused, as SMTP would. */
  maxMessageBytes: number;
}

/** Messages an export reads a page of at a time (their sizes only). */
const EXPORT_PAGE = 200;
/** Raw bytes an export or import holds at once (a single larger message is held alone). */
const BATCH_BYTES = 8 * 1024 * 1024;
/** Messages an import stores in one transaction: short, so SMTP ingest never waits long behind it. */
const IMPORT_BATCH = 25;

/** Where a source's folder goes: a Mailroom folder, and for folders Mailroom has no such name for, a label. */
export interface Place {
  folder: Folder;
  labels: string[];
}

const FOLDER_NAMES: Readonly<Record<string, Folder>> = {
  inbox: 'inbox',
  archive: 'archive',
  archives: 'archive',
  'all mail': 'archive',
  sent: 'sent',
  'sent items': 'sent',
  'sent messages': 'sent',
  'sent mail': 'sent',
  spam: 'spam',
  junk: 'spam',
  'junk e-mail': 'spam',
  'junk email': 'spam',
  bulk: 'spam',
  trash: 'trash',
  deleted: 'trash',
  'deleted items': 'trash',
  'deleted messages': 'trash',
  bin: 'trash',
};

/**
 * The place of a source folder (a Maildir++ name such as `Sent` or `INBOX.Archive`, or an mbox file's name):
 * the usual names of the five folders map to them; any other folder (Drafts, Lists.work, …) goes to the archive
 * with a label made of its name, so nothing is lost and it can be found again.
 */
export function placeOf(name: string | null): Place {
  if (name === null) return { folder: 'inbox', labels: [] };
  const plain = name.replace(/^\./, '').replace(/\.mbox$/i, '').replace(/^inbox[./]/i, '').trim().toLowerCase();
  const folder = FOLDER_NAMES[plain];
  if (folder) return { folder, labels: [] };
  const parts = plain.split(/[^a-z0-9_.:]+/).filter((part) => part !== '');
  const label = parts.join('-').slice(0, 64);
  return { folder: 'archive', labels: LABEL_PATTERN.test(label) ? [label] : [] };
}

/** One message of a source, before it is parsed. */
interface SourceMessage {
  /** Null: larger than the limit (not read). */
  raw: Buffer | null;
  size: number;
  place: Place;
  /** From the source's flags (Maildir `S`, the export's `flags=S`) or headers (`Status: R`). */
  read: boolean;
  /** Maildir `T`, or `X-Status: D`: deleted in the source, so it goes to the trash. */
  trashed: boolean;
  flagsIgnored: boolean;
  /** When it arrived, as the source says (the `From ` line, the file's mtime); null: unknown. */
  receivedAt: number | null;
  sender: string;
  /** Progress of the source's bytes after this message (mbox), or null. */
  offset: number | null;
}

/** Read state and flags from an mbox message's `Status` and `X-Status` headers (as mutt, Thunderbird and Python write them). */
function mboxFlags(raw: Buffer, fromFlags: string): { read: boolean; trashed: boolean; flagsIgnored: boolean } {
  const block = headerBlock(raw);
  const status = headerValue(block, 'status') ?? '';
  const xStatus = headerValue(block, 'x-status') ?? '';
  return {
    read: fromFlags.includes('S') || status.includes('R'),
    trashed: fromFlags.includes('T') || xStatus.includes('D'),
    flagsIgnored: /[AFT]/.test(xStatus),
  };
}

async function* mboxMessages(file: string, place: Place, format: MboxFormat, maxBytes: number, base: number): AsyncGenerator<SourceMessage> {
  for await (const m of readMbox(createReadStream(file), { format, maxBytes })) {
    const flags = m.raw ? mboxFlags(m.raw, m.from.flags) : { read: m.from.flags.includes('S'), trashed: false, flagsIgnored: false };
    const sender = m.from.sender === 'MAILER-DAEMON' ? '' : m.from.sender;
    yield { raw: m.raw, size: m.size, place, ...flags, receivedAt: m.from.receivedAt, sender, offset: base + m.offset };
  }
}

async function* maildirMessages(root: string, maxBytes: number): AsyncGenerator<SourceMessage> {
  for await (const entry of walkMaildir(root)) {
    const raw = entry.size > maxBytes ? null : await readFile(entry.path);
    const returnPath = raw ? (headerValue(headerBlock(raw), 'return-path') ?? '') : '';
    yield {
      raw,
      size: entry.size,
      place: placeOf(entry.folder),
      read: entry.flags.includes('S'),
      trashed: entry.flags.includes('T'),
      flagsIgnored: /[FRD]/.test(entry.flags),
      receivedAt: Math.floor(entry.mtimeMs),
      sender: returnPath.replace(/^<|>$/g, ''),
      offset: null,
    };
  }
}

/** A source to import: what it is, how big (for progress), and its messages. */
interface Source {
  kind: ImportSummary['source'];
  totalBytes: number | null;
  totalMessages: number | null;
  messages: AsyncGenerator<SourceMessage>;
}

async function* mboxDirectory(files: Array<{ path: string; size: number }>, format: MboxFormat, maxBytes: number, warn: (text: string) => void): AsyncGenerator<SourceMessage> {
  let base = 0;
  for (const file of files) {
    try {
      yield* mboxMessages(file.path, placeOf(basename(file.path)), format, maxBytes, base);
    } catch (err) {
      if (!(err instanceof NotMboxError)) throw err;
      warn(`${file.path}: skipped, ${err.message}`);
    }
    base += file.size;
  }
}

async function openSource(path: string, options: ImportOptions, maxBytes: number, warn: (text: string) => void): Promise<Source> {
  const format = options.format ?? 'mboxrd';
  if (!existsSync(path)) throw notFound('import_source_not_found', `nothing at ${path}`);
  const info = statSync(path);
  if (info.isFile()) {
    const place = options.folder ? { folder: options.folder, labels: [] } : FOLDER_NAMES[basename(path).replace(/\.mbox$/i, '').toLowerCase()] ? placeOf(basename(path)) : placeOf(null);
    return { kind: 'mbox', totalBytes: info.size, totalMessages: null, messages: mboxMessages(path, place, format, maxBytes, 0) };
  }
  if (isMaildir(path)) return { kind: 'maildir', totalBytes: null, totalMessages: await countMaildir(path), messages: maildirMessages(path, maxBytes) };
  const files: Array<{ path: string; size: number }> = [];
  for await (const entry of await opendir(path)) {
    if (entry.isFile() && !entry.name.startsWith('.')) files.push({ path: join(path, entry.name), size: statSync(join(path, entry.name)).size });
  }
  files.sort((a, b) => a.path.localeCompare(b.path));
  return { kind: 'mbox directory', totalBytes: files.reduce((n, f) => n + f.size, 0), totalMessages: null, messages: mboxDirectory(files, format, maxBytes, warn) };
}

/** Write to a file stream, waiting when its buffer is full (so an export never holds more than a page). */
async function write(stream: WriteStream, data: string | Buffer): Promise<void> {
  if (!stream.write(data)) await once(stream, 'drain');
}

async function closeStream(stream: WriteStream): Promise<void> {
  // A stream that failed is closed already (and will not say so again).
  if (stream.destroyed) return;
  const closed = once(stream, 'close');
  stream.end();
  await closed;
}

/** The `From ` line's sender: the envelope sender of received mail, the mailbox itself for mail it sent. */
function senderOf(row: TransferRow, address: string): string {
  if (row.direction === 'outbound') return address;
  const envelope = JSON.parse(row.envelope_json) as { mail_from?: unknown };
  return typeof envelope.mail_from === 'string' ? envelope.mail_from : '';
}

/** A message ready to store: parsed outside any transaction. */
interface Prepared {
  source: SourceMessage;
  raw: Buffer;
  parsed: ParsedMessage;
  place: Place;
  receivedAt: number;
}

export function createMailboxTransferService({ work, store, clock, maxMessageBytes }: MailboxTransferDeps): MailboxTransferService {
  async function mailboxOf(ref: MailboxRef) {
    const address = ref.address.trim().toLowerCase();
    const mailbox = await store.transferMailbox(work, address, ref.workspaceId);
    if (!mailbox) throw notFound('mailbox_not_found', ref.workspaceId ? `no mailbox ${address} in workspace ${ref.workspaceId}` : `no mailbox ${address}`);
    return mailbox;
  }

  /** Write one folder's messages to its mbox file, oldest first; returns its counts. */
  async function exportFolder(scope: { workspaceId: string; mailboxId: string; folder: string }, file: string, address: string, tick: (bytes: number) => void) {
    const stream = createWriteStream(file, { flags: 'wx', mode: 0o600 });
    await once(stream, 'open');
    let messages = 0;
    let bytes = 0;
    try {
      let cursor: TransferCursor | null = null;
      for (;;) {
        const page = await store.transferPage(work, scope, cursor, EXPORT_PAGE);
        if (page.length === 0) break;
        for (const group of sizeChunks(page, BATCH_BYTES)) {
          const raws = await store.transferRaws(work, scope.workspaceId, group.map((r) => r.id));
          for (const row of group) {
            const raw = raws.get(row.id);
            // Deleted since the page was read: not part of the export.
            if (!raw) continue;
            await write(stream, fromLine(senderOf(row, address), row.created_at, row.read === 1 ? 'S' : ''));
            await write(stream, mboxrdBody(Buffer.from(raw)));
            messages++;
            bytes += raw.length;
            tick(raw.length);
          }
        }
        const last = page[page.length - 1]!;
        cursor = { createdAt: last.created_at, id: last.id };
      }
    } finally {
      await closeStream(stream);
    }
    return { messages, bytes };
  }

  async function prepare(source: SourceMessage, raw: Buffer): Promise<Prepared> {
    const parsed = await parseMessage(raw);
    const now = clock.now();
    // The source's own arrival time as it is (the same on every run, which finding a message without a Message-ID
    // again depends on), else the Date header but never in the future (a sender's clock is no one's), else now.
    const receivedAt = source.receivedAt ?? Math.min(parsed.date ?? now, now);
    const place: Place = source.trashed ? { ...source.place, folder: 'trash' } : source.place;
    return { source, raw, parsed, place, receivedAt };
  }

  /**
   * A look for the message before parsing it, by the Message-ID its header gives and the source's time: a re-run
   * of an import then costs a read per message instead of a parse. The check inside the transaction stays the rule.
   */
  async function storedAlready(mailbox: { id: string; workspace_id: string }, source: SourceMessage, raw: Buffer): Promise<boolean> {
    const messageId = messageIds(headerValue(headerBlock(raw), 'message-id'))[0] ?? null;
    if (messageId === null && source.receivedAt === null) return false;
    return store.importDuplicate(work, { workspaceId: mailbox.workspace_id, mailboxId: mailbox.id, messageId, receivedAt: source.receivedAt ?? 0, raw });
  }

  /** Store a batch in one transaction, each after its duplicate check; returns how many were duplicates. */
  async function storeBatch(mailbox: { id: string; workspace_id: string; address: string }, batch: readonly Prepared[], summary: ImportSummary): Promise<void> {
    await work.transaction().execute(async (trx) => {
      for (const item of batch) {
        const probe = { workspaceId: mailbox.workspace_id, mailboxId: mailbox.id, messageId: item.parsed.messageId, receivedAt: item.receivedAt, raw: item.raw };
        if (await store.importDuplicate(trx, probe)) {
          summary.duplicates++;
          continue;
        }
        await store.storeCopy(trx, {
          workspaceId: mailbox.workspace_id,
          mailboxId: mailbox.id,
          mailboxAddress: mailbox.address,
          direction: item.place.folder === 'sent' ? 'outbound' : 'inbound',
          folder: item.place.folder,
          read: item.source.read,
          labels: item.place.labels,
          raw: item.raw,
          parsed: item.parsed,
          auth: notChecked,
          envelope: { mail_from: item.source.sender, rcpt_to: mailbox.address, imported: true },
          receivedAt: item.receivedAt,
        });
        summary.imported++;
        summary.folders[item.place.folder] = (summary.folders[item.place.folder] ?? 0) + 1;
        if (item.source.flagsIgnored) summary.flags_ignored++;
      }
    });
  }

  return {
    async exportMailbox(ref, directory, onProgress) {
      const mailbox = await mailboxOf(ref);
      if (existsSync(directory) && (!statSync(directory).isDirectory() || readdirSync(directory).length > 0)) {
        throw conflict('export_target_exists', `${directory} exists and is not an empty directory: name a new one`);
      }
      mkdirSync(directory, { recursive: true, mode: 0o700 });
      const summary: ExportSummary = { address: mailbox.address, workspace_id: mailbox.workspace_id, directory, folders: [], messages: 0, bytes: 0 };
      const tick = (bytes: number) => {
        summary.messages++;
        summary.bytes += bytes;
        onProgress?.({ messages: summary.messages, bytes: summary.bytes, totalMessages: null, totalBytes: null });
      };
      for (const folder of await store.transferFolders(work, mailbox.workspace_id, mailbox.id)) {
        const file = join(directory, folder);
        const counts = await exportFolder({ workspaceId: mailbox.workspace_id, mailboxId: mailbox.id, folder }, file, mailbox.address, tick);
        summary.folders.push({ folder, file, ...counts });
      }
      return summary;
    },

    async importMailbox(ref, path, options = {}) {
      const mailbox = await mailboxOf(ref);
      const warn = options.onWarning ?? (() => undefined);
      const source = await openSource(path, options, maxMessageBytes, warn);
      const summary: ImportSummary = { address: mailbox.address, workspace_id: mailbox.workspace_id, source: source.kind, imported: 0, duplicates: 0, refused: 0, flags_ignored: 0, folders: {} };
      const progress: TransferProgress = { messages: 0, bytes: 0, totalMessages: source.totalMessages, totalBytes: source.totalBytes };
      let batch: Prepared[] = [];
      let batchBytes = 0;
      const flush = async () => {
        if (batch.length > 0) await storeBatch(mailbox, batch, summary);
        batch = [];
        batchBytes = 0;
      };
      for await (const message of source.messages) {
        progress.messages++;
        progress.bytes = message.offset ?? progress.bytes + message.size;
        if (message.raw === null || message.raw.length > maxMessageBytes || message.raw.length === 0) {
          summary.refused++;
          warn(message.raw?.length === 0 ? 'an empty message: refused' : `a message of ${message.size} bytes is over the size limit (${maxMessageBytes} bytes): refused`);
        } else if (await storedAlready(mailbox, message, message.raw)) {
          summary.duplicates++;
        } else {
          batch.push(await prepare(message, message.raw));
          batchBytes += message.raw.length;
          if (batch.length >= IMPORT_BATCH || batchBytes >= BATCH_BYTES) await flush();
        }
        options.onProgress?.(progress);
      }
      await flush();
      return summary;
    },
  };
}
