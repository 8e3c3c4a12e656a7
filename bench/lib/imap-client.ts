/**
 * A raw IMAP client for the bench: one socket, one command at a time, answers counted rather than parsed, so the
 * client costs little beside the server it times. It follows literals (`{n}\r\n` then n bytes), so no byte inside
 * one is taken for a line end, keeps the text of untagged responses (up to their first literal) only when asked,
 * and hands every untagged response to a listener (what an IDLE waits for).
 */
import { connect, type Socket } from 'node:net';

/** The longest line kept whole (a SEARCH answer of a few thousand UIDs); longer ones keep their start and end. */
const KEPT_LINE_CHARS = 256 * 1024;
const LITERAL_END = /\{(\d+)\+?\}\r\n$/;
const CONNECT_TIMEOUT_MS = 10_000;

export interface ImapAnswer {
  /** The tagged line without its tag, e.g. `OK Fetch completed.` */
  status: string;
  /** Untagged responses by kind (`FETCH`, `SEARCH`, `EXISTS`…). */
  counts: Map<string, number>;
  /** Their text up to the first literal, when the command asked to keep them. */
  untagged: string[];
}

interface Pending {
  tag: string;
  keep: boolean;
  answer: ImapAnswer;
  resolve: (answer: ImapAnswer) => void;
  reject: (error: Error) => void;
}

/** `* 12 FETCH (…)` → FETCH, `* SEARCH 1 2` → SEARCH. */
function kindOf(response: string): string {
  return /^\* (?:\d+ )?([A-Za-z]+)/.exec(response)?.[1]?.toUpperCase() ?? '?';
}

export class ImapConnection {
  private current = '';
  /** The first line of a response that went on with a literal (what is kept of it). */
  private head: string | null = null;
  private literal = 0;
  private tags = 0;
  private pending: Pending | null = null;
  private continuation: { resolve: () => void; reject: (error: Error) => void } | null = null;
  private failure: Error | null = null;
  private greeted: { resolve: (line: string) => void; reject: (error: Error) => void } | null = null;
  /** Called with every untagged response (an IDLE's notifications). */
  onUntagged: ((response: string) => void) | null = null;

