import { asWork, type Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { notFound } from '../../lib/errors.js';
import type { UnsubscribeTarget, UnsubscribeTokens } from '../../lib/unsubscribe-token.js';
import type { EmitInput } from '../events/event.types.js';
import type { MailStore } from '../mail/mail.store.js';

/** Whom an unsubscribe token or address speaks for: the sending workspace, its message and the one recipient. */
export interface Unsubscriber {
  workspaceId: string;
  messageId: string;
  recipient: string;
}

/** How the recipient asked: the link's one-click POST, or mail to the List-Unsubscribe mailto address. */
export type UnsubscribeChannel = 'one-click' | 'mailto';

export interface UnsubscribeService {
  /** Whom a link's token names (the GET page): 404 `not_found` for a forged token or a message no longer kept. */
  resolve(token: string): Promise<Unsubscriber>;
  /** The link's POST: suppress the recipient (`unsubscribed`) and emit `message.unsubscribed`, once; idempotent. */
  unsubscribe(token: string): Promise<{ created: boolean }>;
  /** Whom a verified target names, on the caller's connection (inbound SMTP at RCPT); undefined when nobody. */
  target(work: Work, target: UnsubscribeTarget): Promise<Unsubscriber | undefined>;
  /** Suppress and emit in the caller's transaction (inbound mail to the mailto address stores it with its copies). */
  record(trx: Work, who: Unsubscriber, channel: UnsubscribeChannel): Promise<boolean>;
}

export interface UnsubscribeDeps {
  work: Work;
  clock: Clock;
  tokens: Pick<UnsubscribeTokens, 'parse'>;
  mail: Pick<MailStore, 'bounceTarget' | 'findMessage' | 'suppressOne'>;
  events: { emit(work: Work, input: EmitInput): Promise<unknown> };
  /** Whether a workspace is being deleted: its messages' tokens answer 404 from then on. */
  workspaceGone?: ((workspaceId: string) => Promise<boolean>) | undefined;
}

/** The one answer for every token that names nobody, forged or not, so a probe learns nothing. */
const unknownToken = () => notFound('not_found', 'this unsubscribe link is not valid (or its message is no longer kept)');

/**
 * One-click unsubscribe (RFC 8058): a recipient of a message sent with `unsubscribe: true` leaves the sending
 * workspace's mail by the link's POST or by mail to its mailto address; both suppress the address with reason
 * `unsubscribed`. The token names the message and the recipient's place; the message's outbound row names the
 * workspace and the address, as a return path's does for a bounce.
 */
export function createUnsubscribeService({ work, clock, tokens, mail, events, workspaceGone }: UnsubscribeDeps): UnsubscribeService {
  async function target(conn: Work, t: UnsubscribeTarget): Promise<Unsubscriber | undefined> {
    const outbound = await mail.bounceTarget(conn, t.messageId);
    if (!outbound || (await workspaceGone?.(outbound.workspace_id))) return undefined;
    const recipients = JSON.parse(outbound.recipients_json) as Array<{ address: string }>;
    const recipient = recipients[t.recipient]?.address.toLowerCase();
    return recipient === undefined ? undefined : { workspaceId: outbound.workspace_id, messageId: t.messageId, recipient };
  }

  async function resolve(token: string): Promise<Unsubscriber> {
    const parsed = tokens.parse(token);
    const who = parsed ? await target(work, parsed) : undefined;
    if (!who) throw unknownToken();
    return who;
  }

  async function record(trx: Work, who: Unsubscriber, channel: UnsubscribeChannel): Promise<boolean> {
    const { workspaceId, messageId, recipient } = who;
    const row = { workspace_id: workspaceId, address: recipient, reason: 'unsubscribed' as const, detail: channel, status_code: null, message_id: messageId, created_at: clock.now() };
    // An address suppressed already (by an earlier unsubscribe, a bounce, by hand) changes nothing: one event at most.
    if (!(await mail.suppressOne(trx, row))) return false;
    const message = await mail.findMessage(trx, workspaceId, messageId);
    await events.emit(asWork(trx), { workspaceId, type: 'message.unsubscribed', data: { message_id: messageId, recipient, mailbox: message?.mailbox_address ?? null } });
    return true;
  }

  return {
    resolve,
    target,
    record,
    async unsubscribe(token) {
      const who = await resolve(token);
      return { created: await work.transaction().execute((trx) => record(asWork(trx), who, 'one-click')) };
    },
  };
}
