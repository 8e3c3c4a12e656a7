import nodemailer from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport/index.js';
import type Mail from 'nodemailer/lib/mailer/index.js';
import { createLogger } from '../../src/lib/logger.js';
import { createInboundSmtpServer, type InboundSmtpServer } from '../../src/transports/smtp/inbound.server.js';
import { startDnsServer, type TestDnsServer } from './dns-server.js';
import { startHarness, type Harness, type HarnessServiceOptions } from './harness.js';

/** The service's HTTP app plus its inbound SMTP listener on loopback, and a loopback DNS server. */
export interface MailHarness extends Harness {
  dns: TestDnsServer;
  smtp: InboundSmtpServer;
  smtpPort: number;
  /** Send through real SMTP with nodemailer; resolves with the server's final reply. */
  send(message: Mail.Options, options?: Partial<SMTPTransport.Options>): Promise<SMTPTransport.SentMessageInfo>;
  /** Send raw RFC 5322 bytes with an explicit envelope. */
  sendRaw(raw: string | Buffer, envelope: { from: string; to: string[] }): Promise<SMTPTransport.SentMessageInfo>;
}

/** `dns` is MAILROOM_DNS_SERVERS; in sandbox mode (`options.sandbox`) it is the sandbox DNS server's upstream. */
export async function startMailHarness(env: Record<string, string> = {}, options: { sandbox?: boolean; services?: HarnessServiceOptions } = {}): Promise<MailHarness> {
  const dns = await startDnsServer();
  const harness = await startHarness({ MAILROOM_DNS_SERVERS: dns.address, MAILROOM_SMTP_HOSTNAME: 'mx.mailroom.test', ...env }, options);
  const smtp = createInboundSmtpServer({
    inbound: harness.services.inbound,
    logger: createLogger('silent'),
    hostname: harness.config.smtpHostname,
    maxSize: harness.config.smtpMaxSize,
    maxClients: harness.config.smtpMaxClients,
    maxClientsPerIp: harness.config.smtpMaxClientsPerIp,
    maxSessionMs: harness.config.smtpMaxSessionMs,
    maxCommands: harness.config.smtpMaxCommands,
    idleMs: harness.config.smtpIdleMs,
  });
  const smtpPort = await smtp.listen('127.0.0.1', 0);
  const transportOptions: SMTPTransport.Options = { host: '127.0.0.1', port: smtpPort, secure: false, ignoreTLS: true, name: 'client.test' };
  return {
    ...harness,
    dns,
    smtp,
    smtpPort,
    send: (message, options = {}) => nodemailer.createTransport({ ...transportOptions, ...options }).sendMail(message),
    sendRaw: (raw, envelope) => nodemailer.createTransport(transportOptions).sendMail({ envelope, raw }),
    async close() {
      await smtp.close();
      await harness.close();
      await dns.close();
    },
  };
}
