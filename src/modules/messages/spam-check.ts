import { DomainError } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import type { Metrics } from '../../lib/metrics.js';
import { RspamdError, type SpamAction, type SpamScanner, type SpamVerdict } from '../../lib/rspamd.js';
import type { Envelope, Recipient } from './inbound.service.js';

/** Content scoring of inbound mail by rspamd, and what its verdict means for a message. */
export interface SpamCheckOptions {
  scanner: SpamScanner;
  /** rspamd down or slow: `tempfail` refuses the message for now (451 4.7.1), `accept` stores it unscored. */
  onError: 'tempfail' | 'accept';
  /** Our host name, as in the SMTP greeting (rspamd's `Hostname`). */
  hostname: string;
  logger: Logger;
  metrics: Pick<Metrics, 'rspamdError'>;
}

/** Scores one message for its recipients; null when it was not scored. Throws a spam refusal (see `spamRefusal`). */
export type SpamCheck = (raw: Buffer, envelope: Envelope, recipients: readonly Recipient[]) => Promise<SpamVerdict | null>;

/** Actions that file a stored message in `spam` (a refusing action only when an allow list let it through for someone). */
const SPAM_FOLDER_ACTIONS: ReadonlySet<SpamAction> = new Set(['add header', 'rewrite subject', 'reject', 'soft reject', 'greylist']);

/** Whether a recipient's copy of a scored message goes to `spam`: the workspace's allow list wins over rspamd. */
export function filedAsSpam(verdict: SpamVerdict | null, recipient: Recipient): boolean {
  return verdict !== null && !recipient.allowListed && SPAM_FOLDER_ACTIONS.has(verdict.action);
}

/** A message refused at the end of DATA for its content: `reject` answers 550 5.7.1, `defer` 451 4.7.1. */
export function spamRefusal(err: unknown): 'reject' | 'defer' | null {
  if (!(err instanceof DomainError)) return null;
  return err.code === 'spam_rejected' ? 'reject' : err.code === 'spam_deferred' ? 'defer' : null;
}

const rejected = (detail: string) => new DomainError('forbidden', 'spam_rejected', detail);
const deferred = (detail: string) => new DomainError('unavailable', 'spam_deferred', detail);

export function createSpamCheck({ scanner, onError, hostname, logger, metrics }: SpamCheckOptions): SpamCheck {
  return async (raw, envelope, recipients) => {
    const mail = recipients.filter((r) => !r.reportFor);
    // Bounces and complaints are reports about our own mail, and an allow list for everyone means no scoring at all.
    if (mail.length === 0 || mail.every((r) => r.allowListed)) return null;
    let verdict: SpamVerdict;
    try {
      verdict = await scanner.check(raw, { ip: envelope.remoteIp, helo: envelope.helo, from: envelope.mailFrom, rcpt: mail.map((r) => r.address), hostname });
    } catch (err) {
      if (!(err instanceof RspamdError)) throw err;
      metrics.rspamdError('check');
      logger.warn({ err: err.message, from: envelope.mailFrom, ip: envelope.remoteIp, onError }, 'rspamd check failed');
      if (onError === 'tempfail') throw deferred('content scanner unavailable');
      return null;
    }
    // A refusal is for the whole transaction, so it holds only when no recipient's allow list let the sender in;
    // otherwise the message is stored, in `spam` for those without the allow entry.
    if (mail.some((r) => r.allowListed)) return verdict;
    const why = { from: envelope.mailFrom, ip: envelope.remoteIp, score: verdict.score, action: verdict.action, symbols: verdict.symbols.map((s) => s.name) };
    if (verdict.action === 'reject') {
      logger.info(why, 'inbound mail rejected by rspamd');
      throw rejected(`message refused as spam (score ${verdict.score})`);
    }
    if (verdict.action === 'soft reject' || verdict.action === 'greylist') {
      logger.info(why, 'inbound mail deferred by rspamd');
      throw deferred(`message deferred by the content scanner (${verdict.action})`);
    }
    return verdict;
  };
}
