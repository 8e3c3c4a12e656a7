import { isIP } from 'node:net';
import { Readable } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import SMTPConnection from 'nodemailer/lib/smtp-connection/index.js';
import type { DeliveryRequest, DeliveryResult, RecipientRefusal, SmtpDeliverer, SmtpRoute, TlsDetails } from '../../modules/sending/delivery.types.js';

/** RFC 5321 section 4.5.3.2 suggests minutes per command; we keep a busy worker moving with shorter bounds. */
const CONNECT_TIMEOUT_MS = 30_000;
const GREETING_TIMEOUT_MS = 30_000;
const SOCKET_TIMEOUT_MS = 120_000;
const DATA_CHUNK_BYTES = 16 * 1024;

interface SmtpError extends Error {
  code?: string;
  responseCode?: number;
  response?: string;
  command?: string;
  rejectedErrors?: Array<SmtpError & { recipient?: string }>;
}

/** Node's TLS errors: a certificate that does not verify, or a handshake that failed. */
function isTlsFailure(err: SmtpError): boolean {
  return /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS|ERR_SSL|HOSTNAME_MISMATCH|altnames/i.test(`${err.code ?? ''} ${err.message}`);
}

function refusals(err: SmtpError | undefined): RecipientRefusal[] {
  return (err?.rejectedErrors ?? []).map((e) => ({ recipient: e.recipient ?? '', code: e.responseCode ?? 0, response: e.response ?? e.message }));
}

/** How long a connection may wait, idle, for the next message to the same host (Postfix caches for 2 s). */
const IDLE_MS = 5_000;
/** Messages over one connection before it is closed (a long-lived session is a risk, not a gain). */
const MAX_MESSAGES_PER_CONNECTION = 100;
/** Idle connections kept per destination. */
const MAX_IDLE_PER_DESTINATION = 16;

interface Cached {
  connection: SMTPConnection;
  messages: number;
  timer: NodeJS.Timeout;
  /** Removes the handlers that drop it from the cache when the peer hangs up while it waits. */
  detach(): void;
}

export interface SmtpDelivererHandle extends SmtpDeliverer {
  /** Close every idle connection (QUIT); deliveries in progress are not affected. */
  close(): void;
}

/** Connections that wait, idle, for the next message to their destination (see `createSmtpDeliverer`). */
interface ConnectionCache {
  /** A live idle connection to the destination `key`, taken out of the cache. */
  take(key: string): Cached | undefined;
  /** Keep a connection that has carried `messages` for the next message to `key`, or QUIT it. */
  park(key: string, connection: SMTPConnection, messages: number): void;
  /** QUIT every idle connection. */
  close(): void;
}

// A connection opened without checking the certificate never carries mail for a route that demands it.
const keyOf = (route: SmtpRoute) => [route.host, route.address ?? '', route.port, route.secure === true ? 's' : '', route.auth?.user ?? '', route.tls?.verify === true ? 'v' : ''].join('|');

function createConnectionCache(): ConnectionCache {
  const idle = new Map<string, Cached[]>();
  return {
    take(key) {
      const list = idle.get(key);
      while (list && list.length > 0) {
        const cached = list.pop()!;
        clearTimeout(cached.timer);
        cached.detach();
        if (list.length === 0) idle.delete(key);
        if (!(cached.connection as unknown as { _destroyed: boolean })._destroyed) return cached;
      }
      return undefined;
    },
    park(key, connection, messages) {
      const list = idle.get(key) ?? [];
      if (messages >= MAX_MESSAGES_PER_CONNECTION || list.length >= MAX_IDLE_PER_DESTINATION) {
        connection.quit();
        return;
      }
      const drop = () => {
        const current = idle.get(key);
        const at = current?.indexOf(cached) ?? -1;
        if (current && at >= 0) current.splice(at, 1);
        if (current?.length === 0) idle.delete(key);
        clearTimeout(cached.timer);
        cached.detach();
      };
      const onGone = () => drop();
      connection.on('error', onGone);
      connection.on('end', onGone);
      const cached: Cached = {
        connection,
        messages,
        timer: setTimeout(() => {
          drop();
          connection.quit();
        }, IDLE_MS),
        detach: () => {
          connection.off('error', onGone);
          connection.off('end', onGone);
        },
      };
      cached.timer.unref();
      list.push(cached);
      idle.set(key, list);
    },
    close() {
      for (const [key, list] of idle) {
        idle.delete(key);
        for (const cached of list) {
          clearTimeout(cached.timer);
          cached.detach();
          cached.connection.quit();
        }
      }
    },
  };
}

/** What the client is told when it starts: its EHLO name and, in tests only, the CAs it trusts instead of the system's. */
interface ClientOptions {
  heloName: string;
  ca?: string | string[] | undefined;
}

