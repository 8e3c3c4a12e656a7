/**
 * A private Postfix for the smtp suite's `vs postfix` baseline: Debian's postfix package, with its own
 * config_directory, queue_directory and data_directory under a temp dir, listening on one loopback port only,
 * every non-local transport `error:` (nothing can leave), and virtual(8) delivering the bench's one mailbox into
 * one Maildir. Its master(8) runs in the foreground as a child of the bench's ProcessGroup, so it is stopped with
 * the case (its daemons exit when the master goes away), and its temp dir is removed when the scope closes or, at
 * the latest, when the bench process exits.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { describeExit, freeLoopbackPort, indent, waitForSmtp, type ManagedProcess } from './processes.js';
import type { Scope } from './scope.js';
import type { SuiteContext } from './suite.js';

const READY_TIMEOUT_MS = 30_000;
/** How long the Maildir may go without a new message before a run counts as stuck (a bounce, a deferral). */
const STALL_TIMEOUT_MS = 30_000;
/**
 * How often the Maildir is counted while the last messages are on their way (after the load ended). The end of a run
 * is read from the files' ctime, so this only bounds how soon it is noticed, not what is measured.
 */
const POLL_INTERVAL_MS = 100;
/** smtpd processes at most (master.cf maxproc): above the suite's 200 sessions + probe, as the service's client limit is raised too. */
const SMTPD_MAX_PROCESSES = 250;
/** The lines of Postfix's own log shown in an error. */
const LOG_TAIL_LINES = 20;
const BOUNCE_TEXT = 'the bench delivers nothing outside its Maildir';

export interface PostfixOptions {
  /** The one recipient: its domain becomes the virtual mailbox domain. */
  mailbox: string;
  /** message_size_limit, bytes (the service's MAILROOM_SMTP_MAX_SIZE). */
  maxSize: number;
}

export interface RunningPostfix {
  port: number;
  /** master(8); its daemons are its children (see processTreeCpuMs). */
  process: ManagedProcess;
  /**
   * Waits until `count` messages have arrived in the Maildir since the last call, then removes them: resolves with
   * the latest arrival time (epoch ms, the files' ctime). Fails when the Maildir gets more, or nothing new for
   * STALL_TIMEOUT_MS (with Postfix's log).
   */
  arrivals: (count: number, signal: AbortSignal) => Promise<number>;
  /** Messages Postfix logged as delivered into the Maildir so far (its own count, to cross-check ours). */
  loggedDeliveries(): number;
}

/** Why Postfix cannot run here, or null when it can (root, the postfix user, the postdrop group, the binaries). */
export function postfixUnavailable(): string | null {
  if (process.platform !== 'linux') return 'not Linux';
  if (process.getuid?.() !== 0) return 'the bench does not run as root (Postfix starts as root and drops to its mail_owner)';
  for (const [command, args] of [['id', ['-u', 'postfix']], ['getent', ['group', 'postdrop']]] as const) {
    try {
      execFileSync(command, args, { timeout: 5000, stdio: 'ignore' });
    } catch {
      return `${command} ${args.join(' ')} failed: the postfix package is not installed`;
    }
  }
  const master = masterPath();
  if (master === null || !existsSync(master)) return 'no postfix master(8) (the postfix package is not installed)';
  return null;
}

