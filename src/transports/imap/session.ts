/**
 * One IMAP connection: reads commands with the protocol layer's CommandReader (one command at a time: the socket is
 * paused above a bound while a command runs), answers with its ResponseWriter, and keeps the state RFC 9051 names
 * (not authenticated, authenticated, selected, logout). What the mailbox holds comes from the imap-access service.
 */
import type { Socket } from 'node:net';
import { TLSSocket, type SecureContext } from 'node:tls';
import type { ImapAccessService, ImapAccount } from '../../modules/imap-access/imap-access.service.js';
import type { Logger } from '../../lib/logger.js';
import type { Release } from '../../lib/fair-gate.js';
import type { Metrics } from '../../lib/metrics.js';
import { CommandReader, ResponseWriter, astringText, atomText, type Command, type ReaderEvent, type ResponseCode } from './protocol/index.js';
import type { SelectedCommands } from './selected.js';
import { authenticatedCommand } from './mailboxes.js';
import type { ImapShares } from './shares.js';

export interface SessionOptions {
  access: ImapAccessService;
  logger: Logger;
  /** The largest APPEND literal (the SMTP max message size). */
  appendLimit: number;
  /** Whether LOGIN and AUTHENTICATE PLAIN are allowed without TLS on this connection (loopback when configured). */
  plaintextAllowed: boolean;
  /** The certificate for STARTTLS; null: STARTTLS is not offered. */
  startTls: (() => SecureContext | null) | null;
  /** Implicit TLS (the IMAPS listener). */
  secure: boolean;
  idleMs: number;
  remoteAddress: string;
  /** The workspace's share of sessions (checked at login) and of running commands. */
  shares: ImapShares;
  /** How often an IDLE looks at its folder without a signal. */
  idlePollMs: number;
  metrics: Pick<Metrics, 'imapLogin' | 'imapCommand' | 'imapIdle' | 'imapIdleLook'>;
  onClose: () => void;
}

/** Bytes queued in the reader above which the socket is paused until the queue is worked down. */
const READ_PAUSE_BYTES = 256 * 1024;
/** Literals of commands other than APPEND (a search string, a password). */
const SMALL_LITERAL = 64 * 1024;
/** FETCHes already waiting behind one that are answered with it (see `fetchRun`). */
const FETCH_RUN = 128;
/** Answers held back during a FETCH run above which they are written (memory follows this, not the run). */
const HELD_BYTES = 256 * 1024;

const isFetch = (cmd: Command): boolean => cmd.name === 'FETCH' || cmd.name === 'UID FETCH';

export type State = 'not-authenticated' | 'authenticated' | 'selected' | 'logout';

export class ImapSession {
  state: State = 'not-authenticated';
  account: ImapAccount | null = null;
  readonly enabled = new Set<string>();
  selected: SelectedCommands | null = null;
  readonly writer = new ResponseWriter();
  private socket: Socket;
  private readonly reader: CommandReader;
  private busy = false;
  private tls: boolean;
  private revoked = false;
  private unwatch: (() => void) | null = null;
  /** The session's place in its workspace's share, held from login to close. */
  private place: Release | null = null;
  /** The command being answered, as the metrics name it. */
  private running: string | null = null;
  private lineWaiter: ((line: Buffer | null) => void) | null = null;
  private closed = false;
  /** During a FETCH run: answers not yet written (written together at its end, or above HELD_BYTES). */
  private held: Buffer[] | null = null;
  private heldBytes = 0;

  constructor(socket: Socket, readonly options: SessionOptions) {
    this.socket = socket;
    this.tls = options.secure;
    this.reader = new CommandReader({ maxLiteralSize: (name) => (name === 'APPEND' ? options.appendLimit : SMALL_LITERAL) });
    this.attach(socket);
  }

  /** The greeting (RFC 9051: untagged OK with the capabilities). */
  start(): void {
    this.send(this.writer.status('OK', 'Mailroom ready.', { name: 'CAPABILITY', args: this.capabilities().map((atom) => ({ atom })) }));
  }

  get access(): ImapAccessService {
    return this.options.access;
  }

