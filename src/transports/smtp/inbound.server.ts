import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerAddress, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { Logger } from '../../lib/logger.js';
import type { InboundService, Recipient } from '../../modules/messages/inbound.service.js';

/** RFC 5321 §4.5.3.1.8: a server must accept at least 100 recipients per transaction. */
export const MAX_RECIPIENTS = 100;
/** Time a closing server gives open sessions before it answers them 421 and hangs up. */
const CLOSE_TIMEOUT_MS = 5000;

export interface InboundSmtpOptions {
  inbound: InboundService;
  logger: Logger;
  hostname: string;
  /** Largest message accepted (advertised with SIZE, enforced with 552). */
  maxSize: number;
  /** PEM key and certificate for STARTTLS; without them STARTTLS is not offered. */
  tls?: { key: Buffer | string; cert: Buffer | string } | undefined;
  /** How long close() lets open sessions finish before answering them 421 (default 5 s). */
  closeTimeoutMs?: number;
}

export interface InboundSmtpServer {
  listen(host: string, port: number): Promise<number>;
  close(): Promise<void>;
}

/** An SMTP reply error: smtp-server sends `responseCode` and the message as the reply text. */
function reply(code: number, text: string): Error & { responseCode: number } {
  return Object.assign(new Error(text), { responseCode: code });
}

/**
 * Inbound SMTP: refuses unknown and blocked recipients at RCPT, and answers 250 after the end of DATA
 * only once every copy is committed to the database. A thin transport over the inbound service.
 */
export function createInboundSmtpServer(options: InboundSmtpOptions): InboundSmtpServer {
  const { inbound, logger, maxSize } = options;
  const recipients = new WeakMap<SMTPServerSession, Recipient[]>();

  const envelopeOf = (session: SMTPServerSession) => ({
    mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
    remoteIp: session.remoteAddress,
    helo: session.hostNameAppearsAs || session.clientHostname || session.remoteAddress,
  });

  const server = new SMTPServer({
    name: options.hostname,
    banner: 'Mailroom',
    size: maxSize,
    authOptional: true,
    disabledCommands: options.tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
    ...(options.tls ? { key: options.tls.key, cert: options.tls.cert } : {}),
    disableReverseLookup: true,
    closeTimeout: options.closeTimeoutMs ?? CLOSE_TIMEOUT_MS,
    logger: false,

    onMailFrom(_address: SMTPServerAddress, session: SMTPServerSession, callback: (err?: Error | null) => void) {
      recipients.set(session, []);
      callback();
    },

    onRcptTo(address: SMTPServerAddress, session: SMTPServerSession, callback: (err?: Error | null) => void) {
      const accepted = recipients.get(session) ?? [];
      if (accepted.length >= MAX_RECIPIENTS) {
        callback(reply(452, `4.5.3 Too many recipients (at most ${MAX_RECIPIENTS} per message)`));
        return;
      }
      inbound.checkRecipient(address.address, envelopeOf(session)).then(
        (verdict) => {
          if (verdict.ok) {
            // One copy per mailbox; return addresses (bounces) are distinct by the message they name.
            const key = (r: Recipient) => r.reportFor ?? r.mailboxId;
            if (!accepted.some((r) => key(r) === key(verdict.recipient))) accepted.push(verdict.recipient);
            recipients.set(session, accepted);
            callback();
          } else if (verdict.reason === 'no_mailbox') {
            callback(reply(550, `5.1.1 <${address.address}>: no such mailbox here`));
          } else {
            callback(reply(550, `5.7.1 <${address.address}>: refused by policy (${verdict.detail})`));
          }
        },
        (err: unknown) => {
          logger.error({ err }, 'recipient check failed');
          callback(reply(451, '4.3.0 Temporary failure, please try again later'));
        },
      );
    },

    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback: (err?: Error | null, message?: string) => void) {
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on('data', (chunk: Buffer) => {
        size += chunk.length;
        // Past the limit smtp-server keeps reading to the final dot; we stop keeping the bytes.
        if (size <= maxSize) chunks.push(chunk);
      });
      stream.on('error', (err: Error) => callback(err));
      stream.on('end', () => {
        if (stream.sizeExceeded) {
          callback(reply(552, `5.3.4 Message too big (at most ${maxSize} bytes)`));
          return;
        }
        const to = recipients.get(session) ?? [];
        inbound.deliver(Buffer.concat(chunks, size), envelopeOf(session), to).then(
          (ids) => callback(null, `2.0.0 Stored as ${ids.join(', ')}`),
          (err: unknown) => {
            logger.error({ err }, 'storing inbound mail failed');
            callback(reply(451, '4.3.0 Could not store the message, please try again later'));
          },
        );
      });
    },
  });
  server.on('error', (err) => logger.error({ err }, 'smtp server error'));

  return {
    listen(host, port) {
      return new Promise((resolve, reject) => {
        server.server.once('error', reject);
        server.listen(port, host, () => {
          server.server.off('error', reject);
          resolve((server.server.address() as AddressInfo).port);
        });
      });
    },
    close() {
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
