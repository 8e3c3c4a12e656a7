// A private Dovecot (Debian's dovecot-imapd) for differential tests: the reference for what an IMAP server answers.
//
//   const dovecot = await startDovecot();                 // temp dirs, a free loopback port, no system config
//   await dovecot.addMessages('INBOX', [{ raw, flags: ['\\Seen'], internalDate }]);
//   const imap = await dovecot.connect();                 // logged in already
//   await imap.command('SELECT INBOX');
//   const bytes = await imap.command('FETCH 1:* (ENVELOPE)'); // the untagged lines and the tagged one, raw bytes
//   await imap.close(); await dovecot.stop();             // stop() kills the master, which takes its children along
//
// Tests skip with `describe.skipIf(!hasDovecot())(…)` where the package is not installed (.ci/run installs it).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { connect as tcpConnect, type Socket } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { DOVECOT_BINARY, dovecotConfig, dovecotIdentities } from './dovecot-config.js';
import { freePort } from './ports.js';

export { DOVECOT_BINARY };

export const DOVECOT_MISSING = `Dovecot is not installed (${DOVECOT_BINARY}): apt-get install -y dovecot-imapd`;

/** Whether the reference server can run here. */
export function hasDovecot(): boolean {
  return existsSync(DOVECOT_BINARY);
}

export interface DovecotMessage {
  /** The message exactly as stored: Dovecot serves these bytes (it adds CRs to bare LFs when it serves them). */
  raw: Buffer;
  /** System flags only (`\Seen`, `\Answered`, `\Flagged`, `\Deleted`, `\Draft`): maildir keeps them in the name. */
  flags?: string[];
  /** INTERNALDATE: maildir takes it from the file's modification time (whole seconds). */
  internalDate?: Date;
}

export interface ImapRawClient {
  /** The greeting line(s) as received. */
  readonly greeting: Buffer;
  /** Sends `<tag> <text>` and resolves with every byte answered up to and including the tagged line. */
  command(text: string): Promise<Buffer>;
  close(): Promise<void>;
}

export interface DovecotPeer {
  readonly port: number;
  readonly user: string;
  readonly password: string;
  /** Writes messages into a folder's maildir (`INBOX` or a name); do it before a client selects the folder. */
  addMessages(mailbox: string, messages: DovecotMessage[]): Promise<void>;
  /** A raw-socket client, logged in as `user`. */
  connect(): Promise<ImapRawClient>;
  /** Dovecot's own log (errors land here). */
  log(): Promise<string>;
  stop(): Promise<void>;
}

const MAILDIR_FLAGS: Record<string, string> = { '\\Draft': 'D', '\\Flagged': 'F', '\\Answered': 'R', '\\Seen': 'S', '\\Deleted': 'T' };

/** Mailroom's hierarchy delimiter, so NAMESPACE and LIST answers compare as they are. */
const NAMESPACE = `namespace inbox {
  inbox = yes
  separator = /
}
`;

