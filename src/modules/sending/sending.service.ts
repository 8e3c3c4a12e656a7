import type { GroupCommit } from '../../db/group-commit.js';
import { asWork, type Work } from '../../db/tables.js';
import { iso, type Clock } from '../../lib/clock.js';
import { invalid, isDomainError, notFound, DomainError } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import type { Queue } from '../../jobs/queue.js';
import { notChecked } from '../messages/authentication.js';
import { MAX_SUBJECT_LENGTH, parseMessage, snippetOf, type ParsedMessage } from '../messages/mime.js';
import { searchEntryOf } from '../../lib/mail-text.js';
import type { SentMessageView } from '../messages/message.types.js';
import { toMessageListView, toSentMessageView } from '../messages/message.views.js';
import type { TenantContext } from '../tenancy/tenancy.types.js';
import { normalizeEmail } from '../tenancy/validation.js';
import type { SendingMailStore } from '../mail/sending-mail.store.js';
import { suppressedError } from '../suppressions/suppression.service.js';
import { decodeAttachments, type AttachmentInput } from './attachments.js';
import { composeMessage } from './compose.js';
import type { Composer } from './compose-pool.js';
import { MAX_RECIPIENTS, sendRecipients } from './recipients.js';
import { scheduledTime } from './schedule.js';
import { prepareSubmitted } from './submitted.js';
import { createScheduling, type Scheduling } from './schedule.service.js';
import { batchReads, ownReads, type SenderRead, type SendReads } from './send-reads.js';
import type { EventOutbox, SendingDomains } from './sending.deps.js';
import type { MailStore, StoreInput } from '../mail/mail.store.js';
import type { ReturnPaths } from '../../lib/verp.js';

export const DELIVERY_QUEUE = 'delivery';
/** The limits of a send (docs/api.md). */
export const MAX_BODY_LENGTH = 512 * 1024;
export const MAX_NAME_LENGTH = 200;
/** Messages of one batch send (Resend's limit). */
export const MAX_BATCH_MESSAGES = 100;

export interface SendInput {
  from_mailbox: string;
  from_name?: string | undefined;
  reply_to?: string | undefined;
  to: string | string[];
  cc?: string | string[] | undefined;
  bcc?: string | string[] | undefined;
  subject: string;
  body: string;
  html?: string | undefined;
  /** Internet Message-IDs this message answers (drafts that reply). */
  inReplyTo?: string | undefined;
  references?: string[] | undefined;
  /** The id to give the message, for a caller that records it before the message is written (transactional). */
  messageId?: string | undefined;
  /** When to send (ISO 8601 with an offset, up to 30 days ahead); absent, now or past: at once (schedule.ts). */
  send_at?: string | undefined;
  /**
   * Hold a message that would leave now for the service's undo window (`undoSendMs`): it is scheduled that far
   * ahead, so it can be cancelled or taken back as a draft meanwhile. No effect with a `send_at` ahead, or a window of 0.
   */
  hold?: boolean | undefined;
  /** The message (our message_id) a draft sent answers: kept with the delivery state for an undo (drafts only). */
  inReplyToMessage?: string | undefined;
  /** Files as MIME parts (attachments.ts checks and decodes them); listed in the sent copy. */
  attachments?: AttachmentInput[] | undefined;
  /** One-click unsubscribe (RFC 8058): each recipient's copy carries its own List-Unsubscribe fields. */
  unsubscribe?: boolean | undefined;
  /** Ask receivers that offer DSN (RFC 3461) to report delivery, not only failure, to the return path. */
  delivery_notification?: boolean | undefined;
}

export interface Queued {
  message_id: string;
  /** `scheduled` when the message waits for its `send_at`. */
  status: 'queued' | 'scheduled';
  send_at?: string;
  /** A held send (`hold`): the seconds it waits before it leaves (at `send_at`), during which it can be taken back. */
  hold_seconds?: number;
  /** Recipients left out because the workspace suppresses them; absent when none was. */
  suppressed?: string[];
}