  capabilities(): string[] {
    const caps = ['IMAP4rev1', 'LITERAL+', 'SASL-IR', 'ID', 'ENABLE', 'IDLE', 'NAMESPACE', 'UNSELECT', 'CHILDREN', 'SPECIAL-USE', 'LIST-EXTENDED', 'CONDSTORE', 'QRESYNC', 'ESEARCH', 'SEARCHRES', 'BINARY', 'UTF8=ACCEPT', 'STATUS=SIZE', 'UIDPLUS', 'MOVE', `APPENDLIMIT=${this.options.appendLimit}`];
    if (this.state === 'not-authenticated') {
      if (!this.tls && this.options.startTls?.()) caps.push('STARTTLS');
      if (this.loginAllowed()) caps.push('AUTH=PLAIN');
      else caps.push('LOGINDISABLED');
    }
    return caps;
  }

  /**
   * A command that enables CONDSTORE (RFC 7162 3.1) does it here: with a folder selected, its HIGHESTMODSEQ is
   * announced then, as Dovecot does, so the client has a starting point for the MODSEQs it will now be sent.
   */
  async enableCondstore(): Promise<void> {
    if (this.enabled.has('CONDSTORE')) return;
    this.enabled.add('CONDSTORE');
    if (!this.selected || !this.account) return;
    const status = await this.access.status(this.account, this.selected.folder);
    this.send(this.writer.status('OK', 'Highest', { name: 'HIGHESTMODSEQ', args: [status.highestmodseq] }));
  }

  loginAllowed(): boolean {
    return this.tls || this.options.plaintextAllowed;
  }

  /**
   * Its credential no longer holds: a session waiting for a command (or in IDLE) is ended now; one running a command
   * is ended before its next, so a BYE never lands inside a command's responses.
   */
  credentialEnded(): void {
    this.revoked = true;
    if (!this.busy || this.lineWaiter) this.bye('The app password was revoked.', { name: 'UNAVAILABLE' });
  }

  send(w: ResponseWriter): boolean {
    if (this.closed) return true;
    if (!this.held) return this.socket.write(w.take());
    this.hold(w.take());
    return true;
  }

  /** Write bytes made elsewhere (FETCH data), pieces in one write; waits for the socket to drain above its buffer. */
  async sendBytes(b: Buffer | readonly Buffer[]): Promise<void> {
    if (this.closed) return;
    const pieces = Buffer.isBuffer(b) ? [b] : b;
    if (pieces.length === 0) return;
    if (!this.held) return this.write(pieces);
    for (const piece of pieces) this.hold(piece);
    if (this.heldBytes >= HELD_BYTES) await this.writeHeld();
  }

  private hold(b: Buffer): void {
    this.held!.push(b);
    this.heldBytes += b.length;
  }

  private async writeHeld(): Promise<void> {
    const pieces = this.held;
    if (!pieces || pieces.length === 0) return;
    this.held = [];
    this.heldBytes = 0;
    await this.write(pieces);
  }

  private async write(pieces: readonly Buffer[]): Promise<void> {
    if (this.closed) return;
    let room = true;
    this.socket.cork();
    for (const piece of pieces) room = this.socket.write(piece);
    this.socket.uncork();
    if (!room) await drained(this.socket);
  }

  tagged(tag: string, status: 'OK' | 'NO' | 'BAD', text: string, code?: ResponseCode): void {
    this.options.metrics.imapCommand(this.running ?? 'UNKNOWN', status);
    this.send(this.writer.tagged(tag, status, text, code));
  }

  /**
   * IDLE (RFC 2177, RFC 9051 6.3.13), in the authenticated or selected state: `watch` starts reporting changes, then
   * `+ idling`, then wait for DONE; its stop waits for a report under way, so the tagged answer comes last.
   */
  async idle(cmd: Command, watch: () => Promise<() => Promise<void>>): Promise<void> {
    const stop = await watch();
    this.send(this.writer.continuation('idling'));
    this.options.metrics.imapIdle(1);
    try {
      const line = await this.readLine();
      await stop();
      if (line === null) return;
      if (line.toString('latin1').trim().toUpperCase() === 'DONE') this.tagged(cmd.tag, 'OK', 'Idle completed.');
      else this.tagged(cmd.tag, 'BAD', 'Expected DONE.');
    } finally {
      void stop();
      this.options.metrics.imapIdle(-1);
    }
  }

