import { spawn, type ChildProcess } from 'node:child_process';
import { connect, createServer } from 'node:net';

/** Lines of a child's stdout+stderr kept for error messages. */
const OUTPUT_TAIL_LINES = 40;
/** How long a child may take to exit after SIGTERM before it gets SIGKILL. */
const STOP_GRACE_MS = 5000;

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ManagedProcess {
  readonly name: string;
  readonly pid: number | undefined;
  /** Resolves when the child has exited (never rejects). */
  readonly exited: Promise<ExitStatus>;
  /** Set once the child has exited. */
  exitStatus(): ExitStatus | null;
  /** Everything the child wrote to stdout so far. */
  stdout(): string;
  /** The last lines of stdout+stderr, for an error message. */
  tail(): string;
  /** SIGTERM, then SIGKILL after a grace period; resolves once the child is gone. */
  stop(graceMs?: number): Promise<void>;
}

export interface StartOptions {
  args: readonly string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Defaults to this Node binary, so children run the same Node version as the bench. */
  command?: string;
}

/**
 * Every child the bench starts goes through one group, so that whatever happens (an error, Ctrl-C,
 * an uncaught exception) `killAllNow()` can remove the ones still running, by pid, from the
 * process's `exit` handler.
 */
export class ProcessGroup {
  private readonly live = new Set<ChildProcess>();

  start(name: string, options: StartOptions): ManagedProcess {
    const child = spawn(options.command ?? process.execPath, options.args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.live.add(child);
    let out = '';
    const lines: string[] = [];
    const keep = (chunk: Buffer, isStdout: boolean) => {
      const text = chunk.toString('utf8');
      if (isStdout) out += text;
      lines.push(...text.split('\n').filter((l) => l.trim() !== ''));
      if (lines.length > OUTPUT_TAIL_LINES) lines.splice(0, lines.length - OUTPUT_TAIL_LINES);
    };
    child.stdout?.on('data', (chunk: Buffer) => keep(chunk, true));
    child.stderr?.on('data', (chunk: Buffer) => keep(chunk, false));

    let status: ExitStatus | null = null;
    const exited = new Promise<ExitStatus>((resolve) => {
      const done = (s: ExitStatus) => {
        if (status) return;
        status = s;
        this.live.delete(child);
        resolve(s);
      };
      child.on('exit', (code, signal) => done({ code, signal }));
      child.on('error', (err) => {
        lines.push(`spawn error: ${err.message}`);
        done({ code: null, signal: null });
      });
    });

    return {
      name,
      pid: child.pid,
      exited,
      exitStatus: () => status,
      stdout: () => out,
      tail: () => lines.join('\n'),
      async stop(graceMs = STOP_GRACE_MS) {
        if (status) return;
        child.kill('SIGTERM');
        const timer = setTimeout(() => {
          if (!status) child.kill('SIGKILL');
        }, graceMs);
        await exited;
        clearTimeout(timer);
      },
    };
  }

  /** Run a child to completion; rejects (with its output) on a non-zero exit or after `timeoutMs`. */
  async run(name: string, options: StartOptions & { timeoutMs: number }): Promise<string> {
    const proc = this.start(name, options);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      void proc.stop(1000);
    }, options.timeoutMs);
    const status = await proc.exited;
    clearTimeout(timer);
    if (timedOut) throw new Error(`${name} did not finish within ${options.timeoutMs} ms\n${indent(proc.tail())}`);
    if (status.code !== 0) throw new Error(`${name} failed (${describeExit(status)})\n${indent(proc.tail())}`);
    return proc.stdout();
  }

  /** How many children are still running. */
  get size(): number {
    return this.live.size;
  }

  /** SIGTERM every child still running and wait for them (SIGKILL after the grace period). */
  async stopAll(graceMs = STOP_GRACE_MS): Promise<void> {
    const waits = [...this.live].map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
          child.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          child.kill('SIGTERM');
        }),
    );
    await Promise.all(waits);
  }

  /** Synchronous last resort, for the `exit` handler: SIGKILL whatever is left. */
  killAllNow(): void {
    for (const child of this.live) {
      try {
        child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
    this.live.clear();
  }
}

export function describeExit(status: ExitStatus): string {
  return status.signal ? `signal ${status.signal}` : `exit code ${status.code ?? '?'}`;
}

export function indent(text: string, prefix = '    | '): string {
  return text
    .split('\n')
    .map((line) => prefix + line)
    .join('\n');
}

/** A free TCP port on the loopback interface (the OS picks it; a tiny race before the child binds is acceptable here). */
export async function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error('could not read the picked port'));
        return;
      }
      server.close(() => resolve(address.port));
    });
  });
}

/**
 * Poll `url` until it answers 200. Fails early when the child exits, and after `timeoutMs`.
 */
export async function waitForHttp(url: string, proc: ManagedProcess, timeoutMs: number, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer yet';
  while (Date.now() < deadline) {
    signal.throwIfAborted();
    const status = proc.exitStatus();
    if (status) throw new Error(`${proc.name} exited before it was ready (${describeExit(status)})\n${indent(proc.tail())}`);
    try {
      const res = await fetch(url, { signal: AbortSignal.any([signal, AbortSignal.timeout(1000)]) });
      await res.arrayBuffer();
      if (res.status === 200) return;
      last = `HTTP ${res.status}`;
    } catch (err) {
      signal.throwIfAborted();
      last = err instanceof Error ? err.message : String(err);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${proc.name} was not ready at ${url} within ${timeoutMs} ms (${last})\n${indent(proc.tail())}`);
}

/**
 * Wait until the child prints a stdout line matching `pattern`; resolves with the match. Fails early
 * when the child exits, and after `timeoutMs`.
 */
export async function waitForOutput(proc: ManagedProcess, pattern: RegExp, timeoutMs: number, signal: AbortSignal): Promise<RegExpMatchArray> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    signal.throwIfAborted();
    const match = pattern.exec(proc.stdout());
    if (match) return match;
    const status = proc.exitStatus();
    if (status) throw new Error(`${proc.name} exited before it was ready (${describeExit(status)})\n${indent(proc.tail())}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${proc.name} did not print ${String(pattern)} within ${timeoutMs} ms\n${indent(proc.tail())}`);
}

/** One attempt: connect, read the greeting, QUIT. Resolves with the greeting line. */
function smtpGreeting(port: number, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let buffer = '';
    const timer = setTimeout(() => socket.destroy(new Error('no greeting')), timeoutMs);
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      const end = buffer.indexOf('\r\n');
      if (end === -1) return;
      clearTimeout(timer);
      const line = buffer.slice(0, end);
      socket.end('QUIT\r\n');
      if (line.startsWith('220 ')) resolve(line);
      else reject(new Error(`greeting '${line}'`));
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/** Poll 127.0.0.1:`port` until an SMTP server there greets with 220. Fails early when the child exits. */
export async function waitForSmtp(port: number, proc: ManagedProcess, timeoutMs: number, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer yet';
  while (Date.now() < deadline) {
    signal.throwIfAborted();
    const status = proc.exitStatus();
    if (status) throw new Error(`${proc.name} exited before it was ready (${describeExit(status)})\n${indent(proc.tail())}`);
    try {
      await smtpGreeting(port, 1000);
      return;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${proc.name} did not greet on SMTP port ${port} within ${timeoutMs} ms (${last})\n${indent(proc.tail())}`);
}