/** One message of a batch: queued, or refused with the error its single send would have answered. */
export type BatchOutcome = { queued: Queued } | { error: DomainError };

/** A message of `GET /sent` (the client's name for it). */
export type SentItem = SentMessageView;

export interface SendingService {
  /** Outbound messages (the `sent` folder) with their delivery status, newest first. */
  listSent(tenant: TenantContext, query: { mailbox?: string | undefined; limit: number; offset: number }): Promise<{ messages: SentItem[]; total: number; limit: number; offset: number }>;
  /**
   * The one way into the outbound pipeline (API, session, drafts, transactional): checks, composes,
   * stores the `sent` copy, queues delivery and emits `message.sent`, all in the caller's transaction
   * (or its own). Suppressed recipients are left out and listed in the answer (all of them: 422).
   */
  enqueue(tenant: TenantContext, input: SendInput, trx?: Work): Promise<Queued>;
  /**
   * enqueue's checks alone, outside any transaction: a list refusal is recorded (`message.rejected`,
   * committed) and thrown. A caller that passes its own transaction to enqueue runs this first: inside
   * that transaction a refusal can only be thrown, not recorded (a second transaction would wait forever
   * on SQLite's one connection, and the caller's rollback would undo one written inside its own).
   */
  check(tenant: TenantContext, input: SendInput): Promise<void>;
  /**
   * Many sends at once (`POST /send/batch`): each message is checked and composed on its own, so a refusal
   * fails only its own message; every good one is then written in one transaction (one commit, one fsync).
   * The outcomes are in the order of `inputs`.
   */
  enqueueBatch(tenant: TenantContext, inputs: readonly SendInput[]): Promise<BatchOutcome[]>;
  /**
   * A message a mail client submitted, on enqueue's path (lists, suppressions, quotas, the sent copy, the delivery
   * job, `message.sent`; DKIM at delivery): kept as written but for its Bcc fields (removed) and a missing
   * Message-ID or Date (added). Suppressed recipients are left out and listed, as a send's.
   */
  enqueueRaw(tenant: TenantContext, input: RawSendInput): Promise<Queued>;
  /**
   * One recipient of a submission, judged as a send would judge it, before the message comes: refused by the
   * outbound lists (422 recipient_blocked, recorded as message.rejected) or suppressed (422 recipient_suppressed).
   */
  checkRecipient(tenant: TenantContext, mailbox: string, recipient: string): Promise<void>;
  /** Cancel or reschedule a message waiting for its send_at (schedule.service.ts). */
  cancel: Scheduling['cancel'];
  reschedule: Scheduling['reschedule'];
  cancelWith: Scheduling['cancelWith'];
}

export interface SendingDeps {
  /** The pool: sends open their own transactions on it. */
  work: Work;
  clock: Clock;
  events: EventOutbox;
  /** The sent copy, its delivery state and the checks a send reads (mailbox, lists, suppressions). */
  mail: Pick<SendingMailStore, 'readSender' | 'recordOutbounds' | 'suppressedAmong' | 'deliveryState' | 'cancelScheduled' | 'rescheduleScheduled'> &
    Pick<MailStore, 'storeCopy' | 'storeCopies' | 'findMessage' | 'deliveryPage' | 'findMailbox'>;
  queue: Pick<Queue, 'enqueue' | 'enqueueMany' | 'cancel' | 'reschedule'>;
  domains: SendingDomains;
  /** The keyed VERP return paths (bounces+<message_id>-<tag>@<domain>), routed to our SMTP listener. */
  returnPaths: ReturnPaths;
  /** Shared commits: concurrent sends share a transaction and its flush to disk (db/group-commit.ts). */
  commits: GroupCommit;
  /** Attempts before a delivery job gives up (its own max-age rule usually decides first). */
  maxAttempts?: number;
  /** Builds the message (compose-pool.ts: large ones on a thread); composeMessage in this thread by default. */
  compose?: Composer;
  /** The workspace's hourly and daily send quotas (modules/quotas): checked before a send, counted in its transaction. */
  quota: SendQuota;
  /** Parses a submitted message for its sent copy (parseMessage in this thread by default). */
  parse?: (raw: Buffer) => Promise<ParsedMessage>;
  /** How long a send that asks for the hold waits before it leaves (MAILROOM_UNDO_SEND_SECONDS); 0 or absent: no hold. */
  undoSendMs?: number;
  /** The database's full-text index, so that a sent copy's search entry is made only in the form it stores. */
  fullText?: 'fts5' | 'tsvector';
}

