/** Where one SMTP delivery attempt goes: an MX host, an A/AAAA fallback, or the configured relay. */
export interface SmtpRoute {
  /** The host's name (TLS server name, logs). */
  host: string;
  /** The IP address to connect to, looked up through the service's DNS; the relay connects by name. */
  address?: string | undefined;
  port: number;
  /** The relay's credentials, when it needs them. */
  auth?: { user: string; pass: string } | undefined;
  /** Implicit TLS (smtps://); otherwise STARTTLS is used whenever offered. */
  secure?: boolean | undefined;
  /**
   * The relay's TLS demands: `required` = no AUTH and no mail without TLS (STARTTLS or implicit);
   * `verify` = the certificate must be valid for `host`. Unset: opportunistic STARTTLS, certificate unchecked.
   */
  tls?: { required: boolean; verify: boolean } | undefined;
}

export interface DeliveryRequest {
  route: SmtpRoute;
  mailFrom: string;
  recipients: string[];
  message: Buffer;
  /** Awaited before the first byte of DATA is sent: the caller records, durably, that the outcome may now be ambiguous. */
  onDataStart(): Promise<void>;
  /** The outbound message this transaction carries (the sandbox's capture files it under its workspace). */
  origin?: { workspaceId: string; messageId: string } | undefined;
  /**
   * Ask a receiver that offers DSN (RFC 3461) to report delivery as well as failure, headers only, under this envelope
   * id; a receiver without DSN gets the plain envelope. Absent: no DSN parameters.
   */
  notifyDelivery?: { envelopeId: string } | undefined;
}

export interface RecipientRefusal {
  recipient: string;
  code: number;
  response: string;
}

export type DeliveryResult =
  /** 250 after the final dot: `accepted` got the message; `refused` were turned away at RCPT. */
  | { type: 'sent'; accepted: string[]; refused: RecipientRefusal[]; response: string }
  /** A permanent (5xx) answer for every recipient. */
  | { type: 'rejected'; code: number; response: string; refused: RecipientRefusal[] }
  /** A temporary answer (4xx), or no connection, before the message could have been taken: safe to retry. */
  | { type: 'deferred'; code: number | null; response: string; refused: RecipientRefusal[]; beforeMail: boolean }
  /** The connection ended after DATA began and before a reply: the peer may or may not have the message. */
  | { type: 'ambiguous'; response: string };

/** Sends one SMTP transaction (implemented by the SMTP transport; tests use a real local peer). */
export interface SmtpDeliverer {
  deliver(request: DeliveryRequest): Promise<DeliveryResult>;
  /** Close connections kept open between deliveries (at shutdown). */
  close?(): void;
}

/** Finds the hosts mail for a domain goes to, in the order to try them. */
export interface RouteResolver {
  /** Throws a `RouteError` when the domain has no mail host (permanent) or DNS failed (temporary). */
  routes(domain: string): Promise<SmtpRoute[]>;
}

export class RouteError extends Error {
  constructor(message: string, readonly permanent: boolean) {
    super(message);
    this.name = 'RouteError';
  }
}
