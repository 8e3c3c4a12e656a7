import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { iso } from '../../lib/clock.js';
import { invalid, notFound } from '../../lib/errors.js';
import type { Download } from '../messages/message.service.js';
import { randomUUID } from 'node:crypto';
import addressparser from 'nodemailer/lib/addressparser/index.js';
import { parseMessage, type AddressView, type ParsedAttachment } from '../messages/mime.js';
import { newId } from '../../lib/ids.js';
import type { DraftAttachmentMeta, DraftRow, SendingMailStore } from '../mail/sending-mail.store.js';
import type { TenantContext } from '../tenancy/tenancy.types.js';
import { normalizeEmail } from '../tenancy/validation.js';
import { MAX_ATTACHMENT_BYTES, MAX_ATTACHMENTS, decodeAttachments, tooManyBytes, type AttachmentInput } from './attachments.js';
import { parseRecipients } from './recipients.js';
import { rawHeaderFields, replyHeaders } from './reply.js';
import type { DraftScope, MailStore } from '../mail/mail.store.js';
import { composeMessage } from './compose.js';
import type { Queued, SendInput, SendingService } from './sending.service.js';
import type { DraftAttachmentTable, DraftTable } from '../mail/draft.table.js';

/** A file of a draft, as the draft view lists it (the sent copy's attachments look the same). */
export interface DraftAttachmentView {
  attachment_id: string;
  filename: string;
  content_type: string;
  size: number;
  content_id: string | null;
  inline: boolean;
}

/** A draft as the API shows it (docs/api.md). */
export interface DraftView {
  draft_id: string;
  mailbox: string;
  to: string[];
  cc: string[];
  bcc: string[];
  subject: string;
  body: string;
  html: string | null;
  in_reply_to: string | null;
  attachments: DraftAttachmentView[];
  created_at: string;
  updated_at: string;
}

/**
 * The fields a draft is made of; on update, only those present change (null clears `html` and `in_reply_to`).
 * Recipients come in every form a send takes them (`parseRecipients`: one address, a comma-separated list, an array).
 */
export interface DraftInput {
  mailbox?: string | undefined;
  to?: string | string[] | undefined;
  cc?: string | string[] | undefined;
  bcc?: string | string[] | undefined;
  subject?: string | undefined;
  body?: string | undefined;
  html?: string | null | undefined;
  in_reply_to?: string | null | undefined;
  /** Base64 files, as a send takes them; on update they replace the draft's files (uploads included). */
  attachments?: AttachmentInput[] | undefined;
}

export interface DraftService extends DraftSources {
  /** Drafts of the workspace (or one mailbox), newest first. */
  list(tenant: TenantContext, query: { mailbox?: string | undefined; limit: number; offset: number }): Promise<{ drafts: DraftView[]; total: number; limit: number; offset: number }>;
  /** A new draft; only `mailbox` is required, the rest start empty. */
  create(tenant: TenantContext, input: DraftInput & { mailbox: string }): Promise<DraftView>;
  get(tenant: TenantContext, draftId: string): Promise<DraftView>;
  /** Change the fields given, nothing else. */
  update(tenant: TenantContext, draftId: string, input: DraftInput): Promise<DraftView>;
  remove(tenant: TenantContext, draftId: string): Promise<{ ok: true; draft_id: string }>;
  /**
   * Hand the draft to `sending.enqueue` and delete it, in one transaction; `send_at` schedules it (schedule.ts), `hold`
   * holds it for the undo window (SendInput.hold).
   */
  send(tenant: TenantContext, draftId: string, options?: { send_at?: string | undefined; hold?: boolean | undefined }): Promise<Queued>;
  /**
   * Undo send: a message still waiting to leave (held or scheduled) is cancelled, its sent copy deleted, and a new draft
   * made of it (From, To, Cc, Bcc, subject, both bodies, files, the message it answers), in one transaction.
   * 404 for a message this workspace does not have; 409 `message_not_scheduled` once it has left.
   */
  undoSend(tenant: TenantContext, messageId: string): Promise<DraftView>;
  /** Bytes the draft's files may still grow by (404 for no such draft): an upload's limit, known before it is read. */
  attachmentRoom(tenant: TenantContext, draftId: string): Promise<{ bytes: number; files: number }>;
  /** Add uploaded files (decoded bytes) to the draft; over 25 MiB in all is a 413. */
  addAttachments(tenant: TenantContext, draftId: string, files: AttachmentInput[]): Promise<DraftView>;
  removeAttachment(tenant: TenantContext, draftId: string, attachmentId: string): Promise<DraftView>;
  attachment(tenant: TenantContext, draftId: string, attachmentId: string): Promise<Download>;
}

