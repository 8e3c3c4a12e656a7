import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';

export type PeerBehaviour = 'accept' | 'tempfail' | 'reject-rcpt' | 'reject-data' | 'drop-at-rcpt' | 'drop-after-dot' | 'hang-after-dot' | 'hang-at-rcpt';

export interface ReceivedMail {
  mailFrom: string;
  recipients: string[];
  raw: Buffer;
  secure: boolean;
  /** The SMTP session (connection) it came over. */
  session: string;
  /** The parameters of MAIL FROM and of each RCPT TO (in `recipients`' order), keys upper case; {} when none. */
  mailParams: Record<string, string | true>;
  rcptParams: Array<Record<string, string | true>>;
}

/** A real SMTP peer on loopback (smtp-server) whose answers a test sets: the far end of outbound delivery. */
export interface SmtpPeer {
  port: number;
  behaviour: PeerBehaviour;
  /** Recipients refused at RCPT with 550 (in any behaviour). */
  refuse: Set<string>;
  /** Messages received completely (up to the final dot), whatever was answered. */
  received: ReceivedMail[];
  /** Messages answered 250. */
  accepted: ReceivedMail[];
  /** Recipients whose RCPT was left unanswered ('hang-at-rcpt'): the client is stuck before DATA. */
  held: string[];
  /** Sessions opened to it (connections past the greeting), whatever happened in them. */
  connections: number;
  /** AUTH attempts it saw, by user name (in order); a peer without `auth` refuses AUTH altogether. */
  auths: string[];
  /** Hang up on the next MAIL FROM (once), as a server that timed the session out would. */
  dropNextMailFrom: boolean;
  /** Hang up every open connection now (as a server does with idle clients). */
  dropConnections(): void;
  /** Answer every held RCPT now (250, or 550 for a refused recipient), letting those clients go on to DATA. */
  releaseHeld(): void;
  close(): Promise<void>;
}

/** How the peer speaks: plain by default; a relay takes `auth` and may offer STARTTLS (`tls`) or be implicit TLS (`secure`). */
export interface PeerOptions {
  tls?: { key: string; cert: string };
  /** Certificates by the name the client asks for (SNI); others get `tls`'s. */
  sni?: Record<string, { key: string; cert: string }>;
  /** Implicit TLS from the first byte (smtps), with `tls`'s certificate. */
  secure?: boolean;
  /** The one user and password it accepts; offered with or without TLS (a badly set up relay). */
  auth?: { user: string; pass: string };
  /** Offer DSN (RFC 3461) in its EHLO answer; smtp-server offers none unless told. */
  dsn?: boolean;
}

export async function startSmtpPeer(options: PeerOptions = {}): Promise<SmtpPeer> {
  const peer = { connections: 0, auths: [] as string[], dropNextMailFrom: false, behaviour: 'accept' as PeerBehaviour, refuse: new Set<string>(), received: [] as ReceivedMail[], accepted: [] as ReceivedMail[], held: [] as string[] };
  const heldAnswers: Array<() => void> = [];
  const hangUp = (session: SMTPServerSession) => {
    // smtp-server keeps each connection (whose id is the session id) and its socket in server.connections.
    for (const conn of (server as unknown as { connections: Set<{ id: string; _socket: { destroy(): void } }> }).connections) {
      if (conn.id === session.id) conn._socket.destroy();
    }
  };
  const server: SMTPServer = new SMTPServer({
    authOptional: true,
    disabledCommands: [...(options.auth ? [] : ['AUTH']), ...(options.tls && !options.secure ? [] : ['STARTTLS'])],
    ...(options.tls ? { key: options.tls.key, cert: options.tls.cert } : {}),
    ...(options.sni ? { sniOptions: options.sni } : {}),
    secure: options.secure === true,
    allowInsecureAuth: true,
    disableReverseLookup: true,
    hideDSN: options.dsn !== true,
    logger: false,
    onConnect(_session, callback) {
      peer.connections += 1;
      callback();
    },
    onAuth(auth, _session, callback) {
      peer.auths.push(auth.username ?? '');
      if (auth.username === options.auth?.user && auth.password === options.auth?.pass) callback(null, { user: auth.username });
      else callback(Object.assign(new Error('5.7.8 authentication failed'), { responseCode: 535 }));
    },
    onMailFrom(_address, session, callback) {
      if (peer.dropNextMailFrom) {
        peer.dropNextMailFrom = false;
        hangUp(session);
        return;
      }
      callback();
    },
    onRcptTo(address, session, callback) {
      if (peer.behaviour === 'drop-at-rcpt') {
        hangUp(session); // gone before DATA: the message cannot have been taken
        return;
      }
      const answer = () => {
        if (peer.refuse.has(address.address.toLowerCase()) || peer.behaviour === 'reject-rcpt') {
          callback(Object.assign(new Error('5.1.1 no such user here'), { responseCode: 550 }));
          return;
        }
        callback();
      };
      if (peer.behaviour === 'hang-at-rcpt') {
        // No answer until releaseHeld(), if ever: the client waits before DATA.
        peer.held.push(address.address.toLowerCase());
        heldAnswers.push(answer);
        return;
      }
      answer();
    },
    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
      });
      stream.on('end', () => {
        const mail: ReceivedMail = {
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          recipients: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks),
          secure: session.secure,
          session: session.id,
          mailParams: (session.envelope.mailFrom && session.envelope.mailFrom.args) || {},
          rcptParams: session.envelope.rcptTo.map((r) => r.args || {}),
        };
        peer.received.push(mail);
        switch (peer.behaviour) {
          case 'tempfail':
            callback(Object.assign(new Error('4.3.0 try again later'), { responseCode: 451 }));
            return;
          case 'reject-data':
            callback(Object.assign(new Error('5.7.1 message refused'), { responseCode: 554 }));
            return;
          case 'drop-after-dot':
            hangUp(session);
            return;
          case 'hang-after-dot':
            return; // never answer
          default:
            peer.accepted.push(mail);
            callback(null, '2.0.0 queued as peer-1');
        }
      });
    },
  });
  // A client killed mid-session (the crash tests' SIGKILL) may reset its connection: smtp-server reports that as an
  // 'error' event, which must not become an uncaught exception of the test process. The peer just carries on, as
  // a real server would.
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.server.address() as AddressInfo).port;
  return Object.assign(peer, {
    port,
    dropConnections: () => {
      for (const conn of (server as unknown as { connections: Set<{ _socket: { destroy(): void } }> }).connections) conn._socket.destroy();
    },
    releaseHeld: () => {
      for (const answer of heldAnswers.splice(0)) answer();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}