  /** A raw line from the client (an AUTHENTICATE response); null when the connection closed. */
  readLine(): Promise<Buffer | null> {
    const ev = this.reader.readLine();
    if (ev?.kind === 'line') return Promise.resolve(ev.line);
    return new Promise((resolve) => (this.lineWaiter = resolve));
  }

  /** Say BYE and close. */
  bye(text: string, code?: ResponseCode): void {
    if (this.closed) return;
    this.send(this.writer.status('BYE', text, code));
    this.end();
  }

  end(): void {
    if (this.closed) return;
    // What a FETCH run held back goes before the end (a BYE among it).
    if (this.held) for (const piece of this.held) this.socket.write(piece);
    this.held = null;
    this.closed = true;
    this.state = 'logout';
    this.leave();
    this.socket.end();
    setTimeout(() => this.socket.destroy(), 2000).unref();
  }

  /** Give back what a logged-in session holds: its credential's watch and its place in the workspace's share. */
  private leave(): void {
    this.unwatch?.();
    this.unwatch = null;
    this.place?.();
    this.place = null;
  }

  /** The account is logged in: watch its credential. */
  loggedIn(account: ImapAccount): void {
    this.account = account;
    this.state = 'authenticated';
    this.unwatch = this.access.watch(account, () => this.credentialEnded());
  }

