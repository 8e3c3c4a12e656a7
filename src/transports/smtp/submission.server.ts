import { tmpdir } from 'node:os';
import ipaddr from 'ipaddr.js';
import { SMTPServer, type SMTPServerAddress, type SMTPServerAuthentication, type SMTPServerAuthenticationResponse, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import { createByteBudget } from '../../lib/byte-budget.js';
import { isDomainError } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import type { CertificateSource } from '../../lib/tls-certificates.js';
import type { AppPasswordLogin, AppPasswordService } from '../../modules/app-passwords/app-password.service.js';
import type { AppPasswordSessions } from '../../modules/app-passwords/app-password-sessions.js';
import type { SendingService } from '../../modules/sending/sending.service.js';
import type { TenantContext } from '../../modules/tenancy/tenancy.types.js';
import { normalizeEmail } from '../../modules/tenancy/validation.js';
import { MAX_RECIPIENTS, SMTP_CLOSE_TIMEOUT_MS, SPOOL_MEMORY_BYTES } from './inbound.server.js';
import { createSessionSlots, DEFAULT_IDLE_MS, DEFAULT_MAX_COMMANDS, DEFAULT_MAX_SESSION_MS, type SessionSlots, type SmtpConnection } from './session-slots.js';
import { smtpListener, type SmtpListener } from './smtp-listener.js';
import { MessageSpool } from './spool.js';

/** Messages of the largest size that may be queued at once (their bytes are held until the send is written). */
const LARGEST_MESSAGES_IN_PROGRESS = 4;
const MIN_BYTES_IN_PROGRESS = 64 * 1024 * 1024;

/** `loopback`: AUTH without TLS is also allowed from 127.0.0.0/8 and ::1 (the sandbox, a local relay). */
export type PlaintextAuth = 'never' | 'loopback';

export interface SubmissionOptions {
  appPasswords: Pick<AppPasswordService, 'verify'>;
  sessions: Pick<AppPasswordSessions, 'watch' | 'isLive'>;
  sending: Pick<SendingService, 'enqueueRaw' | 'checkRecipient'>;
  logger: Logger;
  hostname: string;
  /** Largest message accepted (SIZE; 552 past it): the inbound limit. */
  maxSize: number;
  /** `true`: TLS from the first byte (port 465, RFC 8314); `false`: STARTTLS (port 587, RFC 6409). */
  implicitTls: boolean;
  /**
   * The certificate the listener follows as it is replaced (lib/tls-certificates.ts); without one (or while it has
   * none yet) STARTTLS is not offered and only loopback clients may log in (and only when plaintext is allowed).
   */
  tls?: CertificateSource | undefined;
  plaintextAuth: PlaintextAuth;
  /** Session caps, shared by the two listeners of a process (createSessionSlots). */
  slots: SessionSlots;
  closeTimeoutMs?: number;
  idleMs?: number;
  spoolDir?: string;
}

export type SubmissionServer = SmtpListener;

/** An SMTP reply error: smtp-server sends `responseCode` and the message as the reply text. */
function reply(code: number, text: string): Error & { responseCode: number } {
  return Object.assign(new Error(text), { responseCode: code });
}

export function isLoopback(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === 'loopback';
}

/** The session caps of the submission listeners: the inbound settings, counted apart from inbound sessions. */
export function createSubmissionSlots(options: { maxClients: number; maxClientsPerIp: number; maxSessionMs?: number; maxCommands?: number; idleMs?: number; logger: Logger }): SessionSlots {
  return createSessionSlots({
    maxClients: options.maxClients,
    maxPerGroup: options.maxClientsPerIp,
    maxSessionMs: options.maxSessionMs ?? DEFAULT_MAX_SESSION_MS,
    maxCommands: options.maxCommands ?? DEFAULT_MAX_COMMANDS,
    idleMs: options.idleMs ?? DEFAULT_IDLE_MS,
    logger: options.logger,
  });
}

/** What a logged-in session acts as. */
interface Login {
  credential: Extract<AppPasswordLogin, { ok: true }>;
  tenant: TenantContext;
  unwatch: () => void;
}

/** The SMTP reply to a refusal of the sending service (a recipient at RCPT, the message at the end of DATA). */
export function refusalReply(err: unknown, recipient?: string): (Error & { responseCode: number }) | null {
  if (!isDomainError(err)) return null;
  const who = recipient === undefined ? '' : `<${recipient}>: `;
  if (err.code === 'quota_exceeded') {
    const named = err.fields?.quota;
    const quota = typeof named === 'string' ? named : 'a quota';
    // Waiting frees an hourly or daily send quota; a full mailbox needs a delete: both are the client's to retry.
    return quota === 'stored_bytes' ? reply(452, `4.2.2 Quota stored_bytes reached: ${err.detail}`) : reply(451, `4.7.1 Quota ${quota} reached: ${err.detail}`);
  }
  switch (err.code) {
    case 'recipient_suppressed':
      return reply(550, `5.7.1 ${who}suppressed by this workspace (hard bounce, complaint or added by hand)`);
    case 'recipient_blocked':
      return reply(550, `5.7.1 ${who}refused by the workspace's outbound lists`);
    case 'invalid_recipient':
      return reply(553, `5.1.3 ${who}not a valid address`);
    case 'too_many_recipients':
      return reply(452, `4.5.3 Too many recipients (at most ${MAX_RECIPIENTS} per message)`);
    case 'domain_not_verified':
    case 'mailbox_not_found':
      return reply(550, `5.7.1 ${err.detail}`);
    default:
      return err.kind === 'invalid' || err.kind === 'unprocessable' ? reply(554, `5.6.0 ${err.detail}`) : null;
  }
}

/**
 * SMTP submission (RFC 6409) for mail clients: AUTH PLAIN or LOGIN with the mailbox address and an app password,
 * only over TLS (STARTTLS or implicit) unless plaintext is allowed from loopback; MAIL FROM must be the logged-in
 * mailbox; each recipient is judged at RCPT as a send judges it; the message then takes the send path
 * (`sending.enqueueRaw`). A session ends when its app password does (revoked, or its mailbox, maker or workspace gone).
 */
export function createSubmissionServer(options: SubmissionOptions): SubmissionServer {
  const { logger, maxSize, sending, slots } = options;
  const logins = new Map<string, Login>();
  const recipients = new WeakMap<SMTPServerSession, string[]>();
  const budget = createByteBudget(Math.max(MIN_BYTES_IN_PROGRESS, LARGEST_MESSAGES_IN_PROGRESS * maxSize));
  const spoolOptions = { memoryBytes: SPOOL_MEMORY_BYTES, maxBytes: maxSize, dir: options.spoolDir ?? tmpdir() };
  const connectionOf = (id: string): SmtpConnection | undefined => [...server.connections].find((c) => c.id === id);
  /** Whether AUTH may be used on this session now. */
  const authAllowed = (session: SMTPServerSession) => session.secure || (options.plaintextAuth === 'loopback' && isLoopback(session.remoteAddress));
  /** smtp-server's per-session list of disabled commands (not in its type declarations). */
  const disable = (session: SMTPServerSession, commands: string[]) => Object.assign(session, { disabledCommands: commands });

  function endLogin(id: string): void {
    logins.get(id)?.unwatch();
    logins.delete(id);
  }

  /** The credential ended while the session was open: tell the client and hang up. */
  function credentialEnded(id: string): void {
    const connection = connectionOf(id);
    logger.info({ session: id }, 'submission session closed: its app password ended');
    endLogin(id);
    connection?.send(421, '4.7.0 The app password of this session was revoked, closing connection', false);
    connection?.close();
  }

  async function authenticate(auth: SMTPServerAuthentication, session: SMTPServerSession): Promise<SMTPServerAuthenticationResponse> {
    if (!authAllowed(session)) throw reply(530, '5.7.0 Must issue a STARTTLS command first');
    const result = await options.appPasswords.verify(auth.username ?? '', auth.password ?? '', session.remoteAddress);
    if (!result.ok) {
      if (result.reason === 'throttled') throw reply(454, `4.7.0 Too many failed logins, try again in ${result.retryAfterSeconds ?? 60} s`);
      if (result.reason === 'suspended') throw reply(525, '5.7.13 The workspace of this mailbox is suspended');
      throw reply(535, '5.7.8 Authentication credentials invalid');
    }
    const tenant: TenantContext = { workspaceId: result.workspaceId, role: 'member', userId: result.userId, actor: { kind: 'user', id: result.userId, email: null, ip: session.remoteAddress } };
    const unwatch = options.sessions.watch(result, () => credentialEnded(session.id));
    logins.set(session.id, { credential: result, tenant, unwatch });
    return { user: result.mailbox };
  }

  const certificates = options.tls ?? null;
  const initialPem = certificates?.pem() ?? null;
  const server = new SMTPServer({
    name: options.hostname,
    banner: 'Mailroom submission',
    size: maxSize,
    secure: options.implicitTls,
    ...(initialPem ? { key: initialPem.key, cert: initialPem.cert } : {}),
    // Implicit TLS before the source has a certificate fails the handshake rather than present smtp-server's own key.
    ...(certificates && options.implicitTls ? { SNICallback: certificates.SNICallback.bind(certificates) } : {}),
    // Without a certificate STARTTLS cannot be offered; only loopback logins (when allowed) remain.
    disabledCommands: initialPem ? [] : ['STARTTLS'],
    authMethods: ['PLAIN', 'LOGIN'],
    authOptional: false,
    authRequiredMessage: '5.7.0 Authentication required',
    // The check is ours (authAllowed): smtp-server's allows or refuses for every client alike.
    allowInsecureAuth: true,
    disableReverseLookup: true,
    closeTimeout: options.closeTimeoutMs ?? SMTP_CLOSE_TIMEOUT_MS,
    socketTimeout: options.idleMs ?? DEFAULT_IDLE_MS,
    logger: false,

    onConnect(session, callback) {
      const connection = connectionOf(session.id);
      const refusal = connection ? slots.admit(connection) : '4.3.0 Temporary failure, please try again later';
      if (refusal) logger.warn({ ip: session.remoteAddress, refusal }, 'submission session refused');
      // AUTH is not offered where it may not be used (RFC 3207 section 4: no credentials before TLS), nor STARTTLS
      // while the source has no certificate (never smtp-server's built-in test key).
      else if (!authAllowed(session)) disable(session, certificates?.current() ? ['AUTH'] : ['AUTH', 'STARTTLS']);
      callback(refusal ? reply(421, refusal) : null);
    },

    onSecure(_socket, session, callback) {
      disable(session, []);
      callback();
    },

    onClose(session) {
      slots.release(session.id);
      endLogin(session.id);
    },

    onAuth(auth, session, callback) {
      authenticate(auth, session).then(
        (response) => callback(null, response),
        (err: unknown) => {
          if (!(err instanceof Error && 'responseCode' in err)) logger.error({ err }, 'submission login failed');
          callback(err instanceof Error && 'responseCode' in err ? err : reply(454, '4.7.0 Temporary authentication failure, try again later'));
        },
      );
    },

    onMailFrom(address: SMTPServerAddress, session: SMTPServerSession, callback) {
      const login = logins.get(session.id);
      recipients.set(session, []);
      if (!login) return callback(reply(530, '5.7.0 Authentication required'));
      if (normalizeEmail(address.address) !== login.credential.mailbox) {
        return callback(reply(553, `5.7.1 <${address.address}>: sender address not owned by ${login.credential.mailbox}`));
      }
      callback();
    },

    onRcptTo(address: SMTPServerAddress, session: SMTPServerSession, callback) {
      const login = logins.get(session.id);
      const accepted = recipients.get(session) ?? [];
      if (!login) return callback(reply(530, '5.7.0 Authentication required'));
      if (accepted.length >= MAX_RECIPIENTS) return callback(reply(452, `4.5.3 Too many recipients (at most ${MAX_RECIPIENTS} per message)`));
      const recipient = normalizeEmail(address.address);
      if (!recipient) return callback(reply(553, `5.1.3 <${address.address}>: not a valid address`));
      sending.checkRecipient(login.tenant, login.credential.mailbox, recipient).then(
        () => {
          if (!accepted.includes(recipient)) accepted.push(recipient);
          recipients.set(session, accepted);
          callback();
        },
        (err: unknown) => {
          const refusal = refusalReply(err, recipient);
          if (!refusal) logger.error({ err }, 'submission recipient check failed');
          callback(refusal ?? reply(451, '4.3.0 Temporary failure, please try again later'));
        },
      );
    },

    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback) {
      const spool = new MessageSpool(spoolOptions);
      slots.dataStarted(session.id);
      stream.on('data', (chunk: Buffer) => {
        const written = spool.add(chunk);
        if (!written) return;
        stream.pause();
        void written.then(() => stream.resume());
      });
      stream.on('error', (err: Error) => {
        void spool.discard();
        slots.answered(session.id, () => callback(err));
      });
      stream.on('end', () => {
        slots.dataReceived(session.id);
        const answer = (result: Error | null, message?: string) => void spool.discard().finally(() => slots.answered(session.id, () => callback(result, message)));
        if (stream.sizeExceeded) return answer(reply(552, `5.3.4 Message too big (at most ${maxSize} bytes)`));
        submit(spool, session).then(
          (id) => answer(null, `2.0.0 Queued as ${id}`),
          (err: unknown) => {
            const refusal = refusalReply(err);
            if (!refusal) logger.error({ err }, 'submitting a message failed');
            answer(refusal ?? reply(451, '4.3.0 Could not queue the message, please try again later'));
          },
        );
      });
    },
  });

  /** Queue a received message on the send path, within the byte budget; the answer names the message id. */
  async function submit(spool: MessageSpool, session: SMTPServerSession): Promise<string> {
    const login = logins.get(session.id);
    if (!login) throw reply(530, '5.7.0 Authentication required');
    // The credential is read once more before the message is taken: a revocation another process has not yet
    // announced still stops it.
    if (!(await options.sessions.isLive(login.credential.appPasswordId))) throw reply(535, '5.7.8 Authentication credentials no longer valid');
    const release = await budget.acquire(spool.size);
    try {
      const raw = await spool.read();
      const queued = await sending.enqueueRaw(login.tenant, { mailbox: login.credential.mailbox, raw, recipients: recipients.get(session) ?? [] });
      return queued.message_id;
    } finally {
      release();
    }
  }

  return smtpListener(server, {
    logger,
    errorMessage: 'submission server error',
    certificates,
    beforeClose: () => {
      for (const id of [...logins.keys()]) endLogin(id);
    },
  });
}