/** Starts a private Dovecot on a free loopback port; resolves once it answers a login. */
export async function startDovecot(): Promise<DovecotPeer> {
  const who = dovecotIdentities();
  const dir = await mkdtemp(join(tmpdir(), 'dovecot-'));
  // The mail processes run as `who.uid`: they must reach the maildir through the temp directory.
  await chmod(dir, 0o755);
  for (const sub of ['run', 'state', 'mail', 'home']) await mkdir(join(dir, sub));
  const port = await freePort();
  await writeFile(join(dir, 'dovecot.conf'), dovecotConfig({ dir, port, who, password: 'pass', comment: 'generated for one test run', extra: NAMESPACE }));
  // TZ=UTC: INTERNALDATE and the log read the same on every machine (Dovecot passes TZ on to its processes).
  const master = spawn(DOVECOT_BINARY, ['-F', '-c', join(dir, 'dovecot.conf')], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, TZ: 'UTC' },
  });
  let stderr = '';
  master.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => master.once('exit', () => resolve()));
  const user = 'tester';
  let counter = 0;
  const peer: DovecotPeer = {
    port,
    user,
    password: 'pass',
    async addMessages(mailbox, messages) {
      const root = join(dir, 'mail', user, mailbox.toUpperCase() === 'INBOX' ? '' : `.${mailbox}`);
      for (const sub of ['cur', 'new', 'tmp']) await mkdir(join(root, sub), { recursive: true });
      for (const message of messages) {
        const letters = (message.flags ?? []).map((flag) => MAILDIR_FLAGS[flag] ?? '').sort().join('');
        // Names sort in arrival order, which is the order Dovecot gives them UIDs in.
        const file = join(root, 'cur', `${Date.now()}.M${String(++counter).padStart(6, '0')}.test:2,${letters}`);
        await writeFile(file, message.raw);
        if (message.internalDate) await utimes(file, message.internalDate, message.internalDate);
      }
      chownTree(join(dir, 'mail'), who.uid, who.gid);
    },
    connect: () => connectClient(port, user, 'pass'),
    log: () => readFile(join(dir, 'dovecot.log'), 'utf8').catch(() => ''),
    async stop() {
      if (master.exitCode === null && master.signalCode === null) master.kill('SIGTERM');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
  try {
    await waitUntilAnswering(master, port, () => stderr);
  } catch (error) {
    await peer.stop();
    throw error;
  }
  return peer;
}

function chownTree(path: string, uid: number, gid: number): void {
  if (userInfo().uid === 0) execFileSync('chown', ['-R', `${uid}:${gid}`, path]);
}

async function waitUntilAnswering(master: ChildProcess, port: number, stderr: () => string): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (master.exitCode !== null) throw new Error(`dovecot exited: ${stderr()}`);
    try {
      const client = await connectClient(port, 'probe', 'pass');
      await client.close();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`dovecot did not answer on ${port}: ${String(error)} ${stderr()}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/**
 * Splits complete IMAP response lines off `buffer`, following literals (`{n}\r\n` then n bytes) so that bytes
 * inside a literal are never taken for a line end. Returns the end offset of each complete line.
 */
function lineEnds(buffer: Buffer, from: number): { ends: number[]; rest: number } {
  const ends: number[] = [];
  let pos = from;
  let lineStart = from;
  for (;;) {
    const lf = buffer.indexOf('\n', pos);
    if (lf < 0) return { ends, rest: lineStart };
    const literal = /\{(\d+)\+?\}\r$/.exec(buffer.subarray(Math.max(lineStart, lf - 24), lf).toString('latin1'));
    if (literal) {
      const after = lf + 1 + Number(literal[1]);
      if (after > buffer.length) return { ends, rest: lineStart };
      pos = after;
      continue;
    }
    ends.push(lf + 1);
    pos = lineStart = lf + 1;
  }
}

/** Collects a socket's bytes and hands out everything up to the first complete line that `done` accepts. */
function responseReader(socket: Socket): (done: (line: Buffer) => boolean) => Promise<Buffer> {
  let buffer = Buffer.alloc(0);
  let scanned = 0;
  let waiter: { done: (line: Buffer) => boolean; resolve: (bytes: Buffer) => void; reject: (e: Error) => void } | null = null;
  let failure: Error | null = null;
  const pump = () => {
    if (!waiter) return;
    const { ends, rest } = lineEnds(buffer, scanned);
    let start = scanned;
    for (const end of ends) {
      if (waiter.done(buffer.subarray(start, end))) {
        const bytes = Buffer.from(buffer.subarray(0, end));
        buffer = buffer.subarray(end);
        scanned = 0;
        const w = waiter;
        waiter = null;
        w.resolve(bytes);
        return;
      }
      start = end;
    }
    scanned = rest;
  };
  const fail = (error: Error) => {
    failure = error;
    waiter?.reject(error);
    waiter = null;
  };
  socket.on('data', (chunk: Buffer) => {
    buffer = Buffer.concat([buffer, chunk]);
    pump();
  });
  socket.on('error', fail);
  socket.on('close', () => fail(new Error('connection closed')));
  return (done) =>
    new Promise<Buffer>((resolve, reject) => {
      if (failure) return reject(failure);
      waiter = { done, resolve, reject };
      pump();
    });
}

/** A raw-socket client of any IMAP server that greets with its capabilities, logged in with LOGIN. */
export async function connectClient(port: number, user: string, password: string): Promise<ImapRawClient> {
  const socket: Socket = tcpConnect(port, '127.0.0.1');
  const until = responseReader(socket);
  // Dovecot may say "* OK Waiting for authentication process" before its real greeting.
  const greeting = await until((line) => /^\* OK \[CAPABILITY/.test(line.toString('latin1')));
  let tagCounter = 0;
  const client: ImapRawClient = {
    greeting,
    command(text) {
      const tag = `t${++tagCounter}`;
      socket.write(`${tag} ${text}\r\n`);
      return until((line) => line.toString('latin1').startsWith(`${tag} `));
    },
    async close() {
      if (!socket.destroyed) {
        await client.command('LOGOUT').catch(() => Buffer.alloc(0));
        socket.destroy();
      }
    },
  };
  const login = (await client.command(`LOGIN ${user} ${password}`)).toString('latin1');
  if (!/^t1 OK/m.test(login)) {
    socket.destroy();
    throw new Error(`login failed: ${login}`);
  }
  return client;
}
