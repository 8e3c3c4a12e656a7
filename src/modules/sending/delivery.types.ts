import type { AttemptTls } from '../mail/outbound.table.js';

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
  /**
   * The MTA-STS mode of the recipient domain's policy that made this route (RFC 8461): `enforce` routes also carry
   * `tls: { required, verify }`, so that only a verified TLS session to `host` takes the mail; `testing` delivers as usual.
   */
  mtaSts?: MtaStsMode | undefined;
}

/** The policy modes that change (`enforce`) or are noted on (`testing`) a delivery; `none` is as no policy. */
export type MtaStsMode = 'enforce' | 'testing';

/** What one transaction's TLS session was, as its attempt records it. */
export type TlsDetails = AttemptTls;

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

export type DeliveryResult = (
  /** 250 after the final dot: `accepted` got the message; `refused` were turned away at RCPT. */
  | { type: 'sent'; accepted: string[]; refused: RecipientRefusal[]; response: string }
  /** A permanent (5xx) answer for every recipient. */
  | { type: 'rejected'; code: number; response: string; refused: RecipientRefusal[] }
  /** A temporary answer (4xx), or no connection, before the message could have been taken: safe to retry. */
  | { type: 'deferred'; code: number | null; response: string; refused: RecipientRefusal[]; beforeMail: boolean }
  /** The connection ended after DATA began and before a reply: the peer may or may not have the message. */
  | { type: 'ambiguous'; response: string }
) & {
  /** The TLS session the transaction ran over, when the deliverer knows it; null: plain text or no session. */
  tls?: TlsDetails | null;
};

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

/** A recipient domain's MTA-STS policy as it applies to delivery; null where there is none (or its mode is `none`). */
export interface MtaStsPolicy {
  mode: MtaStsMode;
  /** The MX patterns it lists (`mx.example.com`, `*.example.com`). */
  mx: string[];
}

/** Finds a domain's MTA-STS policy (cached); never throws: a policy that cannot be had is no policy (RFC 8461 section 5). */
export interface MtaStsPolicies {
  policy(domain: string): Promise<MtaStsPolicy | null>;
  /** Whether `host` is one of the policy's MX patterns. */
  allows(policy: MtaStsPolicy, host: string): boolean;
}

export class RouteError extends Error {
  /** `mtaSts`: the policy mode that refused every route, when that is why there is none. */
  constructor(message: string, readonly permanent: boolean, readonly mtaSts: MtaStsMode | null = null) {
    super(message);
    this.name = 'RouteError';
  }
}
