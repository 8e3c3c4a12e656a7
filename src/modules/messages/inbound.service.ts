import type { GroupCommit } from '../../db/group-commit.js';
import { asWork, type Work } from '../../db/tables.js';
import type { FairGate } from '../../lib/fair-gate.js';
import type { Logger } from '../../lib/logger.js';
import type { EmitInput } from '../events/event.types.js';
import { candidatesOf } from '../lists/candidates.js';
import { subjectVerdict, type ListService, type ListVerdict } from '../lists/list.service.js';
import type { MailStore } from '../mail/mail.store.js';
import { normalizeEmail } from '../tenancy/validation.js';
import type { Analysis, MessageAnalyzer } from './analysis.js';
import type { Folder, MessageListView } from './message.types.js';
import { toMessageListView } from './message.views.js';
import type { ParsedMessage } from './mime.js';
import { eventText, receivedEventData } from './received-event.js';
import { parseDsn, parseFeedbackReport, type DsnRecipient, type FeedbackReport } from './reports.js';
import { isPermanentStatus } from '../suppressions/suppression.service.js';
import type { Clock } from '../../lib/clock.js';
import type { ReturnPaths } from '../../lib/verp.js';
import type { UnsubscribeTokens } from '../../lib/unsubscribe-token.js';
import type { UnsubscribeService } from '../suppressions/unsubscribe.service.js';
import type { QuotaService } from '../quotas/quota.service.js';
import { quotaExceeded } from '../quotas/quota.types.js';
import type { ReportService } from '../reports/report.service.js';
import type { SpamVerdict } from '../../lib/rspamd.js';
import { filedAsSpam, type SpamCheck } from './spam-check.js';

/** The SMTP envelope and connection facts of one transaction. */
export interface Envelope {
  mailFrom: string;
  remoteIp: string;
  helo: string;
}

export interface Recipient {
  workspaceId: string;
  mailboxId: string;
  address: string;
  /** Set for a VERP return address: the outbound message this bounce or complaint is about. */
  reportFor?: string | undefined;
  /**
   * With `reportFor`: the one recipient the return address was issued for, whom alone a report to it can speak for;
   * null for the whole-message return address of a message sent before return paths named their recipient.
   */
  reportRecipient?: string | null | undefined;
  /** With `reportFor` and `reportRecipient`: mail to the List-Unsubscribe mailto address, not a report. */
  unsubscribe?: boolean | undefined;
  /**
   * The recipient's workspace has a `stored_bytes` quota: its mail may be refused at the end of DATA, so the SMTP
   * transport keeps it out of a transaction with another workspace's recipients (which that refusal would delay).
   */
  storageLimited?: boolean | undefined;
  /** The recipient's workspace allow-lists the sender: rspamd's verdict neither refuses nor files its copy as spam. */
  allowListed?: boolean | undefined;
}

export type RecipientVerdict =
  | { ok: true; recipient: Recipient }
  | { ok: false; reason: 'no_mailbox' | 'refused' | 'mailbox_full'; detail: string };

/** One SMTP transaction's message once it is parsed and authenticated: what storing it needs. */
interface AnalyzedDelivery {
  raw: Buffer;
  envelope: Envelope;
  recipients: readonly Recipient[];
  analysis: Analysis;
  /** rspamd's verdict; null when not scored. */
  spam: SpamVerdict | null;
}

export interface InboundService {
  /** Decide a RCPT TO: an existing mailbox whose workspace's inbound lists let the sender through. */
  checkRecipient(address: string, envelope: Envelope): Promise<RecipientVerdict>;
  /**
   * Analyse, then store one copy per recipient (each in its own workspace) and emit `message.received`
   * for each, all in one transaction: when this resolves the mail is durable; when it throws nothing is stored.
   */
  deliver(raw: Buffer, envelope: Envelope, recipients: readonly Recipient[]): Promise<string[]>;
}

type ParametersAfterFirst<F extends (...args: never[]) => unknown> = Parameters<F> extends [unknown, ...infer Rest] ? Rest : never;