/** What a send asks of the quotas (`QuotaService.checkSend` and `countSend`). */
export interface SendQuota {
  checkSend(conn: Work, workspaceId: string, count: number): Promise<void>;
  countSend(trx: Work, workspaceId: string, count: number): Promise<void>;
}

/** A message as a mail client wrote it (SMTP submission), its envelope's sender mailbox and recipients. */
export interface RawSendInput {
  mailbox: string;
  raw: Buffer;
  recipients: readonly string[];
}

type Sender = { mailbox: { id: string; address: string }; fromDomain: string; judged: SenderRead['judged'] };
type Checked = { mailbox: { id: string; address: string }; fromDomain: string; to: string[]; cc: string[]; all: string[]; suppressed: string[]; subject: string; replyTo: string | undefined; fromName: string };
type Composed = {
  messageId: string;
  now: number;
  raw: Buffer;
  parsed: ParsedMessage;
  mailFrom: string;
  listUnsubscribe?: boolean | undefined;
  deliveryNotification?: boolean | undefined;
  inReplyTo?: string | undefined;
};
/** A send ready to be written: `sendAt` null sends at once; `held`: scheduled only by the hold. */
type Prepared = { checked: Checked; composed: Composed; sendAt: number | null; held?: boolean };

/** Parsed as a send's checks parse them (`check`): every message's recipients by its sender; one that does not parse adds none. */
function recipientsBySender(inputs: readonly SendInput[]): Map<string, Set<string>> {
  const bySender = new Map<string, Set<string>>();
  for (const input of inputs) {
    const from = normalizeEmail(input.from_mailbox);
    if (!from) continue;
    let all: string[];
    try {
      all = sendRecipients(input).all;
    } catch {
      continue;
    }
    const set = bySender.get(from) ?? new Set<string>();
    for (const address of all) set.add(address);
    bySender.set(from, set);
  }
  return bySender;
}