/** IMAP flags and keywords of a draft a mail client saves (the messages' columns: \Seen is `read`). */
export interface DraftFlags {
  read: boolean;
  flagged: boolean;
  answered: boolean;
  deleted: boolean;
  labels: string[];
}

/** A draft as a mail client saves it: its MIME source and flags. */
export interface DraftSource {
  raw: Buffer;
  flags: DraftFlags;
  /** Its INTERNALDATE (an APPEND's date, a copied message's), ms; now when not given. */
  date?: number | undefined;
}

/** A draft made from a source: its id and UID in Drafts. */
export interface ImportedDraft {
  id: string;
  uid: number;
}

/** What IMAP's Drafts mailbox asks of drafts beyond the mail store's reads (modules/imap-access). */
export interface DraftSources {
  /**
   * New drafts of one mailbox from MIME sources, in one transaction, with `then` (a MOVE's removal of the
   * originals) in the same one: each source kept byte for byte, the draft's fields and files parsed from it.
   * Their ids and UIDs in Drafts, in order.
   */
  importSources(scope: DraftScope, sources: readonly DraftSource[], then?: (trx: Work) => Promise<void>): Promise<ImportedDraft[]>;
  /** Drafts of the mailbox without a source (made before sources were kept) get one, rendered from their fields. */
  renderMissing(scope: DraftScope): Promise<void>;
}

/** The draft store's operations a draft service uses. */
type DraftOps =
  | 'saveDraft'
  | 'findDraft'
  | 'listDrafts'
  | 'countDrafts'
  | 'updateDraft'
  | 'deleteDraft'
  | 'draftMailboxAddress'
  | 'takeDraft'
  | 'addDraftAttachments'
  | 'draftAttachmentsOf'
  | 'draftAttachmentContents'
  | 'findDraftAttachment'
  | 'removeDraftAttachments';

export interface DraftDeps {
  /** The pool: the service opens its transactions on it. */
  work: Work;
  mail: Pick<SendingMailStore, DraftOps> &
    Pick<MailStore, 'findMailbox' | 'findMessage' | 'findContent' | 'findByMessageId' | 'setDraftSource' | 'draftsWithoutSource' | 'attachmentContents' | 'deleteMessage'>;
  clock: Clock;
  sending: Pick<SendingService, 'check' | 'enqueue' | 'cancelWith'>;
}

const draftNotFound = (id: string) => notFound('draft_not_found', `no draft ${id}`);
const attachmentNotFound = (draftId: string, id: string) => notFound('attachment_not_found', `no attachment ${id} on draft ${draftId}`);
const parseList = (text: string) => JSON.parse(text) as string[];

/** Addresses as a draft keeps them: lower-case, valid, each once (a client's others stay in the source only). */
function addressList(list: ReadonlyArray<Pick<AddressView, 'address'>>): string[] {
  return [...new Set(list.map((a) => normalizeEmail(a.address ?? '')).filter((a): a is string => a !== null))];
}

/** The addresses of a source's Bcc fields (the parser keeps no Bcc: a sent message has none). */
function bccOf(raw: Buffer): string[] {
  const values = rawHeaderFields(raw).filter((f) => f.name.toLowerCase() === 'bcc').map((f) => f.value);
  const flat = (list: ReturnType<typeof addressparser>): Array<{ address: string }> => list.flatMap((a) => ('group' in a && a.group ? flat(a.group) : [{ address: a.address ?? '' }]));
  return addressList(values.flatMap((v) => flat(addressparser(v))));
}

/** The domain of a mailbox's address, for the Message-ID of a rendered source. */
const domainOf = (address: string) => address.slice(address.lastIndexOf('@') + 1);

function toAttachmentView(a: DraftAttachmentMeta): DraftAttachmentView {
  return { attachment_id: a.id, filename: a.filename, content_type: a.content_type, size: a.size, content_id: a.content_id, inline: a.content_id !== null };
}