/** The mail store's operations inbound mail uses. */
export type InboundStore = Pick<MailStore, 'storeCopy' | 'findMessage' | 'readRecipient' | 'bounceTarget' | 'sentRecipients' | 'suppress'>;

export interface InboundDeps {
  /** The pool: lookups at RCPT, and the transaction of a refusal's event. */
  work: Work;
  /** When a bounce or complaint suppressed its address. */
  clock: Clock;
  /** Emits an event in the caller's transaction. */
  events: { emit(work: Work, input: EmitInput): Promise<unknown> };
  store: InboundStore;
  /** The workspace's inbound allow and block lists. */
  lists: { evaluate(work: Work, ...rest: ParametersAfterFirst<ListService['evaluate']>): ReturnType<ListService['evaluate']> };
  /** Parses and authenticates the raw message (on worker threads in a running service). */
  analyzer: MessageAnalyzer;
  /**
   * Turns at the analyzer, taken round-robin by the recipients' workspace, so one tenant's flood of heavy mail
   * queues behind its own share instead of in front of everyone's; none = analyzed in arrival order.
   */
  analysisGate?: FairGate;
  logger: Logger;
  /** Outbound mail's keyed VERP return paths (bounces+msg_…-tag@domain). */
  returnPaths: ReturnPaths;
  /** Whether a host is a sending domain's verified return-path host, where return paths are received too; none = no such hosts. */
  isReturnPathHost?: ((host: string) => Promise<boolean>) | undefined;
  /** One-click unsubscribe's mailto addresses (unsubscribe+<token>@<bounce domain>) and what mail to one does. */
  unsubscribe: { tokens: Pick<UnsubscribeTokens, 'parseAddress'>; service: Pick<UnsubscribeService, 'target' | 'record'> };
  /** Shared commits: concurrent deliveries are stored in one transaction (see db/group-commit.ts). */
  commits: GroupCommit;
  /** Sandbox mode: the catch-all mailbox of an address that has none of its own (modules/sandbox). */
  catchAll?: ((address: string) => Promise<MailboxAddress | undefined>) | undefined;
  /** Whether a workspace is being deleted: its addresses are unknown from then on (a suspended one still receives). */
  workspaceGone?: ((workspaceId: string) => Promise<boolean>) | undefined;
  /** The recipients' workspaces' `stored_bytes` quotas (modules/quotas). */
  storage: Pick<QuotaService, 'storageRefusal' | 'limitsOf'>;
  /** DMARC and TLS reports (modules/reports): a stored message with report-like attachments gets a parse job. */
  domainReports?: Pick<ReportService, 'hasReports' | 'enqueueParse'> | undefined;
  /** Content scoring (rspamd) beside the analysis; none = not scored (spam-check.ts). */
  spamCheck?: SpamCheck | undefined;
}

type MailboxAddress = { id: string; workspace_id: string; address: string };

/** The outbound message a bounce or complaint is about: its workspace, its recipients and the events' view of it. */
interface Report {
  workspaceId: string;
  messageId: string;
  sentTo: ReadonlySet<string>;
  view: (MessageListView | { message_id: string }) & { delivery_status: string | null };
}

/**
 * Whom a verified return path speaks for: the recipient at its place, or (a whole-message one) every recipient, null
 * then; undefined when it names no recipient of the message, or is a whole-message one of a message that was sent
 * with per-recipient return paths (its tag was never handed out, so it was not ours to receive).
 */
function reportRecipientOf(outbound: { mail_from: string; recipients_json: string }, returnPath: { recipient: number | null }, returnPaths: ReturnPaths): string | null | undefined {
  if (returnPath.recipient === null) {
    const sent = returnPaths.parse(outbound.mail_from);
    return sent.kind === 'valid' && sent.recipient === null ? null : undefined;
  }
  const recipients = JSON.parse(outbound.recipients_json) as Array<{ address: string }>;
  return recipients[returnPath.recipient]?.address.toLowerCase();
}