export function createSendingService(deps: SendingDeps): SendingService {
  const { work, clock, events, mail, queue, domains, returnPaths, commits, quota } = deps;
  const composer = deps.compose ?? composeMessage;
  const parseRaw = deps.parse ?? parseMessage;
  const undoSendMs = deps.undoSendMs ?? 0;

  /**
   * Everything that can refuse a send, read-only: runs before any write so a refusal leaves nothing behind.
   * `record`: commit list refusals as events in a transaction of their own (only when no caller's
   * transaction is open, see `SendingService.check`).
   */
  async function check(tenant: TenantContext, input: SendInput, reads: SendReads, record: boolean): Promise<Checked> {
    const fromAddress = normalizeEmail(input.from_mailbox);
    const noMailbox = () => notFound('mailbox_not_found', `no mailbox ${input.from_mailbox} in this workspace`);
    if (!fromAddress) throw noMailbox();
    // The recipients are parsed first so that the mailbox and the lists are read together, but their errors are
    // thrown after the mailbox's and the domain's, as always.
    let recipients: { to: string[]; cc: string[]; all: string[] } | { error: unknown };
    try {
      recipients = sendRecipients(input);
    } catch (error) {
      recipients = { error };
    }
    const all = 'all' in recipients && recipients.all.length <= MAX_RECIPIENTS ? recipients.all : [];
    const sender = await readSender(reads, fromAddress, all, noMailbox);
    const { mailbox, fromDomain } = sender;
    if ('error' in recipients) throw recipients.error;
    const { to, cc } = recipients;
    if (recipients.all.length > MAX_RECIPIENTS) throw invalid('too_many_recipients', `at most ${MAX_RECIPIENTS} recipients in all`);
    const subject = input.subject.replace(/[\r\n]+/g, ' ');
    if (subject.length > MAX_SUBJECT_LENGTH) throw invalid('invalid_request', `subject must be at most ${MAX_SUBJECT_LENGTH} characters`);
    if (input.body.length > MAX_BODY_LENGTH || (input.html?.length ?? 0) > MAX_BODY_LENGTH) {
      throw invalid('invalid_request', `body and html must be at most ${MAX_BODY_LENGTH} characters`);
    }
    const replyTo = input.reply_to === undefined ? undefined : normalizeEmail(input.reply_to);
    if (replyTo === null) throw invalid('invalid_request', `reply_to '${input.reply_to}' is not a valid email address`);
    const fromName = (input.from_name ?? '').replace(/[\r\n]+/g, ' ').trim();
    if (fromName.length > MAX_NAME_LENGTH) throw invalid('invalid_request', `from_name must be at most ${MAX_NAME_LENGTH} characters`);

    await refuseListed(tenant, sender, all, record);
    const deliverable = await withoutSuppressed(reads, all);
    return { mailbox, fromDomain, to, cc, ...deliverable, subject, replyTo, fromName };
  }

  /**
   * The sending mailbox and the outbound lists' verdicts on the recipients (send-reads.ts); refused when the mailbox is
   * not the workspace's or its domain is neither hosted nor verified.
   */
  async function readSender(reads: SendReads, fromAddress: string, all: string[], noMailbox: () => DomainError): Promise<Sender> {
    const { mailbox, judged } = await reads.sender(fromAddress, all);
    if (!mailbox) throw noMailbox();
    const fromDomain = mailbox.address.slice(mailbox.address.lastIndexOf('@') + 1);
    if (!(await reads.domainAllowed(fromDomain))) {
      throw invalid('domain_not_verified', `${fromDomain} is neither a hosted domain nor a verified sending domain`);
    }
    return { mailbox, fromDomain, judged };
  }

  /** 422 recipient_blocked when the outbound lists refuse a recipient; `record`: commit the refusals as events first. */
  async function refuseListed(tenant: TenantContext, sender: Sender, all: readonly string[], record: boolean): Promise<void> {
    const refused: Array<{ recipient: string; reason: string }> = [];
    all.forEach((recipient, i) => {
      const verdict = sender.judged[i]!;
      if (verdict.decision === 'refuse') refused.push({ recipient, reason: verdict.reason });
    });
    if (refused.length === 0) return;
    const error = new DomainError('unprocessable', 'recipient_blocked', `refused by the outbound lists: ${refused.map((r) => r.recipient).join(', ')}`);
    // The refusal is recorded even though the request fails: its own transaction, committed. Inside a
    // caller's transaction it is not: the caller ran `check` (which recorded it) just before, so only a
    // list changed in that instant goes unrecorded.
    if (record) {
      const { address } = sender.mailbox;
      await work.transaction().execute(async (own) => {
        for (const r of refused) {
          await events.emit(asWork(own), { workspaceId: tenant.workspaceId, type: 'message.rejected', data: { mailbox: address, from: address, recipient: r.recipient, reason: r.reason, direction: 'outbound' } });
        }
      });
    }
    throw error;
  }

  /** A mail client's submission: the envelope's checks (as a send's), the message kept as written (submitted.ts). */
  async function prepareRaw(tenant: TenantContext, input: RawSendInput): Promise<Prepared> {
    const all = [...new Set(input.recipients.map((r) => normalizeEmail(r) ?? r))];
    const bad = all.find((r) => normalizeEmail(r) === null);
    if (bad !== undefined) throw invalid('invalid_recipient', `'${bad}' is not a valid email address`);
    if (all.length === 0) throw invalid('invalid_request', 'a message needs at least one recipient');
    if (all.length > MAX_RECIPIENTS) throw invalid('too_many_recipients', `at most ${MAX_RECIPIENTS} recipients in all`);
    const noMailbox = () => notFound('mailbox_not_found', `no mailbox ${input.mailbox} in this workspace`);
    const fromAddress = normalizeEmail(input.mailbox);
    if (!fromAddress) throw noMailbox();
    const reads = ownReads(mail, domains, tenant.workspaceId, work);
    const sender = await readSender(reads, fromAddress, all, noMailbox);
    await refuseListed(tenant, sender, all, true);
    const deliverable = await withoutSuppressed(reads, all);
    await quota.checkSend(work, tenant.workspaceId, 1);
    const messageId = newId('msg');
    const now = clock.now();
    const prepared = prepareSubmitted(input.raw, { messageId: `${messageId}@${sender.fromDomain}`, date: now });
    const parsed = await parseRaw(prepared.raw);
    const checked: Checked = { mailbox: sender.mailbox, fromDomain: sender.fromDomain, to: [], cc: [], ...deliverable, subject: parsed.subject, replyTo: undefined, fromName: '' };
    return { checked, composed: { messageId, now, raw: prepared.raw, parsed, mailFrom: returnPaths.address(messageId, 0) }, sendAt: null };
  }

  /**
   * The recipients the workspace does not suppress, and those it does; 422 when it suppresses them all. The
   * headers keep every address the sender wrote: a suppressed one only gets no copy (decision 333).
   */
  async function withoutSuppressed(reads: SendReads, all: string[]): Promise<{ all: string[]; suppressed: string[] }> {
    const found = await reads.suppressed(all);
    if (found.size === 0) return { all, suppressed: [] };
    const suppressed = all.filter((a) => found.has(a));
    if (suppressed.length === all.length) throw suppressedError(suppressed);
    return { all: all.filter((a) => !found.has(a)), suppressed };
  }

  /**
   * The message as it will be sent and stored, built before any transaction: composing is the CPU-heavy part of a
   * send, and sends share their transactions (group commit), whose units run one after another.
   */
  async function compose(input: SendInput, checked: Checked, sendAt: number | null): Promise<Composed> {
    const { mailbox, fromDomain, to, cc, subject, replyTo, fromName } = checked;
    const attachments = decodeAttachments(input.attachments);
    const messageId = input.messageId ?? newId('msg');
    const now = clock.now();
    // A scheduled message is dated when it is to leave, not when it was scheduled (the worker dates it again
    // at delivery, after a reschedule: delivery.handler.ts).
    const date = sendAt ?? now;
    const internetId = `${messageId}@${fromDomain}`;
    const raw = await composer({
      messageId: internetId,
      from: { name: fromName, address: mailbox.address },
      to,
      cc,
      replyTo,
      subject,
      text: input.body,
      html: input.html,
      inReplyTo: input.inReplyTo,
      references: input.references,
      date: new Date(date),
      attachments,
    });
    const views = {
      subject,
      from: { name: fromName, address: mailbox.address },
      to: to.map((address) => ({ name: '', address })),
      cc: cc.map((address) => ({ name: '', address })),
      text: input.body,
      html: input.html ?? null,
      attachments,
    };
    const parsed: ParsedMessage = {
      ...views,
      replyTo: replyTo ? [{ name: '', address: replyTo }] : [],
      date,
      messageId: internetId.toLowerCase(),
      // The store's thread keys are lower-case (as the MIME parser gives them); the wire keeps the case.
      inReplyTo: input.inReplyTo?.toLowerCase() ?? null,
      references: (input.references ?? []).map((r) => r.toLowerCase()),
      headers: [],
      snippet: snippetOf(views),
      search: searchEntryOf(views, deps.fullText),
      parseError: null,
    };
    // The keyed return path is an HMAC: made here, once, rather than inside the shared transaction. Each recipient has
    // its own (the delivery worker makes them by place); the first one's is kept as the message's, and marks it as such.
    return {
      messageId,
      now,
      raw,
      parsed,
      mailFrom: returnPaths.address(messageId, 0),
      listUnsubscribe: input.unsubscribe === true,
      deliveryNotification: input.delivery_notification === true,
      inReplyTo: input.inReplyToMessage,
    };
  }

  /** The answer names the recipients a send left out because they are suppressed. */
  const withSuppressed = (queued: Queued, checked: Checked): Queued => (checked.suppressed.length > 0 ? { ...queued, suppressed: checked.suppressed } : queued);

  /**
   * Everything before the write, outside any transaction: the time to send, the checks, the composed message.
   * `batch`: the batch's shared reads; the batch has checked the send quotas for all its messages already.
   */
  async function prepare(tenant: TenantContext, input: SendInput, conn: Work, record: boolean, batch?: SendReads): Promise<Prepared> {
    const now = clock.now();
    const scheduled = scheduledTime(input.send_at, now);
    // A held send is a scheduled one whose time is the end of the undo window: one way to wait, cancel and leave.
    const held = scheduled === null && input.hold === true && undoSendMs > 0;
    const sendAt = held ? now + undoSendMs : scheduled;
    const checked = await check(tenant, input, batch ?? ownReads(mail, domains, tenant.workspaceId, conn), record);
    // Before composing: a workspace over its quota costs no work (the count in `write` is the one that holds).
    if (!batch) await quota.checkSend(conn, tenant.workspaceId, 1);
    return { checked, composed: await compose(input, checked, sendAt), sendAt, held };
  }

  /** The sent copy a send stores. */
  function sentCopy(tenant: TenantContext, checked: Checked, composed: Composed): StoreInput {
    const { mailbox, all } = checked;
    const { messageId, raw, parsed, mailFrom } = composed;
    return {
      id: messageId,
      workspaceId: tenant.workspaceId,
      mailboxId: mailbox.id,
      mailboxAddress: mailbox.address,
      direction: 'outbound',
      folder: 'sent',
      read: true,
      raw,
      parsed,
      auth: notChecked,
      envelope: { mail_from: mailFrom, rcpt_to: all },
    };
  }

  /** `sendAt`: a scheduled message (`scheduled`, its job due then); null sends at once. */
  async function write(tenant: TenantContext, checked: Checked, composed: Composed, trx: Work, sendAt: number | null = null): Promise<Queued> {
    return (await writeAll(tenant, [{ checked, composed, sendAt }], trx))[0]!;
  }

  /**
   * The sends' sent copies, then their delivery jobs, outbound rows, the quota's count and their events, each table
   * written once for all of them (a batch: a few round trips to PostgreSQL for any number of messages).
   */
  async function writeAll(tenant: TenantContext, sends: readonly Omit<Prepared, 'held'>[], trx: Work): Promise<Queued[]> {
    const { workspaceId } = tenant;
    const rows = await mail.storeCopies(trx, sends.map(({ checked, composed }) => sentCopy(tenant, checked, composed)));
    // The jobs first: an outbound row keeps its job's id, which cancel and reschedule find it by.
    const jobIds = await queue.enqueueMany(
      trx,
      sends.map(({ composed, sendAt }) => ({ queue: DELIVERY_QUEUE, workspaceId, payload: { message_id: composed.messageId }, maxAttempts: deps.maxAttempts ?? 1000, ...(sendAt === null ? {} : { runAt: sendAt }) })),
    );
    const statusOf = (sendAt: number | null) => (sendAt === null ? 'queued' : 'scheduled');
    await mail.recordOutbounds(
      trx,
      sends.map(({ checked, composed, sendAt }, i) => {
        const { messageId, now, mailFrom, listUnsubscribe, deliveryNotification, inReplyTo } = composed;
        return { workspaceId, messageId, status: statusOf(sendAt), mailFrom, recipients: checked.all, sendAt, jobId: jobIds[i]!, listUnsubscribe, deliveryNotification, inReplyTo, now };
      }),
    );
    // Counted where they are written (a scheduled message when it is accepted): past a quota the whole unit rolls back.
    await quota.countSend(trx, workspaceId, sends.length);
    const schedules = sends.map(({ sendAt }) => (sendAt === null ? {} : { send_at: iso(sendAt) }));
    await events.emitMany(
      trx,
      sends.map(({ sendAt }, i) => ({ workspaceId, type: 'message.sent' as const, data: { ...toMessageListView(rows[i]!), status: statusOf(sendAt), ...schedules[i] } })),
    );
    return sends.map(({ composed, sendAt }, i) => ({ message_id: composed.messageId, status: statusOf(sendAt), ...schedules[i] }));
  }

  return {
    async listSent(tenant, query) {
      let mailboxId: string | undefined;
      if (query.mailbox !== undefined) {
        const address = normalizeEmail(query.mailbox);
        const mailbox = address ? await mail.findMailbox(work, tenant.workspaceId, address) : undefined;
        if (!mailbox) throw notFound('mailbox_not_found', `no mailbox ${query.mailbox}`);
        mailboxId = mailbox.id;
      }
      const filter = { mailboxId, folder: 'sent' };
      const { rows, total } = await mail.deliveryPage(work, tenant.workspaceId, filter, query.limit, query.offset);
      return { messages: rows.map(toSentMessageView), total, limit: query.limit, offset: query.offset };
    },

    async enqueue(tenant, input, trx) {
      const { checked, composed, sendAt, held } = await prepare(tenant, input, trx ?? work, trx === undefined);
      const queued = await (trx ? write(tenant, checked, composed, trx, sendAt) : commits.run((own) => write(tenant, checked, composed, asWork(own), sendAt), tenant.workspaceId));
      return withSuppressed(held === true ? { ...queued, hold_seconds: undoSendMs / 1000 } : queued, checked);
    },

    async check(tenant, input) {
      await check(tenant, input, ownReads(mail, domains, tenant.workspaceId, work), true);
    },

    async enqueueRaw(tenant, input) {
      const { checked, composed } = await prepareRaw(tenant, input);
      const queued = await commits.run((own) => write(tenant, checked, composed, asWork(own), null), tenant.workspaceId);
      return withSuppressed(queued, checked);
    },

    async checkRecipient(tenant, mailbox, recipient) {
      const address = normalizeEmail(recipient);
      if (!address) throw invalid('invalid_recipient', `'${recipient}' is not a valid email address`);
      const noMailbox = () => notFound('mailbox_not_found', `no mailbox ${mailbox} in this workspace`);
      const reads = ownReads(mail, domains, tenant.workspaceId, work);
      const sender = await readSender(reads, normalizeEmail(mailbox) ?? mailbox, [address], noMailbox);
      await refuseListed(tenant, sender, [address], true);
      await withoutSuppressed(reads, [address]);
    },

    async enqueueBatch(tenant, inputs) {
      if (inputs.length > MAX_BATCH_MESSAGES) throw invalid('invalid_request', `at most ${MAX_BATCH_MESSAGES} messages in a batch`);
      // A batch fits the send quotas whole or is refused whole (429), before any message is checked or composed.
      await quota.checkSend(work, tenant.workspaceId, inputs.length);
      const reads = batchReads(mail, domains, tenant.workspaceId, work, recipientsBySender(inputs));
      // Checked and composed before the transaction, as a single send is; a refusal is recorded there (check's own
      // transaction) and answered in its place. Anything but a refusal is a failure of the whole batch.
      const prepared = await Promise.all(
        inputs.map(async (input): Promise<Prepared | { error: DomainError }> => {
          try {
            return await prepare(tenant, input, work, true, reads);
          } catch (error) {
            if (isDomainError(error)) return { error };
            throw error;
          }
        }),
      );
      const good = prepared.flatMap((p) => ('checked' in p ? [p] : []));
      // One unit of the group commit: the batch's messages are written together or not at all.
      const written =
        good.length === 0
          ? []
          : await commits.run(async (trx) => {
              const queued = await writeAll(tenant, good, asWork(trx));
              return queued.map((q, i) => withSuppressed(q, good[i]!.checked));
            }, tenant.workspaceId);
      let next = 0;
      return prepared.map((p) => ('error' in p ? { error: p.error } : { queued: written[next++]! }));
    },
    ...createScheduling({ work, clock, events, queue, mail }),
  };
}