  private constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => this.scan(chunk));
    socket.on('error', (error) => this.fail(error));
    socket.on('close', () => this.fail(new Error('IMAP connection closed')));
  }

  /** Connects to 127.0.0.1:`port` and waits for the greeting (past Dovecot's "Waiting for authentication"). */
  static async open(port: number): Promise<ImapConnection> {
    const socket = connect({ host: '127.0.0.1', port });
    const connection = new ImapConnection(socket);
    const timer = setTimeout(() => socket.destroy(new Error(`no IMAP greeting on port ${port}`)), CONNECT_TIMEOUT_MS);
    try {
      const greeting = await new Promise<string>((resolve, reject) => (connection.greeted = { resolve, reject }));
      if (!/^\* (OK|PREAUTH)/i.test(greeting)) throw new Error(`IMAP greeting: ${greeting.trim()}`);
      return connection;
    } catch (error) {
      socket.destroy();
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Sends `<tag> <text>`; resolves with the answer once the tagged line arrives (whatever its status). */
  command(text: string, options: { keep?: boolean } = {}): Promise<ImapAnswer> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.pending) return Promise.reject(new Error('one IMAP command at a time'));
    const tag = `b${++this.tags}`;
    return new Promise<ImapAnswer>((resolve, reject) => {
      this.pending = { tag, keep: options.keep === true, answer: { status: '', counts: new Map(), untagged: [] }, resolve, reject };
      this.socket.write(`${tag} ${text}\r\n`);
    });
  }

  /** A command that must answer OK. */
  async ok(text: string, options: { keep?: boolean } = {}): Promise<ImapAnswer> {
    const answer = await this.command(text, options);
    if (!/^OK\b/i.test(answer.status)) throw new Error(`IMAP ${text.split(' ')[0]} answered ${answer.status.trim()}`);
    return answer;
  }

  async login(user: string, password: string): Promise<void> {
    await this.ok(`LOGIN ${quoted(user)} ${quoted(password)}`);
  }

  /** SELECT INBOX; resolves with its message count (EXISTS). */
  async selectInbox(): Promise<number> {
    const answer = await this.ok('SELECT INBOX', { keep: true });
    const exists = answer.untagged.map((line) => /^\* (\d+) EXISTS/i.exec(line)).find((m) => m !== null);
    if (!exists) throw new Error('SELECT INBOX answered no EXISTS');
    return Number(exists[1]);
  }

  /** Starts IDLE and resolves at the server's continuation; `done()` ends it. */
  async idle(): Promise<{ done: () => Promise<ImapAnswer> }> {
    const started = new Promise<void>((resolve, reject) => (this.continuation = { resolve, reject }));
    const answer = this.command('IDLE');
    const refused = answer.then((a) => Promise.reject(new Error(`IDLE answered ${a.status.trim()}`)));
    // Whichever loses the race settles later (or never) with nobody waiting for it.
    for (const p of [started, answer, refused]) p.catch(() => undefined);
    await Promise.race([started, refused]);
    return {
      done: () => {
        this.socket.write('DONE\r\n');
        return answer;
      },
    };
  }

  async close(): Promise<void> {
    if (this.failure === null && this.pending === null) await Promise.race([this.command('LOGOUT').catch(() => undefined), new Promise((r) => setTimeout(r, 1000))]);
    this.socket.destroy();
  }

  private fail(error: Error): void {
    if (this.failure) return;
    this.failure = error;
    this.greeted?.reject(error);
    this.pending?.reject(error);
    this.continuation?.reject(error);
    this.greeted = this.pending = this.continuation = null;
  }

  /** Splits the stream into responses: a line, or lines joined by literals (whose bytes are skipped, not kept). */
  private scan(chunk: Buffer): void {
    let pos = 0;
    while (pos < chunk.length) {
      if (this.literal > 0) {
        const skipped = Math.min(this.literal, chunk.length - pos);
        this.literal -= skipped;
        pos += skipped;
        continue;
      }
      const lf = chunk.indexOf(10, pos);
      const end = lf === -1 ? chunk.length : lf + 1;
      this.current += chunk.toString('latin1', pos, end);
      if (this.current.length > KEPT_LINE_CHARS) this.current = this.current.slice(0, KEPT_LINE_CHARS / 2) + this.current.slice(-64);
      pos = end;
      if (lf === -1) break;
      const line = this.current;
      this.current = '';
      const literal = LITERAL_END.exec(line.slice(-32));
      if (literal) {
        this.head ??= line;
        this.literal = Number(literal[1]);
        continue;
      }
      const response = this.head ?? line;
      this.head = null;
      this.dispatch(response);
    }
  }

  private dispatch(response: string): void {
    if (this.greeted) {
      if (/Waiting for authentication/i.test(response)) return;
      const greeted = this.greeted;
      this.greeted = null;
      greeted.resolve(response);
      return;
    }
    if (response.startsWith('+')) {
      this.continuation?.resolve();
      this.continuation = null;
      return;
    }
    const pending = this.pending;
    if (response.startsWith('*')) {
      if (pending) {
        const kind = kindOf(response);
        pending.answer.counts.set(kind, (pending.answer.counts.get(kind) ?? 0) + 1);
        if (pending.keep) pending.answer.untagged.push(response);
      }
      this.onUntagged?.(response);
      return;
    }
    if (pending && response.startsWith(`${pending.tag} `)) {
      this.pending = null;
      pending.answer.status = response.slice(pending.tag.length + 1);
      pending.resolve(pending.answer);
    }
  }
}

/** An IMAP quoted string (the bench's user names and passwords hold no CR, LF or NUL). */
export function quoted(text: string): string {
  return `"${text.replace(/["\\]/g, (c) => `\\${c}`)}"`;
}