function open(route: SmtpRoute, { heloName, ca }: ClientOptions): SMTPConnection {
  // SNI carries names only (RFC 6066 section 3); an IP host is checked against the certificate's IP addresses.
  const servername = isIP(route.host) === 0 ? { servername: route.host } : {};
  const tlsRequired = route.tls?.required === true;
  const connection = new SMTPConnection({
    // A direct route's address passed the outbound address rules: connect there, never to the name.
    host: route.address ?? route.host,
    port: route.port,
    secure: route.secure === true,
    ...servername,
    // Credentials only over TLS: nodemailer then refuses a session without it before AUTH.
    requireTLS: tlsRequired && route.secure !== true,
    opportunisticTLS: !tlsRequired,
    name: heloName,
    connectionTimeout: CONNECT_TIMEOUT_MS,
    greetingTimeout: GREETING_TIMEOUT_MS,
    socketTimeout: SOCKET_TIMEOUT_MS,
    tls: { rejectUnauthorized: route.tls?.verify === true, ...servername, ...(ca === undefined ? {} : { ca }) },
    logger: false,
  });
  // Each transaction listens for errors while it runs; this listener keeps a late error (after the
  // transaction settled, or while the connection closes) from being an unhandled 'error' event.
  connection.on('error', () => undefined);
  return connection;
}

/**
 * The connection's TLS session, if any. Node checks the chain and the name even when it is told not to reject
 * (`authorized`), so an opportunistic session still says whether its certificate would have passed.
 */
function tlsOf(connection: SMTPConnection): TlsDetails | null {
  const socket = connection._socket as TLSSocket | false | null;
  if (!connection.secure || !socket || typeof socket.getCipher !== 'function') return null;
  // Both are null once a handshake failed (implicit TLS is `secure` from the start): no session to report.
  const cipher = socket.getCipher() as ReturnType<TLSSocket['getCipher']> | null;
  const version = socket.getProtocol();
  return cipher && version ? { version, cipher: cipher.standardName, verified: socket.authorized } : null;
}

/** How far one transaction got: the message's data began (the caller recorded it), all of it was handed over. */
interface Progress {
  dataStarted: boolean;
  /** All bytes handed to the connection: from here on the final dot may have reached the peer. */
  dataComplete: boolean;
}

function classify(err: SmtpError, route: SmtpRoute, progress: Progress): DeliveryResult {
  const detail = `${err.message}${err.response ? ` (${err.response.trim()})` : ''}`;
  // An MX host that fails the domain's enforced policy did not take the mail: its next MX host may (RFC 8461 section 5).
  if (route.mtaSts === 'enforce' && (err.code === 'ETLS' || (!progress.dataStarted && isTlsFailure(err)))) {
    return { type: 'deferred', code: null, response: `MTA-STS policy (enforce) requires verified TLS with ${route.host}, which failed: ${detail}`, refused: [], beforeMail: true };
  }
  // A relay that will not speak TLS (or whose certificate fails) before AUTH: retried, however it replied.
  if (err.code === 'ETLS' || (route.tls?.required && !progress.dataStarted && isTlsFailure(err))) {
    return { type: 'deferred', code: null, response: `TLS with the relay failed, so its credentials were not sent: ${detail}`, refused: [], beforeMail: false };
  }
  const code = typeof err.responseCode === 'number' ? err.responseCode : null;
  const response = err.response ?? err.message;
  if (progress.dataComplete && code === null) return { type: 'ambiguous', response: `connection lost after the end of DATA: ${err.message}` };
  if (code !== null && code >= 500) return { type: 'rejected', code, response, refused: refusals(err) };
  return { type: 'deferred', code, response, refused: refusals(err), beforeMail: err.command === 'CONN' || err.code === 'ECONNECTION' || err.code === 'ETIMEDOUT' || err.code === 'EDNS' };
}

/**
 * The message as a stream that goes out in chunks as the socket drains, so a peer that hangs up mid-message is
 * seen before our last byte (and the final dot) was handed over. Its first read waits for `onDataStart`.
 */
function messageStream(request: DeliveryRequest, progress: Progress): Readable {
  let offset = 0;
  const next = (): Buffer | null => {
    if (offset >= request.message.length) return null;
    const chunk = request.message.subarray(offset, offset + DATA_CHUNK_BYTES);
    offset += chunk.length;
    return chunk;
  };
  const message = new Readable({
    read() {
      if (!progress.dataStarted) {
        progress.dataStarted = true;
        // Hold the data until the caller's record of "DATA began" is durable.
        request.onDataStart().then(
          () => this.push(next()),
          (err: unknown) => this.destroy(err instanceof Error ? err : new Error(String(err))),
        );
        return;
      }
      this.push(next());
    },
  });
  message.once('end', () => {
    progress.dataComplete = true;
  });
  return message;
}

