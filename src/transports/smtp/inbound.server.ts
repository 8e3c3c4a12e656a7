import { tmpdir } from 'node:os';
import { SMTPServer, type SMTPServerAddress, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import { createByteBudget } from '../../lib/byte-budget.js';
import type { Logger } from '../../lib/logger.js';
import type { CertificatePem, CertificateSource } from '../../lib/tls-certificates.js';
import { noMetrics, type Metrics } from '../../lib/metrics.js';
import type { InboundService, Recipient } from '../../modules/messages/inbound.service.js';
import { isQuotaExceeded } from '../../modules/quotas/quota.types.js';
import { spamRefusal } from '../../modules/messages/spam-check.js';
import { createSessionSlots, DEFAULT_IDLE_MS, DEFAULT_MAX_COMMANDS, DEFAULT_MAX_SESSION_MS } from './session-slots.js';
import { smtpListener, type SmtpListener } from './smtp-listener.js';
import { MessageSpool } from './spool.js';

/** RFC 5321 section 4.5.3.1.8: a server must accept at least 100 recipients per transaction. */
export const MAX_RECIPIENTS = 100;
/** Time a closing server gives open sessions before it answers them 421 and hangs up (by default). */
export const SMTP_CLOSE_TIMEOUT_MS = 5000;
/** Defaults: concurrent sessions of one process, in all and per client address group (/24, /64). */
export const DEFAULT_MAX_CLIENTS = 200;
export const DEFAULT_MAX_CLIENTS_PER_IP = 20;
/** Bytes of one message kept in memory while it arrives; the rest is spilled to a file (spool.ts). */
export const SPOOL_MEMORY_BYTES = 256 * 1024;
/** Least bytes of received messages analysed and stored at once, whatever the size limit. */
const MIN_BYTES_IN_PROGRESS = 64 * 1024 * 1024;
/** Messages of the largest size that may be analysed and stored at once. */
const LARGEST_MESSAGES_IN_PROGRESS = 4;

export interface InboundSmtpOptions {
  inbound: InboundService;
  logger: Logger;
  hostname: string;
  /** Largest message accepted (advertised with SIZE, enforced with 552). */
  maxSize: number;
  /**
   * STARTTLS: a fixed PEM key and certificate, or a source the listener follows as its certificate is replaced
   * (lib/tls-certificates.ts); without either STARTTLS is not offered, nor while a source has no certificate yet.
   */
  tls?: { key: Buffer | string; cert: Buffer | string } | CertificateSource | undefined;
  /** How long close() lets open sessions finish before answering them 421 (default 5 s). */
  closeTimeoutMs?: number;
  /**
   * Concurrent sessions, in all and per client address group (IPv4 /24, IPv6 /64); past either the oldest idle
   * session (of the group, when the group is full) is closed with 421 4.4.2 to make room, and without one idle a
   * new session gets 421 4.7.0 (defaults 200 / 20).
   */
  maxClients?: number;
  maxClientsPerIp?: number;
  /** A session's lifetime, its commands, and its longest time without MAIL, RCPT or DATA (session-slots.ts). */
  maxSessionMs?: number;
  maxCommands?: number;
  idleMs?: number;
  /** How long a message still arriving at the lifetime may go on (default LIFETIME_DATA_GRACE_MS); for tests. */
  lifetimeDataGraceMs?: number;
  /** Bytes of a message kept in memory while it arrives (default SPOOL_MEMORY_BYTES), and where the rest goes (os.tmpdir()). */
  spoolMemoryBytes?: number;
  spoolDir?: string;
  /** Sessions, replies by code and ingest time. */
  metrics?: Pick<Metrics, 'smtpSession' | 'smtpSessionClosed' | 'smtpReply' | 'smtpIngest'>;
}

export type InboundSmtpServer = SmtpListener;

/**
 * Whether `recipient` must wait for a transaction of its own: a workspace with a storage quota may refuse the
 * message at the end of DATA (452 4.2.2), which refuses it for every recipient of the transaction; so such a
 * workspace's recipients never share one with another workspace's, and one tenant's full mailbox delays no other's mail.
 */
function needsOwnTransaction(recipient: Recipient, accepted: readonly Recipient[]): boolean {
  if (recipient.reportFor) return false;
  const others = accepted.filter((r) => !r.reportFor && r.workspaceId !== recipient.workspaceId);
  return others.length > 0 && (recipient.storageLimited === true || others.some((r) => r.storageLimited === true));
}

/** An SMTP reply error: smtp-server sends `responseCode` and the message as the reply text. */
function reply(code: number, text: string): Error & { responseCode: number } {
  return Object.assign(new Error(text), { responseCode: code });
}

/**
 * Inbound SMTP: refuses unknown and blocked recipients at RCPT, and answers 250 after the end of DATA
 * only once every copy is committed to the database. A thin transport over the inbound service.
 *
 * Bounded per process: sessions (session-slots.ts: in all and per address group, checked in onConnect, since
 * smtp-server's own `maxClients` answers without an enhanced status code and knows no addresses; and each one in
 * lifetime, commands and idle time); the memory of a message arriving (a spool, spill file past
 * SPOOL_MEMORY_BYTES); and the bytes analysed and stored at once (a byte budget the whole message must get
 * before it is read back and handed to the inbound service).
 */
export function createInboundSmtpServer(options: InboundSmtpOptions): InboundSmtpServer {
  const { inbound, logger, maxSize } = options;
  const metrics = options.metrics ?? noMetrics;
  /** Sessions admitted and not yet closed (onClose comes for refused connections too). */
  const admitted = new Set<string>();
  const recipients = new WeakMap<SMTPServerSession, Recipient[]>();
  const idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
  const slots = createSessionSlots({
    maxClients: options.maxClients ?? DEFAULT_MAX_CLIENTS,
    maxPerGroup: options.maxClientsPerIp ?? DEFAULT_MAX_CLIENTS_PER_IP,
    maxSessionMs: options.maxSessionMs ?? DEFAULT_MAX_SESSION_MS,
    maxCommands: options.maxCommands ?? DEFAULT_MAX_COMMANDS,
    idleMs,
    logger,
    ...(options.lifetimeDataGraceMs === undefined ? {} : { dataGraceMs: options.lifetimeDataGraceMs }),
  });
  const budget = createByteBudget(Math.max(MIN_BYTES_IN_PROGRESS, LARGEST_MESSAGES_IN_PROGRESS * maxSize));
  const spoolOptions = { memoryBytes: options.spoolMemoryBytes ?? SPOOL_MEMORY_BYTES, maxBytes: maxSize, dir: options.spoolDir ?? tmpdir() };

  /** Analyse and store a received message, within the byte budget; the spool is discarded once read. */
  async function store(spool: MessageSpool, session: SMTPServerSession): Promise<string[]> {
    const release = await budget.acquire(spool.size);
    try {
      const raw = await spool.read();
      await spool.discard();
      return await inbound.deliver(raw, envelopeOf(session), recipients.get(session) ?? []);
    } finally {
      release();
    }
  }

  const envelopeOf = (session: SMTPServerSession) => ({
    mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
    remoteIp: session.remoteAddress,
    helo: session.hostNameAppearsAs || session.clientHostname || session.remoteAddress,
  });

  const certificates = options.tls && 'follow' in options.tls ? options.tls : null;
  const fixedPem = options.tls && !('follow' in options.tls) ? options.tls : null;
  const initialPem: CertificatePem | { key: Buffer | string; cert: Buffer | string } | null = certificates ? certificates.pem() : fixedPem;
  const server = new SMTPServer({
    name: options.hostname,
    banner: 'Mailroom',
    size: maxSize,
    authOptional: true,
    disabledCommands: options.tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
    ...(initialPem ? { key: initialPem.key, cert: initialPem.cert } : {}),
    disableReverseLookup: true,
    closeTimeout: options.closeTimeoutMs ?? SMTP_CLOSE_TIMEOUT_MS,
    // A client silent this long is closed by smtp-server itself (421 4.4.2); any byte resets this clock, NOOP too.
    socketTimeout: idleMs,
    logger: false,

    onConnect(session: SMTPServerSession, callback: (err?: Error | null) => void) {
      const connection = [...server.connections].find((c) => c.id === session.id);
      // Not found cannot happen (smtp-server adds a connection before it calls onConnect); refused, not trusted.
      const refusal = connection ? slots.admit(connection) : '4.3.0 Temporary failure, please try again later';
      if (refusal) logger.warn({ ip: session.remoteAddress, refusal }, 'smtp session refused');
      else admitted.add(session.id);
      // A source with no certificate yet (ACME has not obtained one): no STARTTLS rather than smtp-server's public test key.
      if (certificates && !certificates.current()) session.disabledCommands = ['AUTH', 'STARTTLS'];
      metrics.smtpSession(!refusal);
      callback(refusal ? reply(421, refusal) : null);
    },

    onClose(session: SMTPServerSession) {
      slots.release(session.id);
      if (admitted.delete(session.id)) metrics.smtpSessionClosed();
    },

    onMailFrom(_address: SMTPServerAddress, session: SMTPServerSession, callback: (err?: Error | null) => void) {
      recipients.set(session, []);
      callback();
    },

    onRcptTo(address: SMTPServerAddress, session: SMTPServerSession, answered: (err?: Error | null) => void) {
      const callback = (err?: Error & { responseCode: number }) => {
        metrics.smtpReply('rcpt', err ? err.responseCode : 250);
        answered(err);
      };
      const accepted = recipients.get(session) ?? [];
      if (accepted.length >= MAX_RECIPIENTS) {
        callback(reply(452, `4.5.3 Too many recipients (at most ${MAX_RECIPIENTS} per message)`));
        return;
      }
      inbound.checkRecipient(address.address, envelopeOf(session)).then(
        (verdict) => {
          if (verdict.ok && needsOwnTransaction(verdict.recipient, accepted)) {
            // RFC 5321 4.5.3.1.10: the client sends the recipients refused so in another transaction.
            callback(reply(452, `4.5.3 <${address.address}>: too many recipients; send to this one in another transaction`));
          } else if (verdict.ok) {
            // One copy per mailbox; return addresses (bounces) are distinct by the message and recipient they name.
            const key = (r: Recipient) => (r.reportFor ? `${r.unsubscribe ? 'unsubscribe' : 'report'} ${r.reportFor} ${r.reportRecipient ?? ''}` : r.mailboxId);
            if (!accepted.some((r) => key(r) === key(verdict.recipient))) accepted.push(verdict.recipient);
            recipients.set(session, accepted);
            callback();
          } else if (verdict.reason === 'mailbox_full') {
            // RFC 3463 4.2.2: mailbox full; a temporary failure, so the sender tries again (after a delete or a higher quota).
            // The sender learns no figures of the workspace's (they are logged by the inbound service).
            callback(reply(452, `4.2.2 <${address.address}>: mailbox full, try again later`));
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
      // Past the size limit smtp-server keeps reading to the final dot; the spool stops keeping the bytes.
      const spool = new MessageSpool(spoolOptions);
      slots.dataStarted(session.id);
      stream.on('data', (chunk: Buffer) => {
        const written = spool.add(chunk);
        if (!written) return;
        // Read no more from the client until the chunk is on disk (backpressure instead of memory).
        stream.pause();
        void written.then(() => stream.resume());
      });
      stream.on('error', (err: Error) => {
        // The client went away mid-message: nobody to answer, nothing to keep.
        void spool.discard();
        slots.answered(session.id, () => callback(err));
      });
      stream.on('end', () => {
        slots.dataReceived(session.id);
        const ended = performance.now();
        const answer = (result: (Error & { responseCode: number }) | null, message?: string) => {
          metrics.smtpReply('data', result ? result.responseCode : 250);
          metrics.smtpIngest((performance.now() - ended) / 1000);
          void spool.discard().finally(() => slots.answered(session.id, () => callback(result, message)));
        };
        if (stream.sizeExceeded) return answer(reply(552, `5.3.4 Message too big (at most ${maxSize} bytes)`));
        store(spool, session).then(
          (ids) => answer(null, `2.0.0 Stored as ${ids.join(', ')}`),
          (err: unknown) => {
            const refusal = spamRefusal(err);
            // RFC 3463 5.7.1 / 4.7.1: refused (or deferred) by policy, here the content scanner's verdict.
            if (refusal === 'reject') return answer(reply(550, '5.7.1 Message refused as spam'));
            if (refusal === 'defer') return answer(reply(451, '4.7.1 Message deferred by the content filter, try again later'));
            if (isQuotaExceeded(err)) {
              logger.info({ detail: err.detail }, 'inbound mail deferred: a recipient workspace would pass its storage quota');
              return answer(reply(452, '4.2.2 Mailbox full, try again later'));
            }
            logger.error({ err }, 'storing inbound mail failed');
            answer(reply(451, '4.3.0 Could not store the message, please try again later'));
          },
        );
      });
    },
  });
  return smtpListener(server, { logger, errorMessage: 'smtp server error', certificates });
}
