/**
 * The IMAP listeners: plain with STARTTLS (MAILROOM_IMAP_PORT) and implicit TLS (MAILROOM_IMAPS_PORT). Sessions are
 * capped in all and per remote address (a connection over a cap gets `* BYE` at once) and, once logged in, per workspace (shares.ts,
 * shared by both listeners); idle ones end after 30 minutes (RFC 9051's minimum autologout), and close() says BYE
 * to every open session.
 */
import { createServer as createNetServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import type { CertificateSource } from '../../lib/tls-certificates.js';
import type { Logger } from '../../lib/logger.js';
import { noMetrics, type Metrics } from '../../lib/metrics.js';
import type { ImapAccessService } from '../../modules/imap-access/imap-access.service.js';
import { ImapSession } from './session.js';
import { createImapShares, DEFAULT_IMAP_SHARES, type ImapShares } from './shares.js';

export const IMAP_IDLE_MS = 30 * 60_000;
/** How often an IDLE looks at its folder even without a signal (a lost notification; decision 557). */
export const IDLE_SAFETY_POLL_MS = 30_000;

export interface ImapServerOptions {
  access: ImapAccessService;
  logger: Logger;
  appendLimit: number;
  maxClients: number;
  maxClientsPerIp: number;
  /** `loopback`: LOGIN without TLS from 127.0.0.0/8 and ::1. */
  allowPlaintextAuth: 'never' | 'loopback';
  /** The certificate (STARTTLS on the plain listener; required for the implicit-TLS one); null: no TLS. */
  tls: CertificateSource | null;
  /** Implicit TLS from the first byte (IMAPS). */
  secure?: boolean;
  idleMs?: number;
  /** Each workspace's share of sessions and commands; one object for all the listeners of the process. */
  shares?: ImapShares;
  /** An IDLE's look at its folder without a signal (default IDLE_SAFETY_POLL_MS). */
  idlePollMs?: number;
  metrics?: Pick<Metrics, 'imapSessions' | 'imapLogin' | 'imapCommand' | 'imapIdle' | 'imapIdleLook'>;
}

export interface ImapServer {
  listen(host: string, port: number): Promise<number>;
  close(): Promise<void>;
  listening(): boolean;
  /** Sessions open now. */
  sessions(): number;
}

export function isLoopback(address: string): boolean {
  const a = address.startsWith('::ffff:') ? address.slice(7) : address;
  return a === '::1' || a.startsWith('127.');
}

export function createImapServer(options: ImapServerOptions): ImapServer {
  const open = new Set<ImapSession>();
  const perIp = new Map<string, number>();
  const certificates = options.tls;
  let stopFollowing: (() => void) | null = null;
  const shares = options.shares ?? createImapShares(DEFAULT_IMAP_SHARES);
  const metrics = options.metrics ?? noMetrics;
  const listener = options.secure ? 'imaps' : 'imap';

  function accept(socket: Socket): void {
    const ip = socket.remoteAddress ?? '';
    if (open.size >= options.maxClients || (perIp.get(ip) ?? 0) >= options.maxClientsPerIp) {
      socket.on('error', () => socket.destroy());
      socket.end('* BYE [UNAVAILABLE] Too many connections.\r\n');
      return;
    }
    perIp.set(ip, (perIp.get(ip) ?? 0) + 1);
    const session: ImapSession = new ImapSession(socket, {
      access: options.access,
      logger: options.logger,
      appendLimit: options.appendLimit,
      plaintextAllowed: options.allowPlaintextAuth === 'loopback' && isLoopback(ip),
      startTls: certificates && !options.secure ? () => certificates.secureContext() : null,
      secure: options.secure === true,
      idleMs: options.idleMs ?? IMAP_IDLE_MS,
      remoteAddress: ip,
      shares,
      idlePollMs: options.idlePollMs ?? IDLE_SAFETY_POLL_MS,
      metrics,
      onClose: () => {
        if (!open.delete(session)) return;
        metrics.imapSessions(listener, -1);
        const n = (perIp.get(ip) ?? 1) - 1;
        if (n <= 0) perIp.delete(ip);
        else perIp.set(ip, n);
      },
    });
    open.add(session);
    metrics.imapSessions(listener, 1);
    session.start();
  }

  // An answer's last line (the tagged status) is often a second small write: with Nagle's algorithm it waited for the
  // client's delayed ACK of the first (40 ms on Linux), longer than most commands take. Set on the TCP socket, it
  // holds under TLS and after STARTTLS too.
  const noDelay = true;
  let server: Server;
  if (options.secure) {
    const pem = certificates?.pem();
    if (!certificates || !pem) throw new Error('the IMAPS listener needs a certificate');
    const tlsServer = createTlsServer({ ...pem, noDelay }, accept);
    stopFollowing = certificates.follow((next) => tlsServer.setSecureContext(next));
    tlsServer.on('tlsClientError', () => undefined);
    server = tlsServer;
  } else server = createNetServer({ noDelay }, accept);
  server.on('error', (err) => options.logger.error({ err }, 'imap server error'));

  return {
    listen(host, port) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          const address = server.address();
          resolve(typeof address === 'object' && address ? address.port : port);
        });
      });
    },
    async close() {
      stopFollowing?.();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const session of [...open]) session.bye('Server shutting down.');
      await closed;
    },
    listening: () => server.listening,
    sessions: () => open.size,
  };
}