  private attach(socket: Socket): void {
    socket.setTimeout(this.options.idleMs);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('timeout', () => this.bye('Disconnected for inactivity.'));
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      if (this.socket !== socket) return;
      this.closed = true;
      this.leave();
      this.lineWaiter?.(null);
      this.options.onClose();
    });
  }

  private onData(chunk: Buffer): void {
    this.reader.push(chunk);
    if (this.reader.buffered > READ_PAUSE_BYTES) this.socket.pause();
    if (this.lineWaiter) {
      const ev = this.reader.readLine();
      if (ev?.kind === 'line') {
        const w = this.lineWaiter;
        this.lineWaiter = null;
        w(ev.line);
      }
      return;
    }
    void this.pump();
  }

  private async pump(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      for (let ev = this.reader.next(); ev && !this.closed; ev = this.closed ? null : this.reader.next()) {
        if (ev.kind === 'command' && this.selected && isFetch(ev.command)) {
          const [run, after] = this.fetchRun(ev.command);
          await this.commands(run);
          if (!after || this.closed) continue;
          ev = after;
        }
        await this.event(ev);
      }
    } catch (err) {
      this.options.logger.error({ err }, 'imap session failed');
      this.bye('Internal error.', { name: 'SERVERBUG' });
    } finally {
      this.busy = false;
      if (!this.closed) this.socket.resume();
    }
  }

  private async event(ev: ReaderEvent): Promise<void> {
    switch (ev.kind) {
      case 'continue':
        this.send(this.writer.continuation('OK'));
        return;
      case 'bad':
        if (ev.tag === null) this.send(this.writer.status('BAD', ev.text));
        else if (ev.code === 'TOOBIG') this.tagged(ev.tag, 'NO', ev.text, { name: 'TOOBIG' });
        else this.tagged(ev.tag, 'BAD', ev.text);
        if (ev.fatal) this.bye('Too much data.');
        return;
      case 'line':
        return;
      case 'command':
        return this.commands([ev.command]);
    }
  }

  /**
   * A FETCH and the FETCHes already read behind it, up to FETCH_RUN, and the event that ended the run (if one was
   * read). A client that pulls one message a command (mbsync) pipelines them: answered as a run, they take one turn,
   * one read of their messages and one write, where one at a time each paid a statement and two writes.
   */
  private fetchRun(first: Command): [Command[], ReaderEvent | null] {
    const run = [first];
    while (run.length < FETCH_RUN) {
      const ev = this.reader.next();
      if (ev?.kind !== 'command' || !isFetch(ev.command)) return [run, ev];
      run.push(ev.command);
    }
    return [run, null];
  }

  /**
   * Commands (one, or a FETCH run) with one turn at the workspace's share of running commands once logged in (IDLE
   * and LOGOUT wait for the client, not the database: they take none).
   */
  private async commands(cmds: readonly Command[]): Promise<void> {
    const name = cmds[0]!.name;
    const workspaceId = this.account?.workspaceId;
    const turn = workspaceId === undefined || name === 'IDLE' || name === 'LOGOUT' ? null : await this.options.shares.commands.acquire(workspaceId);
    try {
      if (cmds.length === 1) return await this.one(cmds[0]!);
      this.held = [];
      this.selected?.readAhead(cmds);
      for (const cmd of cmds) await this.one(cmd);
    } finally {
      this.selected?.dropReadAhead();
      await this.writeHeld();
      this.held = null;
      turn?.();
    }
  }

  private async one(cmd: Command): Promise<void> {
    this.running = KNOWN.has(cmd.name) ? cmd.name : 'UNKNOWN';
    try {
      // Ended (revoked, shut down) while waiting for its turn: nothing to answer.
      if (!this.closed) await this.dispatch(cmd);
    } finally {
      this.running = null;
    }
  }

  private async dispatch(cmd: Command): Promise<void> {
    if (this.revoked) return this.bye('The app password was revoked.', { name: 'UNAVAILABLE' });
    const common = await this.anyState(cmd);
    if (common) return;
    if (this.state === 'not-authenticated') return this.notAuthenticated(cmd);
    if (this.selected && (await this.selected.command(cmd))) return;
    if (cmd.name === 'IDLE' && !this.selected) return this.idle(cmd, async () => async () => undefined);
    if (await authenticatedCommand(this, cmd)) return;
    const known = KNOWN.has(cmd.name);
    this.tagged(cmd.tag, 'BAD', known ? 'Command not allowed in this state.' : 'Unknown command.');
  }

  /** CAPABILITY, NOOP, LOGOUT, ID: in every state. True when handled. */
  private async anyState(cmd: Command): Promise<boolean> {
    switch (cmd.name) {
      case 'CAPABILITY':
        this.send(this.writer.untagged({ atom: 'CAPABILITY' }, ...this.capabilities().map((atom) => ({ atom }))));
        this.tagged(cmd.tag, 'OK', 'Capability completed.');
        return true;
      case 'NOOP':
        if (this.selected) await this.selected.sync(true);
        this.tagged(cmd.tag, 'OK', 'NOOP completed.');
        return true;
      case 'LOGOUT':
        this.send(this.writer.status('BYE', 'Logging out.'));
        this.tagged(cmd.tag, 'OK', 'Logout completed.');
        this.end();
        return true;
      case 'ID':
        this.send(this.writer.untagged({ atom: 'ID' }, ['name', 'Mailroom']));
        this.tagged(cmd.tag, 'OK', 'ID completed.');
        return true;
      default:
        return false;
    }
  }

  private async notAuthenticated(cmd: Command): Promise<void> {
    switch (cmd.name) {
      case 'STARTTLS':
        return this.startTls(cmd);
      case 'LOGIN': {
        const user = astringText(cmd.args[0]);
        const pass = astringText(cmd.args[1]);
        if (user === null || pass === null || cmd.args.length !== 2) return this.tagged(cmd.tag, 'BAD', 'Invalid arguments.');
        return this.login(cmd.tag, user, pass);
      }
      case 'AUTHENTICATE':
        return this.authenticate(cmd);
      default:
        this.tagged(cmd.tag, 'BAD', KNOWN.has(cmd.name) ? 'Please log in first.' : 'Unknown command.');
    }
  }

  private async startTls(cmd: Command): Promise<void> {
    const context = this.tls ? null : (this.options.startTls?.() ?? null);
    if (cmd.args.length > 0) return this.tagged(cmd.tag, 'BAD', 'STARTTLS takes no arguments.');
    if (!context) return this.tagged(cmd.tag, 'BAD', this.tls ? 'TLS is already active.' : 'STARTTLS is not offered.');
    this.tagged(cmd.tag, 'OK', 'Begin TLS negotiation now.');
    // Anything the client sent after STARTTLS before the handshake is discarded (a command injection, RFC 9051).
    const raw = this.socket;
    raw.removeAllListeners('data');
    raw.removeAllListeners('timeout');
    raw.removeAllListeners('close');
    raw.removeAllListeners('error');
    while (this.reader.next()) { /* drop what was queued */ }
    const secure = new TLSSocket(raw, { isServer: true, secureContext: context });
    this.socket = secure;
    this.tls = true;
    this.attach(secure);
  }

  private async authenticate(cmd: Command): Promise<void> {
    const mech = atomText(cmd.args[0])?.toUpperCase();
    if (mech !== 'PLAIN') return this.tagged(cmd.tag, 'NO', 'Unsupported authentication mechanism.');
    if (!this.loginAllowed()) return this.tagged(cmd.tag, 'NO', 'Plaintext authentication disallowed on non-secure connections.', { name: 'PRIVACYREQUIRED' });
    let response = astringText(cmd.args[1]);
    if (response === null) {
      this.send(this.writer.continuation(''));
      const line = await this.readLine();
      if (line === null) return;
      response = line.toString('latin1');
    }
    if (response === '*') return this.tagged(cmd.tag, 'BAD', 'Authentication aborted.');
    const parts = response === '=' ? [] : Buffer.from(response, 'base64').toString('utf8').split('\0');
    if (parts.length !== 3 || (parts[0] !== '' && parts[0] !== parts[1])) {
      this.options.metrics.imapLogin('failed');
      return this.tagged(cmd.tag, 'NO', 'Invalid base64 or credentials.', { name: 'AUTHENTICATIONFAILED' });
    }
    return this.login(cmd.tag, parts[1]!, parts[2]!);
  }

  private async login(tag: string, user: string, password: string): Promise<void> {
    const metrics = this.options.metrics;
    if (!this.loginAllowed()) {
      metrics.imapLogin('refused');
      return this.tagged(tag, 'NO', 'Plaintext authentication disallowed on non-secure connections.', { name: 'PRIVACYREQUIRED' });
    }
    const result = await this.access.login(user, password, this.options.remoteAddress);
    if (!result.ok) {
      metrics.imapLogin(result.reason === 'throttled' || result.reason === 'suspended' ? result.reason : 'failed');
      if (result.reason === 'throttled') return this.tagged(tag, 'NO', 'Too many failed logins; try again later.', { name: 'UNAVAILABLE' });
      if (result.reason === 'suspended') return this.tagged(tag, 'NO', 'The workspace is suspended.', { name: 'UNAVAILABLE' });
      return this.tagged(tag, 'NO', 'Authentication failed.', { name: 'AUTHENTICATIONFAILED' });
    }
    // Dovecot's answer past mail_max_userip_connections (a temporary refusal, not a wrong password).
    const place = this.options.shares.admit(result.account.workspaceId);
    if (!place) {
      metrics.imapLogin('limit');
      return this.tagged(tag, 'NO', 'Too many sessions for this workspace; try again later.', { name: 'UNAVAILABLE' });
    }
    if (this.closed) return place();
    this.place = place;
    metrics.imapLogin('ok');
    this.loggedIn(result.account);
    this.tagged(tag, 'OK', 'Logged in.', { name: 'CAPABILITY', args: this.capabilities().map((atom) => ({ atom })) });
  }
}

/** Commands this server knows in some state (a known one in the wrong state is "not allowed", not "unknown"). */
const KNOWN = new Set([
  'CAPABILITY', 'NOOP', 'LOGOUT', 'ID', 'STARTTLS', 'LOGIN', 'AUTHENTICATE', 'ENABLE', 'NAMESPACE', 'LIST', 'LSUB', 'STATUS', 'SELECT', 'EXAMINE',
  'SUBSCRIBE', 'UNSUBSCRIBE', 'CREATE', 'DELETE', 'RENAME', 'APPEND', 'CHECK', 'CLOSE', 'UNSELECT', 'EXPUNGE', 'UID EXPUNGE', 'FETCH', 'UID FETCH',
  'STORE', 'UID STORE', 'SEARCH', 'UID SEARCH', 'COPY', 'UID COPY', 'MOVE', 'UID MOVE', 'IDLE',
]);

/** Until the socket drains or closes; the listener of the one that did not happen is removed (a session waits often). */
function drained(socket: Socket): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      socket.off('drain', done).off('close', done);
      resolve();
    };
    socket.once('drain', done).once('close', done);
  });
}