/** Inbound mail: recipient checks at RCPT and durable storage at the end of DATA (one path for SMTP). */
export function createInboundService(deps: InboundDeps): InboundService {
  const { work, clock, events, store, lists, analyzer, analysisGate, logger, returnPaths, unsubscribe, commits, catchAll, workspaceGone, storage, domainReports, spamCheck } = deps;
  /**
   * Each recipient's workspace judged on its own: would this message take it past its stored bytes? Refused whole
   * (452 4.2.2 at the end of DATA) when one would, checked beside the parse; nothing is stored, so nothing is lost.
   */
  async function checkStorage(recipients: readonly Recipient[], size: number): Promise<void> {
    const workspaces = new Set(recipients.filter((r) => !r.reportFor).map((r) => r.workspaceId));
    for (const workspaceId of workspaces) {
      const refusal = await storage.storageRefusal(workspaceId, size);
      if (refusal) throw quotaExceeded('stored_bytes', `mailbox full (workspace ${workspaceId}): ${refusal}`);
    }
  }
  const gone = async (workspaceId: string): Promise<boolean> => (workspaceGone ? workspaceGone(workspaceId) : false);

  /**
   * A RCPT address as a return path: at the bounce domain, or at a verified return-path host (its keyed tag names the
   * message, so a bounce there speaks for it as one at the bounce domain would). Any other host: an ordinary address.
   */
  async function parseReturnPath(address: string) {
    const host = returnPaths.otherHost(address);
    if (host !== null && (await deps.isReturnPathHost?.(host))) return returnPaths.parse(address, host);
    return returnPaths.parse(address);
  }

  /**
   * A DSN → `message.bounced` per failed recipient; an ARF report → `message.complained`. Returns ids for the
   * SMTP reply. A report that names no recipient of the message changes nothing (decision 208). A permanent
   * (5.x.x) failure and a complaint also suppress the address, in the same transaction.
   */
  async function recordReport(trx: Work, recipient: Recipient, parsed: ParsedMessage): Promise<string[]> {
    const messageId = recipient.reportFor!;
    const sentTo = recipient.reportRecipient ? new Set([recipient.reportRecipient]) : await store.sentRecipients(trx, recipient.workspaceId, messageId);
    const row = await store.findMessage(trx, recipient.workspaceId, messageId);
    const listView = row ? toMessageListView(row) : undefined;
    // The events' `status` is the report's; the message's delivery status moves to `delivery_status` (decision 328).
    const view = { ...(listView ?? { message_id: messageId }), delivery_status: listView?.status ?? null };
    const report: Report = { workspaceId: recipient.workspaceId, messageId, sentTo, view };
    const feedback = parseFeedbackReport(parsed);
    if (feedback) return recordComplaint(trx, report, feedback);
    const dsn = parseDsn(parsed) ?? [];
    const failed = dsn.filter((r) => r.action === 'failed');
    const delivered = dsn.filter((r) => r.action === 'delivered');
    await recordBounces(trx, report, failed);
    await recordDeliveries(trx, report, delivered);
    if (failed.length + delivered.length === 0) logger.info({ messageId, subject: parsed.subject }, 'mail to a return path that is no failure or delivery report; dropped');
    return [`report:${messageId}`];
  }

  async function recordComplaint(trx: Work, report: Report, feedback: FeedbackReport): Promise<string[]> {
    const { workspaceId, messageId, sentTo, view } = report;
    // Feedback loops often redact the recipient: the keyed return path already ties the report to this message.
    const complainer = feedback.recipient ?? (sentTo.size === 1 ? [...sentTo][0]! : null);
    if (feedback.recipient !== null && !sentTo.has(feedback.recipient)) {
      logger.info({ messageId, named: feedback.recipient }, 'complaint names no recipient its return path was issued for; ignored');
      return [`report:${messageId}`];
    }
    // A complaint that names nobody among several recipients suppresses nobody (decision 330).
    if (complainer !== null) {
      await store.suppress(trx, [{ workspace_id: workspaceId, address: complainer, reason: 'complaint', detail: feedback.feedbackType, status_code: null, message_id: messageId, created_at: clock.now() }]);
    }
    await events.emit(asWork(trx), {
      workspaceId,
      type: 'message.complained',
      data: { ...view, recipient: complainer, reason: feedback.feedbackType, status: null, suppressed: complainer !== null, user_agent: feedback.userAgent },
    });
    return [`complaint:${messageId}`];
  }

  async function recordBounces(trx: Work, report: Report, failed: readonly DsnRecipient[]): Promise<void> {
    const { workspaceId, messageId, sentTo, view } = report;
    // Matched by the address the message was sent to: Original-Recipient when a forwarder changed the final one.
    const failures = failed.flatMap((r) => {
      const sent = [r.recipient, r.originalRecipient].find((a) => a !== null && sentTo.has(a));
      return sent ? [{ ...r, recipient: sent, permanent: isPermanentStatus(r.status) }] : [];
    });
    const now = clock.now();
    await store.suppress(
      trx,
      failures.filter((f) => f.permanent).map((f) => ({ workspace_id: workspaceId, address: f.recipient, reason: 'hard_bounce' as const, detail: f.diagnostic ?? f.status, status_code: f.status, message_id: messageId, created_at: now })),
    );
    for (const failure of failures) {
      const status = failure.status || null;
      await events.emit(asWork(trx), {
        workspaceId,
        type: 'message.bounced',
        // `status_code` is the older name of `status`, kept for existing receivers (decision 328).
        data: { ...view, recipient: failure.recipient, reason: failure.diagnostic ?? failure.status, status, status_code: status, suppressed: failure.permanent },
      });
    }
    if (failures.length < failed.length) logger.info({ messageId, ignored: failed.length - failures.length }, 'bounce report names addresses its return path was not issued for; those ignored');
  }

  /** Mail to a List-Unsubscribe mailto address: whatever it says, its recipient is unsubscribed (RFC 2369 section 3.2). */
  async function recordUnsubscribe(trx: Work, recipient: Recipient): Promise<string> {
    const messageId = recipient.reportFor!;
    await unsubscribe.service.record(trx, { workspaceId: recipient.workspaceId, messageId, recipient: recipient.reportRecipient! }, 'mailto');
    return `unsubscribe:${messageId}`;
  }

  /** A RCPT to an unsubscribe address: a forged one or one naming no recipient is no address of ours (550 5.1.1). */
  async function checkUnsubscribeAddress(rawAddress: string): Promise<RecipientVerdict | null> {
    const verdict = unsubscribe.tokens.parseAddress(rawAddress);
    if (verdict.kind === 'other') return null;
    const who = verdict.kind === 'valid' ? await unsubscribe.service.target(work, verdict) : undefined;
    if (!who) return { ok: false, reason: 'no_mailbox', detail: `no mailbox ${rawAddress}` };
    const recipient: Recipient = { workspaceId: who.workspaceId, mailboxId: '', address: rawAddress.toLowerCase(), reportFor: who.messageId, reportRecipient: who.recipient, unsubscribe: true };
    return { ok: true, recipient };
  }

  /**
   * A DSN whose Action is `delivered` (RFC 3464 section 2.3.3: the receiver asked for, and gave, notice of delivery)
   * → `message.delivered` per recipient the return path was issued for; the recipient's status stays `accepted`.
   */
  async function recordDeliveries(trx: Work, report: Report, delivered: readonly DsnRecipient[]): Promise<void> {
    const { workspaceId, sentTo, view } = report;
    for (const r of delivered) {
      const recipient = [r.recipient, r.originalRecipient].find((a) => a !== null && sentTo.has(a));
      if (!recipient) continue;
      await events.emit(asWork(trx), { workspaceId, type: 'message.delivered', data: { ...view, recipient, status: r.status || null, reason: r.diagnostic } });
    }
  }

  /** The second half of `deliver`: one group-commit unit storing every copy of an analysed message. */
  function storeAnalyzed({ raw, envelope, recipients, analysis, spam }: AnalyzedDelivery): Promise<string[]> {
    const { parsed, auth } = analysis;
    // Authentication-Results goes in front of the stored source, as the analysis put it in front of the headers (RFC 8601).
    const stored = auth.headerLines ? Buffer.concat([Buffer.from(auth.headerLines.replace(/\r?\n$/, '') + '\r\n'), raw]) : raw;
    // A DMARC failure under a reject or quarantine policy is the clearest spam signal we have (RFC 7489 §6.3);
    // rspamd's verdict files the copies of recipients whose allow list does not name the sender.
    const folderOf = (recipient: Recipient): Folder => (auth.quarantine || filedAsSpam(spam, recipient) ? 'spam' : 'inbox');
    const envelopeJson = { mail_from: envelope.mailFrom, remote_ip: envelope.remoteIp, helo: envelope.helo };
    const text = eventText(parsed);
    // Checked once, outside the transaction: names and types only; the reading is the job's, after the commit.
    const reports = domainReports?.hasReports(parsed) === true;
    // Deliveries arriving together share one transaction (one commit, one fsync): see group-commit.ts.
    // `run` queues the unit before it returns, which is what `deliver`'s announcement waits for.
    return commits.run(async (unit) => {
      const trx = asWork(unit);
      const ids: string[] = [];
      // Bounces and complaints are events about an outbound message, not mail for a mailbox.
      for (const recipient of recipients) {
        if (recipient.unsubscribe) ids.push(await recordUnsubscribe(trx, recipient));
        else if (recipient.reportFor) ids.push(...(await recordReport(trx, recipient, parsed)));
      }
      // One lock order for every transaction (PostgreSQL row locks on threads and folder counters).
      for (const recipient of [...recipients].filter((r) => !r.reportFor).sort((a, b) => a.mailboxId.localeCompare(b.mailboxId))) {
        const row = await store.storeCopy(trx, {
          workspaceId: recipient.workspaceId,
          mailboxId: recipient.mailboxId,
          mailboxAddress: recipient.address,
          direction: 'inbound',
          folder: folderOf(recipient),
          read: false,
          raw: stored,
          parsed,
          auth: auth.summary,
          envelope: { ...envelopeJson, rcpt_to: recipient.address },
          spam,
        });
        await events.emit(asWork(trx), { workspaceId: recipient.workspaceId, type: 'message.received', data: { ...receivedEventData(toMessageListView(row), text) } });
        if (reports) await domainReports?.enqueueParse(trx, recipient.workspaceId, row.id);
        ids.push(row.id);
      }
      return ids;
      // Taken fairly by the workspace it is for (the first recipient's: a message for several is rare).
    }, recipients[0]?.workspaceId);
  }

  /**
   * The recipient's mailbox and its workspace's verdict on the peer, read together (one statement a RCPT); no mailbox
   * has the address: undefined (a catch-all may still take it).
   */
  async function readRecipient(address: string, peer: { address: string | null; ip: string }): Promise<{ mailbox: MailboxAddress; verdict: ListVerdict } | undefined> {
    const judging = subjectVerdict('inbound', peer);
    const rows = await store.readRecipient(work, { address, keys: judging.keys });
    const row = rows[0];
    if (row?.mailbox_id == null || row.workspace_id == null || row.mailbox_address == null) return undefined;
    return { mailbox: { id: row.mailbox_id, workspace_id: row.workspace_id, address: row.mailbox_address }, verdict: judging.judge(candidatesOf(rows)) };
  }

  return {
    async checkRecipient(rawAddress, envelope) {
      const unsubscribing = await checkUnsubscribeAddress(rawAddress);
      if (unsubscribing) return unsubscribing;
      const returnPath = await parseReturnPath(rawAddress);
      // A return address whose keyed tag does not verify is no address of ours (550 5.1.1).
      if (returnPath.kind === 'forged') return { ok: false, reason: 'no_mailbox', detail: `no mailbox ${rawAddress}` };
      if (returnPath.kind === 'valid') {
        const reportFor = returnPath.messageId;
        const outbound = await store.bounceTarget(work, reportFor);
        const reportRecipient = outbound ? reportRecipientOf(outbound, returnPath, returnPaths) : undefined;
        if (!outbound || reportRecipient === undefined || (await gone(outbound.workspace_id))) return { ok: false, reason: 'no_mailbox', detail: `no message behind ${rawAddress}` };
        return { ok: true, recipient: { workspaceId: outbound.workspace_id, mailboxId: '', address: rawAddress.toLowerCase(), reportFor, reportRecipient } };
      }
      const address = normalizeEmail(rawAddress);
      const peer = { address: normalizeEmail(envelope.mailFrom), ip: envelope.remoteIp };
      const found = address ? await readRecipient(address, peer) : undefined;
      const mailbox = found?.mailbox ?? (address ? await catchAll?.(address) : undefined);
      if (!mailbox || (await gone(mailbox.workspace_id))) return { ok: false, reason: 'no_mailbox', detail: `no mailbox ${rawAddress}` };
      const verdict = found?.mailbox ? found.verdict : await lists.evaluate(work, mailbox.workspace_id, 'inbound', peer);
      if (verdict.decision === 'refuse') {
        await work.transaction().execute((trx) =>
          events.emit(trx, {
            workspaceId: mailbox.workspace_id,
            type: 'message.rejected',
            data: { mailbox: mailbox.address, from: envelope.mailFrom, recipient: mailbox.address, remote_ip: envelope.remoteIp, reason: verdict.reason },
          }),
        );
        logger.info({ recipient: mailbox.address, from: envelope.mailFrom, ip: envelope.remoteIp, reason: verdict.reason }, 'inbound mail refused by lists');
        return { ok: false, reason: 'refused', detail: verdict.reason };
      }
      const full = await storage.storageRefusal(mailbox.workspace_id, 0);
      if (full) {
        logger.info({ recipient: mailbox.address, workspace: mailbox.workspace_id, detail: full }, 'inbound mail deferred: the workspace is at its storage quota');
        return { ok: false, reason: 'mailbox_full', detail: full };
      }
      const storageLimited = (await storage.limitsOf(mailbox.workspace_id)).stored_bytes !== null;
      const allowListed = verdict.decision === 'pass' && verdict.allowed === true;
      return { ok: true, recipient: { workspaceId: mailbox.workspace_id, mailboxId: mailbox.id, address: mailbox.address, ...(storageLimited ? { storageLimited } : {}), ...(allowListed ? { allowListed } : {}) } };
    },

    async deliver(raw, envelope, recipients) {
      const context = { ip: envelope.remoteIp, helo: envelope.helo, sender: envelope.mailFrom };
      // The workspace that asked for this mail at RCPT; the sender's address should no recipient name one.
      const owner = recipients[0]?.workspaceId ?? `sender:${envelope.mailFrom.toLowerCase()}`;
      const analyze = async () => {
        const turn = await analysisGate?.acquire(owner);
        const analysis = await analyzer.analyze(raw, context).finally(() => turn?.());
        const why = analysis.auth.cutShort;
        if (why) logger.warn({ from: envelope.mailFrom, ip: envelope.remoteIp, size: raw.length, why }, 'authentication of an inbound message cut short by its budget; stored as spam');
        return analysis;
      };
      // Announced while it is parsed, so that a commit about to start waits briefly to take it along;
      // withdrawn once it is queued for its commit (or has failed).
      const arrived = commits.announce();
      let committed: Promise<string[]>;
      try {
        // The storage check beside the parse, not before it: on SQLite its read waits for the commit in progress,
        // which would split the commit groups. A workspace already full was refused at RCPT, so only the message
        // that would take it over is parsed in vain.
        // rspamd scores the message meanwhile too: a refusal ends the delivery before any transaction opens.
        const [analysis, , spam] = await Promise.all([analyze(), checkStorage(recipients, raw.length), spamCheck ? spamCheck(raw, envelope, recipients) : null]);
        committed = storeAnalyzed({ raw, envelope, recipients, analysis, spam });
      } finally {
        arrived();
      }
      return committed;
    },
  };
}