function masterPath(): string | null {
  try {
    const daemonDir = execFileSync('postconf', ['-dh', 'daemon_directory'], { timeout: 5000, stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
    return join(daemonDir, 'master');
  } catch {
    return null;
  }
}

const idOf = (flag: '-u' | '-g') => Number(execFileSync('id', [flag, 'postfix'], { timeout: 5000 }).toString().trim());

/** main.cf: only what a private, loopback-only, deliver-to-one-Maildir instance needs; Postfix's defaults otherwise. */
function mainCf(base: string, options: PostfixOptions): string {
  const domain = options.mailbox.slice(options.mailbox.indexOf('@') + 1);
  return [
    'compatibility_level = 3.6',
    `queue_directory = ${join(base, 'spool')}`,
    `data_directory = ${join(base, 'data')}`,
    'mail_owner = postfix',
    'setgid_group = postdrop',
    'myhostname = postfix.bench.localhost',
    'mydomain = bench.localhost',
    // Nothing is local, nothing is relayed, and every transport but virtual(8) bounces at once.
    'mydestination =',
    'local_recipient_maps =',
    'alias_maps =',
    'alias_database =',
    'relayhost =',
    'relay_domains =',
    `default_transport = error:${BOUNCE_TEXT}`,
    `relay_transport = error:${BOUNCE_TEXT}`,
    `local_transport = error:${BOUNCE_TEXT}`,
    'inet_interfaces = loopback-only',
    'inet_protocols = ipv4',
    'mynetworks = 127.0.0.0/8',
    `virtual_mailbox_domains = ${domain}`,
    // The trailing slash makes it a Maildir.
    `virtual_mailbox_maps = inline:{ ${options.mailbox}=box/ }`,
    `virtual_mailbox_base = ${join(base, 'mail')}`,
    `virtual_uid_maps = static:${idOf('-u')}`,
    `virtual_gid_maps = static:${idOf('-g')}`,
    'virtual_transport = virtual',
    `message_size_limit = ${options.maxSize}`,
    // As the bare sink and the service (disableReverseLookup): no PTR lookup of the client.
    'smtpd_peername_lookup = no',
    'biff = no',
    `maillog_file = ${join(base, 'maillog')}`,
    `maillog_file_prefixes = ${base}`,
    '',
  ].join('\n');
}

/** master.cf: the smtpd listener on 127.0.0.1:port and the daemons of the inbound path; no chroot, no pickup, no smtp client. */
function masterCf(port: number): string {
  return [
    `127.0.0.1:${port} inet n - n - ${SMTPD_MAX_PROCESSES} smtpd`,
    'cleanup   unix  n - n - 0 cleanup',
    'qmgr      unix  n - n 300 1 qmgr',
    'rewrite   unix  - - n - - trivial-rewrite',
    'bounce    unix  - - n - 0 bounce',
    'defer     unix  - - n - 0 bounce',
    'trace     unix  - - n - 0 bounce',
    'verify    unix  - - n - 1 verify',
    'flush     unix  n - n 1000? 0 flush',
    'proxymap  unix  - - n - - proxymap',
    'showq     unix  n - n - - showq',
    'error     unix  - - n - - error',
    'retry     unix  - - n - - error',
    'virtual   unix  - n n - - virtual',
    'anvil     unix  - - n - 1 anvil',
    'scache    unix  - - n - 1 scache',
    'postlog   unix-dgram n - n - 1 postlogd',
    '',
  ].join('\n');
}

/** Whether every directory from the root down to `dir` lets others through (o+x), as the postfix user must pass. */
function searchableByOthers(dir: string): boolean {
  for (let path = resolve(dir); ; path = dirname(path)) {
    try {
      if ((statSync(path).mode & 0o001) === 0) return false;
    } catch {
      return false;
    }
    if (path === dirname(path)) return true;
  }
}

/**
 * The temp dir, in $TMPDIR or else /tmp, whichever the postfix user can reach (master(8) and virtual(8) open files in
 * it after dropping root); world-searchable itself; removed when `scope` closes or the bench exits.
 */
function makeBaseDir(scope: Scope): string {
  const parent = [tmpdir(), '/tmp'].find(searchableByOthers);
  if (parent === undefined) throw new Error(`neither ${tmpdir()} nor /tmp can be reached by the postfix user (a directory on the way lacks o+x)`);
  const base = mkdtempSync(join(parent, 'mailroom-bench-postfix-'));
  const remove = () => rmSync(base, { recursive: true, force: true });
  process.on('exit', remove);
  scope.defer('remove the postfix temp dir', () => {
    process.off('exit', remove);
    remove();
  });
  chmodSync(base, 0o755);
  for (const dir of ['etc', 'spool', 'data', 'mail']) mkdirSync(join(base, dir));
  // The data directory and the Maildir's parent belong to the postfix user; `postfix check` makes the queue directories.
  for (const dir of ['data', 'mail']) chownSync(join(base, dir), idOf('-u'), idOf('-g'));
  return base;
}

/** Start a private Postfix (see the file comment); stopped and removed when `scope` closes. */
export async function startPostfix(context: SuiteContext, scope: Scope, options: PostfixOptions): Promise<RunningPostfix> {
  const base = makeBaseDir(scope);
  const configDir = join(base, 'etc');
  const port = await freeLoopbackPort();
  writeFileSync(join(configDir, 'main.cf'), mainCf(base, options));
  writeFileSync(join(configDir, 'master.cf'), masterCf(port));
  const env = { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' };
  // Creates the queue directories with the owners and modes Postfix insists on, and checks the configuration.
  await context.processes.run('postfix check', { command: 'postfix', args: ['-c', configDir, 'check'], cwd: base, env, timeoutMs: 60_000 });
  const master = context.processes.start('postfix master', { command: masterPath() ?? 'master', args: ['-c', configDir, '-s'], cwd: base, env });
  // SIGTERM: master(8) stops its daemons and exits.
  scope.defer(master.name, () => master.stop());
  const maillog = join(base, 'maillog');
  const logTail = () => (existsSync(maillog) ? readFileSync(maillog, 'utf8').trimEnd().split('\n').slice(-LOG_TAIL_LINES).join('\n') : '(no maillog)');
  try {
    await waitForSmtp(port, master, READY_TIMEOUT_MS, context.signal);
  } catch (err) {
    throw new Error(`${err instanceof Error ? err.message : String(err)}\n${indent(logTail())}`);
  }
  const maildirNew = join(base, 'mail', 'box', 'new');
  return {
    port,
    process: master,
    arrivals: (count, signal) => collectArrivals(maildirNew, count, master, logTail, signal),
    loggedDeliveries: () => (existsSync(maillog) ? readFileSync(maillog, 'utf8').split('status=sent (delivered to maildir)').length - 1 : 0),
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function listNew(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch (err) {
    // virtual(8) creates the Maildir with the first message.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/** See RunningPostfix.arrivals. The files are removed afterwards so the next run counts from zero. */
async function collectArrivals(dir: string, count: number, master: ManagedProcess, logTail: () => string, signal: AbortSignal): Promise<number> {
  let seen = -1;
  let lastProgress = Date.now();
  for (;;) {
    signal.throwIfAborted();
    const status = master.exitStatus();
    if (status) throw new Error(`postfix master exited (${describeExit(status)})\n${indent(logTail())}`);
    const files = listNew(dir);
    if (files.length > count) throw new Error(`postfix: ${files.length} messages arrived in the Maildir but ${count} were sent`);
    if (files.length === count) {
      let latest = 0;
      for (const name of files) {
        const path = join(dir, name);
        // The ctime changes when virtual(8) links the file from tmp/ into new/: when the message arrived.
        latest = Math.max(latest, Number(statSync(path, { bigint: true }).ctimeNs / 1_000_000n));
        unlinkSync(path);
      }
      return latest;
    }
    if (files.length !== seen) {
      seen = files.length;
      lastProgress = Date.now();
    } else if (Date.now() - lastProgress > STALL_TIMEOUT_MS) {
      throw new Error(`postfix: ${seen} of ${count} messages in the Maildir and none for ${STALL_TIMEOUT_MS / 1000} s\n${indent(logTail())}`);
    }
    await sleep(POLL_INTERVAL_MS);
  }
}