function toView(row: DraftRow, attachments: readonly DraftAttachmentMeta[]): DraftView {
  return {
    draft_id: row.id,
    mailbox: row.mailbox_address,
    to: parseList(row.to_json),
    cc: parseList(row.cc_json),
    bcc: parseList(row.bcc_json),
    subject: row.subject,
    body: row.body,
    html: row.html,
    in_reply_to: row.in_reply_to,
    attachments: attachments.filter((a) => a.draft_id === row.id).map(toAttachmentView),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** Drafts of the session surface: stored per workspace, sent through the one outbound entry. */
export function createDraftService({ work, mail, clock, sending }: DraftDeps): DraftService {
  async function mailboxOf(conn: Work, tenant: TenantContext, address: string) {
    const normalized = normalizeEmail(address);
    const mailbox = normalized ? await mail.findMailbox(conn, tenant.workspaceId, normalized) : undefined;
    if (!mailbox) throw notFound('mailbox_not_found', `no mailbox ${address} in this workspace`);
    return mailbox;
  }

  async function find(tenant: TenantContext, draftId: string): Promise<DraftRow> {
    const row = await mail.findDraft(work, tenant.workspaceId, draftId);
    if (!row) throw draftNotFound(draftId);
    return row;
  }

  async function viewOf(tenant: TenantContext, draftId: string): Promise<DraftView> {
    const row = await find(tenant, draftId);
    return toView(row, await mail.draftAttachmentsOf(work, tenant.workspaceId, [row.id]));
  }

  function attachmentRows(tenant: Pick<TenantContext, 'workspaceId'>, draftId: string, files: readonly ParsedAttachment[]): DraftAttachmentTable[] {
    const now = clock.now();
    return files.map((f) => ({
      id: newId('att'),
      workspace_id: tenant.workspaceId,
      draft_id: draftId,
      filename: f.filename,
      content_type: f.contentType,
      size: f.content.length,
      content_id: f.contentId,
      content: f.content,
      created_at: now,
    }));
  }

  /** The message a reply answers, in this workspace, or 404. */
  async function original(conn: Work, tenant: TenantContext, messageId: string) {
    const message = await mail.findMessage(conn, tenant.workspaceId, messageId);
    if (!message) throw notFound('message_not_found', `in_reply_to: no message ${messageId} in this workspace`);
    return message;
  }

  /** The columns a draft input sets (normalised: addresses lower-case, each list de-duplicated). */
  async function columns(tenant: TenantContext, input: DraftInput): Promise<Partial<DraftTable>> {
    const values: Partial<DraftTable> = {};
    if (input.mailbox !== undefined) values.mailbox_id = (await mailboxOf(work, tenant, input.mailbox)).id;
    for (const field of ['to', 'cc', 'bcc'] as const) {
      const list = input[field];
      if (list !== undefined) values[`${field}_json`] = JSON.stringify(parseRecipients(list, field, { required: false }));
    }
    if (input.subject !== undefined) values.subject = input.subject;
    if (input.body !== undefined) values.body = input.body;
    if (input.html !== undefined) values.html = input.html;
    if (input.in_reply_to !== undefined) {
      values.in_reply_to = input.in_reply_to === null ? null : (await original(work, tenant, input.in_reply_to)).id;
    }
    return values;
  }

  /** What `sending.enqueue` gets for a draft: its From, recipients, content and, for a reply, the thread headers. */
  async function sendInput(conn: Work, tenant: TenantContext, draft: Omit<DraftTable, 'raw'>, from: string, files: DraftAttachmentTable[] = []): Promise<SendInput> {
    const input: SendInput = {
      attachments: files.map((f) => ({ filename: f.filename, content_type: f.content_type, content: f.content, content_id: f.content_id })),
      from_mailbox: from,
      to: parseList(draft.to_json),
      cc: parseList(draft.cc_json),
      bcc: parseList(draft.bcc_json),
      subject: draft.subject,
      body: draft.body,
      html: draft.html ?? undefined,
    };
    if (draft.in_reply_to !== null) {
      const headers = await threadHeaders(conn, tenant.workspaceId, await original(conn, tenant, draft.in_reply_to));
      input.inReplyTo = headers.inReplyTo;
      input.references = headers.references;
    }
    return input;
  }

  /** The In-Reply-To and References of a reply to `parent`. */
  async function threadHeaders(conn: Work, workspaceId: string, parent: { id: string; internet_message_id: string | null }) {
    const content = await mail.findContent(conn, workspaceId, parent.id, false);
    let fields = JSON.parse(content?.headers_json ?? '[]') as Array<{ name: string; value: string }>;
    // Our own outbound copies keep no parsed headers: read them from the stored source.
    if (fields.length === 0) {
      const raw = (await mail.findContent(conn, workspaceId, parent.id, true))?.raw;
      fields = raw ? rawHeaderFields(raw) : [];
    }
    return replyHeaders(fields, parent.internet_message_id);
  }

  /**
   * Render a draft's MIME source from its fields and files with the send path's composer and keep it (a new UID in
   * IMAP's Drafts), in the caller's transaction: once per write, so IMAP reads stored bytes. Bcc is kept in it (a
   * draft's, unlike a sent message's), and a reply whose original is gone is rendered without thread headers.
   */
  async function render(conn: Work, workspaceId: string, draftId: string): Promise<void> {
    const row = await mail.findDraft(conn, workspaceId, draftId);
    if (!row) return;
    const files = await mail.draftAttachmentContents(conn, workspaceId, draftId);
    const parent = row.in_reply_to === null ? undefined : await mail.findMessage(conn, workspaceId, row.in_reply_to);
    const thread = parent ? await threadHeaders(conn, workspaceId, parent) : undefined;
    const raw = await composeMessage({
      messageId: `${randomUUID()}@${domainOf(row.mailbox_address)}`,
      from: { name: '', address: row.mailbox_address },
      to: parseList(row.to_json),
      cc: parseList(row.cc_json),
      bcc: parseList(row.bcc_json),
      subject: row.subject,
      text: row.body,
      html: row.html ?? undefined,
      inReplyTo: thread?.inReplyTo,
      references: thread?.references,
      date: new Date(row.updated_at),
      attachments: files.map((f) => ({ filename: f.filename, contentType: f.content_type, inline: f.content_id !== null, contentId: f.content_id, content: f.content })),
    });
    await mail.setDraftSource(conn, workspaceId, draftId, raw);
  }

  /** A new draft with its files and its rendered source, in the caller's transaction (the fields not given start empty). */
  async function insert(trx: Work, tenant: TenantContext, values: Partial<DraftTable> & { id: string; mailbox_id: string }, files: readonly ParsedAttachment[]): Promise<void> {
    const now = clock.now();
    await mail.saveDraft(trx, {
      id: values.id,
      workspace_id: tenant.workspaceId,
      mailbox_id: values.mailbox_id,
      to_json: values.to_json ?? '[]',
      cc_json: values.cc_json ?? '[]',
      bcc_json: values.bcc_json ?? '[]',
      subject: values.subject ?? '',
      body: values.body ?? '',
      html: values.html ?? null,
      in_reply_to: values.in_reply_to ?? null,
      created_at: now,
      updated_at: now,
    });
    await mail.addDraftAttachments(trx, attachmentRows(tenant, values.id, files));
    await render(trx, tenant.workspaceId, values.id);
  }

  /** A draft's row and files from a MIME source a client saved (the fields it has; the source keeps the rest). */
  async function fromSource(scope: DraftScope, raw: Buffer, date: number | undefined) {
    const parsed = await parseMessage(raw);
    const parent = parsed.inReplyTo === null ? undefined : (await mail.findByMessageId(work, scope, parsed.inReplyTo))[0];
    const now = clock.now();
    const row = {
      id: newId('drf'),
      workspace_id: scope.workspaceId,
      mailbox_id: scope.mailboxId,
      to_json: JSON.stringify(addressList(parsed.to)),
      cc_json: JSON.stringify(addressList(parsed.cc)),
      bcc_json: JSON.stringify(bccOf(raw)),
      subject: parsed.subject,
      body: parsed.text ?? '',
      html: parsed.html,
      in_reply_to: parent?.id ?? null,
      created_at: now,
      // IMAP shows `updated_at` as the draft's INTERNALDATE: the one the client gave is kept, as Dovecot keeps it.
      updated_at: date ?? now,
    };
    return { row, files: attachmentRows({ workspaceId: scope.workspaceId }, row.id, parsed.attachments) };
  }

  return {
    async list(tenant, query) {
      const mailboxId = query.mailbox === undefined ? undefined : (await mailboxOf(work, tenant, query.mailbox)).id;
      const [rows, total] = await Promise.all([
        mail.listDrafts(work, tenant.workspaceId, mailboxId, query.limit, query.offset),
        mail.countDrafts(work, tenant.workspaceId, mailboxId),
      ]);
      const attachments = await mail.draftAttachmentsOf(work, tenant.workspaceId, rows.map((r) => r.id));
      return { drafts: rows.map((row) => toView(row, attachments)), total, limit: query.limit, offset: query.offset };
    },

    async create(tenant, input) {
      const values = await columns(tenant, input);
      const files = decodeAttachments(input.attachments);
      const id = newId('drf');
      await work.transaction().execute((trx) => insert(trx, tenant, { ...values, id, mailbox_id: values.mailbox_id! }, files));
      return viewOf(tenant, id);
    },

    async undoSend(tenant, messageId) {
      const id = newId('drf');
      await sending.cancelWith(tenant, messageId, async (trx, row, state) => {
        const content = await mail.findContent(trx, tenant.workspaceId, messageId, false);
        const files = await mail.attachmentContents(trx, tenant.workspaceId, messageId);
        const addresses = (json: string) => addressList(JSON.parse(json) as AddressView[]);
        const [to, cc] = [addresses(row.to_json), addresses(row.cc_json)];
        // Bcc is in no header of the copy: it is the envelope's recipients that are neither To nor Cc.
        const shown = new Set([...to, ...cc]);
        const envelope = JSON.parse(row.envelope_json) as { rcpt_to?: string[] };
        const bcc = (envelope.rcpt_to ?? []).filter((a) => !shown.has(a));
        const values = {
          id,
          mailbox_id: row.mailbox_id,
          to_json: JSON.stringify(to),
          cc_json: JSON.stringify(cc),
          bcc_json: JSON.stringify(bcc),
          subject: row.subject,
          body: content?.text_body ?? '',
          html: content?.html_body ?? null,
          in_reply_to: state.in_reply_to,
        };
        const parts = files.map((f): ParsedAttachment => ({ filename: f.filename, contentType: f.content_type, content: f.content, contentId: f.content_id, inline: f.content_id !== null }));
        // The copy goes: the message will never leave, and what it was is the draft now (a cancel keeps its copy).
        await mail.deleteMessage(trx, tenant.workspaceId, row);
        await insert(trx, tenant, values, parts);
      });
      return viewOf(tenant, id);
    },

    get: viewOf,

    async update(tenant, draftId, input) {
      await find(tenant, draftId);
      const values = await columns(tenant, input);
      const files = input.attachments === undefined ? undefined : decodeAttachments(input.attachments);
      if (Object.keys(values).length > 0 || files !== undefined) {
        await work.transaction().execute(async (trx) => {
          const changed = await mail.updateDraft(trx, tenant.workspaceId, draftId, { ...values, updated_at: clock.now() });
          if (changed === 0) throw draftNotFound(draftId);
          if (files !== undefined) {
            await mail.removeDraftAttachments(trx, tenant.workspaceId, draftId);
            await mail.addDraftAttachments(trx, attachmentRows(tenant, draftId, files));
          }
          await render(trx, tenant.workspaceId, draftId);
        });
      }
      return viewOf(tenant, draftId);
    },

    async remove(tenant, draftId) {
      // A transaction: the draft leaves IMAP's Drafts (its counter, its expunged UID) with the row.
      if ((await work.transaction().execute((trx) => mail.deleteDraft(trx, tenant.workspaceId, draftId))) === 0) throw draftNotFound(draftId);
      return { ok: true, draft_id: draftId };
    },

    async send(tenant, draftId, options = {}) {
      const draft = await find(tenant, draftId);
      // Refusals (bad recipients, lists) are found, and list refusals recorded, before the transaction:
      // inside it a refusal could only be thrown (see SendingService.check).
      await sending.check(tenant, await sendInput(work, tenant, draft, draft.mailbox_address));
      return work.transaction().execute(async (trx) => {
        // Read before the claim, which takes them with the draft (foreign key, on delete cascade).
        const files = await mail.draftAttachmentContents(trx, tenant.workspaceId, draftId);
        // Taking the row is the claim: a concurrent send of the same draft finds nothing and sends nothing.
        const taken = await mail.takeDraft(trx, tenant.workspaceId, draftId);
        if (!taken) throw draftNotFound(draftId);
        // What was taken is what goes out, even if a PATCH landed after the check; enqueue checks it again.
        const from = taken.mailbox_id === draft.mailbox_id ? draft.mailbox_address : await mail.draftMailboxAddress(trx, tenant.workspaceId, taken.mailbox_id);
        if (from === undefined) throw draftNotFound(draftId);
        const input = await sendInput(trx, tenant, taken, from, files);
        return sending.enqueue(tenant, { ...input, send_at: options.send_at, hold: options.hold, inReplyToMessage: taken.in_reply_to ?? undefined }, trx);
      });
    },

    async attachmentRoom(tenant, draftId) {
      await find(tenant, draftId);
      const files = await mail.draftAttachmentsOf(work, tenant.workspaceId, [draftId]);
      const bytes = files.reduce((sum, f) => sum + f.size, 0);
      return { bytes: Math.max(0, MAX_ATTACHMENT_BYTES - bytes), files: Math.max(0, MAX_ATTACHMENTS - files.length) };
    },

    async addAttachments(tenant, draftId, input) {
      const files = decodeAttachments(input);
      await work.transaction().execute(async (trx) => {
        // Touching the draft first takes its row lock (PostgreSQL): concurrent uploads to one draft are counted one
        // after the other, so together they cannot pass the limit either.
        if ((await mail.updateDraft(trx, tenant.workspaceId, draftId, { updated_at: clock.now() })) === 0) throw draftNotFound(draftId);
        const existing = await mail.draftAttachmentsOf(trx, tenant.workspaceId, [draftId]);
        const total = existing.reduce((sum, a) => sum + a.size, 0) + files.reduce((sum, f) => sum + f.content.length, 0);
        if (total > MAX_ATTACHMENT_BYTES) throw tooManyBytes(total);
        if (existing.length + files.length > MAX_ATTACHMENTS) throw invalid('invalid_request', `a draft has at most ${MAX_ATTACHMENTS} attachments`);
        await mail.addDraftAttachments(trx, attachmentRows(tenant, draftId, files));
        await render(trx, tenant.workspaceId, draftId);
      });
      return viewOf(tenant, draftId);
    },

    async removeAttachment(tenant, draftId, attachmentId) {
      await find(tenant, draftId);
      await work.transaction().execute(async (trx) => {
        if ((await mail.removeDraftAttachments(trx, tenant.workspaceId, draftId, attachmentId)) === 0) throw attachmentNotFound(draftId, attachmentId);
        await mail.updateDraft(trx, tenant.workspaceId, draftId, { updated_at: clock.now() });
        await render(trx, tenant.workspaceId, draftId);
      });
      return viewOf(tenant, draftId);
    },

    async importSources(scope, sources, then) {
      // Parsed before the transaction, as an import is.
      const drafts: Array<Awaited<ReturnType<typeof fromSource>> & { source: DraftSource }> = [];
      for (const source of sources) drafts.push({ ...(await fromSource(scope, source.raw, source.date)), source });
      return work.transaction().execute(async (trx) => {
        const made: ImportedDraft[] = [];
        for (const { row, files, source } of drafts) {
          await mail.saveDraft(trx, row);
          await mail.addDraftAttachments(trx, files);
          made.push({ id: row.id, uid: (await mail.setDraftSource(trx, scope.workspaceId, row.id, source.raw, source.flags))! });
        }
        if (then) await then(trx);
        return made;
      });
    },

    async renderMissing(scope) {
      for (const id of await mail.draftsWithoutSource(work, scope)) await work.transaction().execute((trx) => render(trx, scope.workspaceId, id));
    },

    async attachment(tenant, draftId, attachmentId) {
      const found = await mail.findDraftAttachment(work, tenant.workspaceId, draftId, attachmentId);
      if (!found) throw attachmentNotFound(draftId, attachmentId);
      return { filename: found.filename, contentType: found.content_type, content: found.content };
    },
  };
}
