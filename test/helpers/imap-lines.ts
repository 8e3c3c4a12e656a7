import { connect, type Socket } from 'node:net';

/**
 * A raw IMAP client over loopback that sees every line the server sends, for tests that must know exactly when a
 * response arrives (IDLE): `waitFor` resolves with the lines up to the first that matches, `command` sends a tagged
 * command and resolves with its lines up to the tagged answer. Literals are kept as they come (the lines around them).
 */
export class ImapLines {
  private buffer = '';
  private readonly lines: string[] = [];
  private waiter: (() => void) | null = null;
  private tags = 0;
  closed = false;

  private constructor(private readonly socket: Socket) {
    socket.on('data', (d: Buffer) => {
      this.buffer += d.toString('latin1');
      let cut: number;
      while ((cut = this.buffer.indexOf('\r\n')) >= 0) {
        this.lines.push(this.buffer.slice(0, cut));
        this.buffer = this.buffer.slice(cut + 2);
      }
      this.waiter?.();
    });
    socket.on('close', () => {
      this.closed = true;
      this.waiter?.();
    });
    socket.on('error', () => undefined);
  }

  /** Connected and greeted. */
  static async open(port: number): Promise<ImapLines> {
    const socket = connect(port, '127.0.0.1');
    const client = new ImapLines(socket);
    await client.waitFor(/^\* OK/);
    return client;
  }

  send(line: string): void {
    this.socket.write(`${line}\r\n`);
  }

  /** Lines received until one matches `pattern` (that one included), taken off the queue; rejects after `ms`. */
  async waitFor(pattern: RegExp, ms = 20_000): Promise<string[]> {
    const end = Date.now() + ms;
    let seen = 0;
    for (;;) {
      for (; seen < this.lines.length; seen++) if (pattern.test(this.lines[seen]!)) return this.lines.splice(0, seen + 1);
      if (this.closed) throw new Error(`connection closed before ${pattern}; saw ${JSON.stringify(this.lines)}`);
      const left = end - Date.now();
      if (left <= 0) throw new Error(`no line matching ${pattern} within ${ms} ms; saw ${JSON.stringify(this.lines)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.waiter = null;
    }
  }

  /** Send `text` under a new tag; the lines up to and including the tagged answer. */
  async command(text: string, ms?: number): Promise<string[]> {
    const tag = `t${++this.tags}`;
    this.send(`${tag} ${text}`);
    return this.waitFor(new RegExp(`^${tag} (OK|NO|BAD)`), ms);
  }

  /** The tag the next `command` will use (for pipelining by hand). */
  nextTag(): string {
    return `t${++this.tags}`;
  }

  /**
   * Stop reading (the server's writes then back up until its socket's buffers are full: a command answering with
   * more than they hold waits for `resume`).
   */
  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
  }

  /** Whether a line received and not yet taken by `waitFor` matches `pattern`. */
  holds(pattern: RegExp): boolean {
    return this.lines.some((line) => pattern.test(line));
  }

  close(): void {
    this.socket.destroy();
  }
}
