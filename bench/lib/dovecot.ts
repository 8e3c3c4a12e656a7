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
import { ImapConnection } from './imap-client.js';
import { freeLoopbackPort, type ManagedProcess } from './processes.js';
import type { Scope } from './scope.js';
import type { SuiteContext } from './suite.js';

export const DOVECOT_BINARY = '/usr/sbin/dovecot';
const READY_TIMEOUT_MS = 20_000;

export interface BenchDovecot {
  port: number;
  user: string;
  password: string;
  /** Its master process (every imap and login process is a child of it). */
  process: ManagedProcess;
}

interface Identities {
  loginUser: string;
  internalUser: string;
  internalGroup: string;
  uid: number;
  gid: number;
}

/** As root, Dovecot refuses to run login and mail processes as root: its own users take them. */
function identities(): Identities {
  const me = userInfo();
  if (me.uid !== 0) {
    const group = execFileSync('id', ['-gn'], { encoding: 'utf8' }).trim();
    return { loginUser: me.username, internalUser: me.username, internalGroup: group, uid: me.uid, gid: me.gid };
  }
  const id = (flag: string) => Number(execFileSync('id', [flag, 'dovecot'], { encoding: 'utf8' }).trim());
  return { loginUser: 'dovenull', internalUser: 'dovecot', internalGroup: 'dovecot', uid: id('-u'), gid: id('-g') };
}

function config(dir: string, port: number, who: Identities): string {
  return `# written by the mailroom bench for one run; no system configuration is read
base_dir = ${dir}/run
state_dir = ${dir}/state
log_path = ${dir}/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain
default_login_user = ${who.loginUser}
default_internal_user = ${who.internalUser}
default_internal_group = ${who.internalGroup}
first_valid_uid = 1
mail_location = maildir:${dir}/mail/%u
mail_max_userip_connections = 100
passdb {
  driver = static
  args = password=bench
}
userdb {
  driver = static
  args = uid=${who.uid} gid=${who.gid} home=${dir}/home/%u
}
service imap-login {
  chroot =
  inet_listener imap {
    address = 127.0.0.1
    port = ${port}
  }
  inet_listener imaps {
    port = 0
  }
}
service anvil {
  chroot =
}
service stats {
  chroot =
}
`;
}

/**
 * Starts Dovecot with `maildir` (cur/new/tmp) copied in as the INBOX of its one user; stopped and removed when `scope`
 * closes. Its directory is under $TMPDIR with mode 755, since its mail processes run as the dovecot user.
 */
export async function startBenchDovecot(context: SuiteContext, scope: Scope, maildir: string): Promise<BenchDovecot> {
  if (!existsSync(DOVECOT_BINARY)) throw new Error(`Dovecot is not installed (${DOVECOT_BINARY}): apt-get install -y dovecot-imapd`);
  const who = identities();
  const dir = await mkdtemp(join(tmpdir(), 'mailroom-bench-dovecot-'));
  scope.defer(`rm ${dir}`, () => rm(dir, { recursive: true, force: true }));
  await chmod(dir, 0o755);
  for (const sub of ['run', 'state', 'mail', 'home']) await mkdir(join(dir, sub));
  const user = 'bench';
  await cp(maildir, join(dir, 'mail', user), { recursive: true, preserveTimestamps: true });
  if (userInfo().uid === 0) execFileSync('chown', ['-R', `${who.uid}:${who.gid}`, join(dir, 'mail'), join(dir, 'home')]);
  const port = await freeLoopbackPort();
  await writeFile(join(dir, 'dovecot.conf'), config(dir, port, who));
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
