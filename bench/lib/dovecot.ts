/**
 * The `imap` suite's reference server: a private Dovecot (Debian's dovecot-imapd) as installed, configured in a temp
 * directory of its own (no system configuration read), listening on one free loopback port, its INBOX a copy of the
 * bench's Maildir. Dovecot's defaults otherwise: no full-text search plugin, its index and cache files as they come.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { DOVECOT_BINARY, dovecotConfig, dovecotIdentities } from '../../test/helpers/dovecot-config.js';
import { ImapConnection } from './imap-client.js';
import { freeLoopbackPort, type ManagedProcess } from './processes.js';
import type { Scope } from './scope.js';
import type { SuiteContext } from './suite.js';

export { DOVECOT_BINARY };
const READY_TIMEOUT_MS = 20_000;

export interface BenchDovecot {
  port: number;
  user: string;
  password: string;
  /** Its master process (every imap and login process is a child of it). */
  process: ManagedProcess;
}

/**
 * Starts Dovecot with `maildir` (cur/new/tmp) copied in as the INBOX of its one user; stopped and removed when `scope`
 * closes. Its directory is under $TMPDIR with mode 755, since its mail processes run as the dovecot user.
 */
export async function startBenchDovecot(context: SuiteContext, scope: Scope, maildir: string): Promise<BenchDovecot> {
  if (!existsSync(DOVECOT_BINARY)) throw new Error(`Dovecot is not installed (${DOVECOT_BINARY}): apt-get install -y dovecot-imapd`);
  const who = dovecotIdentities();
  const dir = await mkdtemp(join(tmpdir(), 'mailroom-bench-dovecot-'));
  scope.defer(`rm ${dir}`, () => rm(dir, { recursive: true, force: true }));
  await chmod(dir, 0o755);
  for (const sub of ['run', 'state', 'mail', 'home']) await mkdir(join(dir, sub));
  const user = 'bench';
  await cp(maildir, join(dir, 'mail', user), { recursive: true, preserveTimestamps: true });
  if (userInfo().uid === 0) execFileSync('chown', ['-R', `${who.uid}:${who.gid}`, join(dir, 'mail'), join(dir, 'home')]);
  const port = await freeLoopbackPort();
  await writeFile(join(dir, 'dovecot.conf'), dovecotConfig({ dir, port, who, password: 'bench', comment: 'written by the mailroom bench for one run', extra: 'mail_max_userip_connections = 100\n' }));
  // TZ=UTC: INTERNALDATE reads the same as Mailroom's.
  const proc = context.processes.start('dovecot', { command: DOVECOT_BINARY, args: ['-F', '-c', join(dir, 'dovecot.conf')], cwd: dir, env: { ...process.env, TZ: 'UTC' } });
  scope.defer('dovecot', () => proc.stop());
  await waitForImap(port, proc, user, 'bench', READY_TIMEOUT_MS, context.signal);
  return { port, user, password: 'bench', process: proc };
}

/** Connects and logs in until it works; fails early when the server exits. */
export async function waitForImap(port: number, proc: ManagedProcess, user: string, password: string, timeoutMs: number, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer yet';
  while (Date.now() < deadline) {
    signal.throwIfAborted();
    if (proc.exitStatus()) throw new Error(`${proc.name} exited before it answered IMAP\n${proc.tail()}`);
    try {
      const client = await ImapConnection.open(port);
      try {
        await client.login(user, password);
        return;
      } finally {
        await client.close();
      }
    } catch (error) {
      last = error instanceof Error ? error.message : String(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${proc.name} did not answer an IMAP login on port ${port} within ${timeoutMs} ms (${last})\n${proc.tail()}`);
}