/**
 * RFC 3461 parameters for a send that asked for delivery notification: NOTIFY=SUCCESS,FAILURE on each RCPT, RET=HDRS
 * and ENVID on MAIL FROM. nodemailer adds them only when the peer's EHLO offers DSN; a peer without it gets the plain
 * envelope, as RFC 3461 section 4 requires, so the message still goes.
 */
function dsnOf(request: DeliveryRequest): { dsn?: { ret: string; envid: string; notify: string[] } } {
  if (!request.notifyDelivery) return {};
  return { dsn: { ret: 'HDRS', envid: request.notifyDelivery.envelopeId, notify: ['SUCCESS', 'FAILURE'] } };
}

/** One transaction over `cached`'s connection, or over a new one. */
function transact(request: DeliveryRequest, cached: Cached | undefined, cache: ConnectionCache, options: ClientOptions): Promise<{ result: DeliveryResult; retryFresh: boolean }> {
  const { route } = request;
  const connection = cached?.connection ?? open(route, options);
  const reused = cached !== undefined;
  return new Promise((resolve) => {
    const progress: Progress = { dataStarted: false, dataComplete: false };
    let settled = false;
    const finish = (result: DeliveryResult, keep = false, retryFresh = false) => {
      if (settled) return;
      settled = true;
      connection.off('error', onError);
      connection.off('end', onEnd);
      result.tls = tlsOf(connection);
      if (keep) cache.park(keyOf(route), connection, (cached?.messages ?? 0) + 1);
      else connection.close();
      resolve({ result, retryFresh });
    };
    // A cached connection the peer closed meanwhile fails before our first byte of data: try a new one.
    const onError = (err: SmtpError) => finish(classify(err, route, progress), false, reused && !progress.dataStarted && typeof err.responseCode !== 'number');
    const onEnd = () => {
      if (settled) return;
      if (reused && !progress.dataStarted) finish({ type: 'deferred', code: null, response: 'connection closed', refused: [], beforeMail: true }, false, true);
      else finish(progress.dataComplete ? { type: 'ambiguous', response: 'connection closed after the end of DATA' } : { type: 'deferred', code: null, response: 'connection closed', refused: [], beforeMail: !progress.dataStarted });
    };
    connection.on('error', onError);
    connection.on('end', onEnd);

    const send = () =>
      connection.send({ from: request.mailFrom, to: request.recipients, ...dsnOf(request) }, messageStream(request, progress), (err, info) => {
        if (err) {
          onError(err);
          return;
        }
        const refusedErrors = refusals({ name: '', message: '', rejectedErrors: (info.rejectedErrors ?? []) });
        // 250 after the final dot: the session is ready for the next MAIL FROM.
        finish({ type: 'sent', accepted: info.accepted.map(String), refused: refusedErrors, response: info.response }, true);
      });

    if (reused) {
      send();
      return;
    }
    connection.connect(() => {
      if (route.auth) connection.login({ user: route.auth.user, pass: route.auth.pass }, (err) => (err ? onError(err) : send()));
      else send();
    });
  });
}

/**
 * The outbound SMTP client (nodemailer's SMTPConnection): STARTTLS whenever the peer offers it
 * (opportunistic; certificates of MX hosts are checked only where the domain's MTA-STS policy enforces it, and
 * otherwise only reported); a relay with credentials gets TLS required before AUTH and its certificate verified (the
 * route's `tls`), and a message stream that asks the caller to record "DATA began" before its first byte,
 * so that a lost connection after that point is known to be ambiguous.
 *
 * After a transaction the peer answered 250, the connection waits up to IDLE_MS for the next message
 * to the same host, address, port and credentials (a connection cache, as Postfix keeps one): a worker
 * sending many messages to one domain pays for the TCP and TLS handshakes and the greeting once, not
 * per message. A cached connection that turns out dead before any byte of the message went out is
 * replaced by a new one for the same attempt.
 *
 * `ca` replaces the system's CAs for every connection: tests pass their own CA; a service never does (an operator
 * who needs a private CA adds it with NODE_EXTRA_CA_CERTS).
 */
export function createSmtpDeliverer(options: ClientOptions): SmtpDelivererHandle {
  const cache = createConnectionCache();
  return {
    async deliver(request) {
      const cached = cache.take(keyOf(request.route));
      const first = await transact(request, cached, cache, options);
      if (cached && first.retryFresh) return (await transact(request, undefined, cache, options)).result;
      return first.result;
    },
    close() {
      cache.close();
    },
  };
}
