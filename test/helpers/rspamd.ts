// A private rspamd (Debian's rspamd package) for the content-scoring tests: Debian's configuration with our own
// overrides in a temp dir (LOCAL_CONFDIR), its normal worker and controller on free loopback ports, no redis.
//
//   const rspamd = await startRspamd();       // resolves once both workers answer /ping
//   MAILROOM_RSPAMD_URL = rspamd.url;         // the normal worker; rspamd.controllerUrl is the controller
//   await rspamd.stat();                      // the controller's /stat (learned, scanned, …)
//   await rspamd.stop();                      // kills the main process, which takes its workers along
//
// Tests skip with `describe.skipIf(!hasRspamd())(…)` where the package is not installed (.ci/run installs it).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './ports.js';

export const RSPAMD_BINARY = '/usr/bin/rspamd';
export const RSPAMD_MISSING = `rspamd is not installed (${RSPAMD_BINARY}): apt-get install -y rspamd`;
/** The controller's password, sent as rspamd's `Password` header. */
export const RSPAMD_PASSWORD = 'test-password';
/** How long rspamd may take to start (it loads its rules and maps). */
const START_TIMEOUT_MS = 150_000;

export function hasRspamd(): boolean {
  return existsSync(RSPAMD_BINARY) && existsSync('/etc/rspamd/rspamd.conf');
}

export interface RspamdPeer {
  /** The normal worker (checks). */
  readonly url: string;
  /** The controller (learning, /stat). */
  readonly controllerUrl: string;
  /** The controller's statistics: `learned` counts the messages it was taught. */
  stat(): Promise<{ learned: number; scanned: number }>;
  /** rspamd's log. */
  log(): Promise<string>;
  stop(): Promise<void>;
}

/** The overrides: loopback ports, no DNS (a closed port answers at once), no hyperscan compile, bayes on sqlite. */
function overrides(dir: string, ports: { normal: number; controller: number; proxy: number }): Record<string, string> {
  return {
    'worker-normal.inc': `bind_socket = "127.0.0.1:${ports.normal}";\ncount = 1;\n`,
    'worker-controller.inc': `bind_socket = "127.0.0.1:${ports.controller}";\ncount = 1;\npassword = "${RSPAMD_PASSWORD}";\nenable_password = "${RSPAMD_PASSWORD}";\nsecure_ip = [];\n`,
    'worker-proxy.inc': `bind_socket = "127.0.0.1:${ports.proxy}";\ncount = 1;\n`,
    'worker-fuzzy.inc': 'count = -1;\n',
    'options.inc': 'disable_hyperscan = true;\ndns {\n  nameserver = ["127.0.0.1:1"];\n  timeout = 0.2s;\n  retransmits = 1;\n}\n',
    'logging.inc': `type = "file";\nfilename = "${join(dir, 'rspamd.log')}";\nlevel = "info";\n`,
    'classifier-bayes.conf': [
      'backend = "sqlite3";',
      'min_learns = 0;',
      'learn_condition = "return function() return true end";',
      `statfile { symbol = "BAYES_HAM"; spam = false; path = "${join(dir, 'db', 'bayes.ham.sqlite')}"; }`,
      `statfile { symbol = "BAYES_SPAM"; spam = true; path = "${join(dir, 'db', 'bayes.spam.sqlite')}"; }`,
      '',
    ].join('\n'),
  };
}

export async function startRspamd(): Promise<RspamdPeer> {
  const dir = await mkdtemp(join(tmpdir(), 'rspamd-'));
  for (const sub of ['override.d', 'local.d', 'db', 'run']) await mkdir(join(dir, sub));
  const ports = { normal: await freePort(), controller: await freePort(), proxy: await freePort() };
  for (const [name, text] of Object.entries(overrides(dir, ports))) await writeFile(join(dir, 'override.d', name), text);
  const vars = { LOCAL_CONFDIR: dir, DBDIR: join(dir, 'db'), RUNDIR: join(dir, 'run'), LOGDIR: dir };
  const args = ['-f', '-i', '-c', '/etc/rspamd/rspamd.conf', ...Object.entries(vars).flatMap(([k, v]) => ['--var', `${k}=${v}`])];
  const main = spawn(RSPAMD_BINARY, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  main.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => main.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${ports.normal}`;
  const controllerUrl = `http://127.0.0.1:${ports.controller}`;
  const peer: RspamdPeer = {
    url,
    controllerUrl,
    async stat() {
      const res = await fetch(`${controllerUrl}/stat`, { headers: { Password: RSPAMD_PASSWORD } });
      if (!res.ok) throw new Error(`rspamd /stat answered ${res.status}`);
      return (await res.json()) as { learned: number; scanned: number };
    },
    log: () => readFile(join(dir, 'rspamd.log'), 'utf8').catch(() => ''),
    async stop() {
      if (main.exitCode === null && main.signalCode === null) main.kill('SIGTERM');
      await Promise.race([exited, sleep(10_000).then(() => main.kill('SIGKILL'))]);
      await rm(dir, { recursive: true, force: true });
    },
  };
  try {
    await waitForPing([url, controllerUrl], () => (main.exitCode !== null ? `rspamd exited (${main.exitCode}): ${stderr}` : null));
  } catch (error) {
    const log = await peer.log();
    await peer.stop();
    throw new Error(`${(error as Error).message}\n${log.slice(-4000)}`);
  }
  return peer;
}

async function waitForPing(urls: readonly string[], dead: () => string | null): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (const url of urls) {
    for (;;) {
      const why = dead();
      if (why) throw new Error(why);
      const ok = await fetch(`${url}/ping`).then((r) => r.ok, () => false);
      if (ok) break;
      if (Date.now() > deadline) throw new Error(`rspamd did not answer on ${url} within ${START_TIMEOUT_MS} ms`);
      await sleep(200);
    }
  }
}
