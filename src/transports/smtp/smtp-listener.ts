import type { AddressInfo } from 'node:net';
import type { SMTPServer } from 'smtp-server';
import type { Logger } from '../../lib/logger.js';
import type { CertificateSource } from '../../lib/tls-certificates.js';

/** An smtp-server instance as the service runs it: bound, closed, and asked whether it is up (readiness). */
export interface SmtpListener {
  listen(host: string, port: number): Promise<number>;
  close(): Promise<void>;
  /** Listening now (readiness). */
  listening(): boolean;
}

/**
 * The listening side shared by the inbound and submission servers: errors before the bind are listen()'s to report,
 * later ones are logged as `errorMessage`; a followed certificate source replaces the TLS context as it changes;
 * close() stops following it and runs `beforeClose` (a server's own sessions to end) before smtp-server closes.
 */
export function smtpListener(
  server: SMTPServer,
  options: { logger: Logger; errorMessage: string; certificates: CertificateSource | null; beforeClose?: () => void },
): SmtpListener {
  // Until the listener is up, an error is listen()'s to report (a port in use is one clear line, not a logged stack).
  let listening = false;
  server.on('error', (err) => {
    if (listening) options.logger.error({ err }, options.errorMessage);
  });

  // A replaced certificate rebuilds smtp-server's default context, which every later handshake takes.
  const { certificates } = options;
  const unfollow = certificates ? certificates.follow((pem) => server.updateSecureContext({ key: pem.key, cert: pem.cert })) : () => undefined;

  return {
    listen(host, port) {
      return new Promise((resolve, reject) => {
        server.server.once('error', reject);
        server.listen(port, host, () => {
          server.server.off('error', reject);
          listening = true;
          resolve((server.server.address() as AddressInfo).port);
        });
      });
    },
    close() {
      unfollow();
      options.beforeClose?.();
      return new Promise((resolve) => server.close(() => resolve()));
    },
    listening: () => server.server.listening,
  };
}
