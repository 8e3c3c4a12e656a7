import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { iso } from '../../lib/clock.js';
import { notFound } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import type { Logger } from '../../lib/logger.js';
import type { Envelope, InboundService, Recipient } from '../messages/inbound.service.js';
import type { Download } from '../messages/message.service.js';
import { parseMessage } from '../messages/mime.js';
import type { DeliveryRequest, DeliveryResult, RouteResolver, SmtpDeliverer, SmtpRoute } from '../sending/delivery.types.js';
import type { TenantContext } from '../tenancy/tenancy.types.js';
import type { SandboxMessageSummary, SandboxStore } from './sandbox.store.js';

/** The one "mail host" of every domain in sandbox mode; attempts and recipients show it as their `mx`. */
export const SANDBOX_HOST = 'sandbox';
/** How a captured transaction's answer begins: the SMTP answer a receiving server gives for mail it took. */
export const CAPTURED_REPLY = '250 2.0.0 Captured by the Mailroom sandbox';

export interface CapturedMessageView {
  capture_id: string;
  message_id: string;
  mail_from: string;
  /** The envelope recipients of this transaction (one per recipient of the message, its own return path). */
  recipients: string[];
  /** Recipients that are mailboxes of this service (or a catch-all's): the copy stored there. */
  stored: Array<{ address: string; mailbox: string; message_id: string }>;
  subject: string;
  size: number;
  captured_at: string;
}

export interface CapturedMessageDetail extends CapturedMessageView {
  /** The message as it left, DKIM signature included (UTF-8; GET …/raw gives the exact bytes). */
  raw: string;
}

export interface SandboxOutboxService {
  list(tenant: TenantContext, query: { limit: number; offset: number }): Promise<{ captured_messages: CapturedMessageView[]; total: number; limit: number; offset: number }>;
  get(tenant: TenantContext, captureId: string): Promise<CapturedMessageDetail>;
  raw(tenant: TenantContext, captureId: string): Promise<Download>;
  clear(tenant: TenantContext): Promise<{ ok: true; deleted: number }>;
}

export interface SandboxCapture {
  /** Replaces the SMTP client in the delivery worker. */
  deliverer: SmtpDeliverer;
  /** Replaces MX routing (and the relay): every domain's one host is the capture. */
  routes: RouteResolver;
}

function toView(row: SandboxMessageSummary): CapturedMessageView {
  return {
    capture_id: row.id,
    message_id: row.message_id,
    mail_from: row.mail_from,
    recipients: JSON.parse(row.recipients_json) as string[],
    stored: JSON.parse(row.stored_json) as CapturedMessageView['stored'],
    subject: row.subject,
    size: row.size,
    captured_at: iso(row.created_at),
  };
}

/** Captured outbound mail as the workspace reads it (any member: it is the workspace's sent mail). */
export function createSandboxOutboxService({ work, store }: { work: Work; store: Pick<SandboxStore, 'findMessage' | 'listMessages' | 'countMessages' | 'clearMessages'> }): SandboxOutboxService {
  async function find(tenant: TenantContext, captureId: string) {
    const row = await store.findMessage(work, tenant.workspaceId, captureId);
    if (!row) throw notFound('captured_message_not_found', `no captured message ${captureId}`);
    return row;
  }
  return {
    async list(tenant, { limit, offset }) {
      const [rows, total] = await Promise.all([store.listMessages(work, tenant.workspaceId, limit, offset), store.countMessages(work, tenant.workspaceId)]);
      return { captured_messages: rows.map(toView), total, limit, offset };
    },
    async get(tenant, captureId) {
      const row = await find(tenant, captureId);
      return { ...toView(row), raw: Buffer.from(row.raw).toString('utf8') };
    },
    async raw(tenant, captureId) {
      const row = await find(tenant, captureId);
      return { filename: `${row.id}.eml`, contentType: 'message/rfc822', content: Buffer.from(row.raw) };
    },
    async clear(tenant) {
      return { ok: true, deleted: await store.clearMessages(work, tenant.workspaceId) };
    },
  };
}

export interface CaptureDeps {
  work: Work;
  store: Pick<SandboxStore, 'insertMessage'>;
  clock: Clock;
  logger: Logger;
  /** Mail for this service's own mailboxes still arrives there, through the path inbound SMTP takes. */
  inbound: Pick<InboundService, 'checkRecipient' | 'deliver'>;
}

/**
 * The sandbox's stand-in for SMTP delivery: each transaction is kept (the full MIME) instead of being sent, and its
 * recipients that are mailboxes of this service also get their copy, as if the mail had gone out and come back in.
 */
export function createSandboxCapture({ work, store, clock, logger, inbound }: CaptureDeps): SandboxCapture {
  const route: SmtpRoute = { host: SANDBOX_HOST, port: 0 };

  /** Each recipient this service takes mail for, once per mailbox (as SMTP keeps one copy a mailbox). */
  async function localRecipients(addresses: readonly string[], envelope: Envelope): Promise<Array<{ address: string; recipient: Recipient }>> {
    const found: Array<{ address: string; recipient: Recipient }> = [];
    for (const address of addresses) {
      const verdict = await inbound.checkRecipient(address, envelope);
      if (!verdict.ok || verdict.recipient.reportFor) continue;
      if (found.some((f) => f.recipient.mailboxId === verdict.recipient.mailboxId)) continue;
      found.push({ address, recipient: verdict.recipient });
    }
    return found;
  }

  async function capture(request: DeliveryRequest, origin: { workspaceId: string; messageId: string }): Promise<DeliveryResult> {
    const envelope: Envelope = { mailFrom: request.mailFrom, remoteIp: '127.0.0.1', helo: SANDBOX_HOST };
    const stored: CapturedMessageView['stored'] = [];
    for (const { address, recipient } of await localRecipients(request.recipients, envelope)) {
      const [messageId] = await inbound.deliver(request.message, envelope, [recipient]);
      if (messageId) stored.push({ address, mailbox: recipient.address, message_id: messageId });
    }
    const id = newId('cap');
    const parsed = await parseMessage(request.message);
    await store.insertMessage(work, {
      id,
      workspace_id: origin.workspaceId,
      message_id: origin.messageId,
      mail_from: request.mailFrom,
      recipients_json: JSON.stringify(request.recipients),
      stored_json: JSON.stringify(stored),
      subject: parsed.subject,
      size: request.message.length,
      raw: request.message,
      created_at: clock.now(),
    });
    const where = stored.length === 0 ? 'not delivered' : `stored in ${stored.map((s) => `${s.mailbox} as ${s.message_id}`).join(', ')}`;
    return { type: 'sent', accepted: [...request.recipients], refused: [], response: `${CAPTURED_REPLY} as ${id}; ${where}` };
  }

  const deliverer: SmtpDeliverer = {
    async deliver(request) {
      if (!request.origin) return { type: 'rejected', code: 554, response: '554 5.3.0 the sandbox captures only outbound messages of a workspace', refused: [] };
      try {
        // The same promise a real delivery makes: nothing is kept without a live lease.
        await request.onDataStart();
      } catch (err) {
        return { type: 'deferred', code: null, response: err instanceof Error ? err.message : String(err), refused: [], beforeMail: true };
      }
      try {
        return await capture(request, request.origin);
      } catch (err) {
        logger.error({ err, messageId: request.origin.messageId }, 'sandbox capture failed');
        return { type: 'deferred', code: 451, response: '451 4.3.0 the sandbox could not keep the message; it is tried again', refused: [], beforeMail: false };
      }
    },
  };
  return { deliverer, routes: { routes: () => Promise.resolve([route]) } };
}
