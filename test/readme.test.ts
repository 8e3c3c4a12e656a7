import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, ROOT } from './helpers/cli.js';
import { TEST_DIALECT } from './helpers/database.js';
import { freePort } from './helpers/ports.js';
import { matchesShown, walkthroughBlocks, withPorts } from '../bench/lib/readme.js';

/*
 * The README's walkthrough is executable. Conventions in README.md, from `## Quick start` up to
 * `## Sandbox`, that a reader does not notice:
 *   - a fenced ```sh block runs, in order, all in one shell environment (a variable set in one block is seen by the
 *     next), in a fresh temporary directory; it must exit 0 (each block runs under `set -e -o pipefail`);
 *   - a ```json or ```text block right after it (only blank lines between) is its expected standard output, compared
 *     modulo ids, secrets, tokens, keys, times and runs of spaces; `…` in it stands for any text;
 *   - `<!-- readme-test: skip -->` on the line before a block leaves it out (e.g. `npm ci`, swaks, /etc paths);
 *   - `<!-- readme-test: background -->` marks the block that starts the server: it runs in the project directory in
 *     the background, and the blocks after it run once its HTTP port answers;
 *   - blocks in other languages (or none) are illustrations and are not run.
 * The test gives the server free ports and a temporary SQLite database through MAILROOM_* variables and rewrites the
 * README's 127.0.0.1:8080 and 127.0.0.1:2525 to them; `mailroom` runs the built bin/mailroom.js; `curl` fails on
 * an HTTP error status (so a refused request fails its block even where no output is shown).
 */

const README = join(ROOT, 'README.md');
/** One block (a poll for the worker included) may take this long before the test gives up on it. */
const BLOCK_TIMEOUT_MS = 60_000;

describe.skipIf(TEST_DIALECT === 'postgres')('README walkthrough', () => {
  const blocks = walkthroughBlocks(readFileSync(README, 'utf8'));
  let dir = '';
  let server: ChildProcess | undefined;
  let serverLog = '';
  const ports = { http: 0, smtp: 0 };

  const env = (): Record<string, string> => ({
    PATH: process.env.PATH ?? '',
    HOME: dir,
    XDG_CONFIG_HOME: join(dir, 'config'),
    NODE_PATH: join(ROOT, 'node_modules'),
    NO_COLOR: '1',
    MAILROOM_DATABASE_URL: `sqlite:${join(dir, 'mailroom.db')}`,
    MAILROOM_HTTP_PORT: String(ports.http),
    MAILROOM_SMTP_PORT: String(ports.smtp),
    // The sandbox's submission listener on a free port, not its 1587: other sandboxes may run beside this one.
    MAILROOM_SUBMISSION_PORT: '0',
    MAILROOM_ALLOW_PLAINTEXT_AUTH: 'loopback',
  });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailroom-readme-'));
    ports.http = await freePort();
    ports.smtp = await freePort();
    // Shell functions every block sees; variables are carried from block to block through `state.sh`.
    writeFileSync(
      join(dir, 'preamble.sh'),
      [
        // A function wins over the PATH the README sets (blocks run in a temporary directory, not the project's).
        `mailroom() { node ${JSON.stringify(BIN)} "$@"; }`,
        'curl() { command curl --fail-with-body "$@"; }',
        'touch state.sh; source state.sh',
        'set -a -e -o pipefail',
      ].join('\n'),
    );
  });

  afterAll(async () => {
    if (server?.pid !== undefined && server.exitCode === null) {
      const exited = new Promise((resolve) => server!.once('exit', resolve));
      process.kill(-server.pid, 'SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  async function startServer(code: string): Promise<void> {
    server = spawn('bash', ['-c', code], { cwd: ROOT, env: env(), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    server.stdout!.on('data', (d: Buffer) => (serverLog += d.toString()));
    server.stderr!.on('data', (d: Buffer) => (serverLog += d.toString()));
    const deadline = Date.now() + BLOCK_TIMEOUT_MS;
    for (;;) {
      const answer = await fetch(`http://127.0.0.1:${ports.http}/app/api/me`).catch(() => null);
      if (answer) return;
      if (server.exitCode !== null || Date.now() > deadline) throw new Error(`the server did not start:\n${serverLog}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it('has a server block and shell blocks with their output to check', () => {
    expect(blocks.filter((b) => b.marker === 'background')).toHaveLength(1);
    expect(blocks.filter((b) => b.marker === null && b.expected !== null).length).toBeGreaterThan(8);
  });

  for (const block of blocks.filter((b) => b.marker !== 'skip')) {
    it(`README.md:${block.line} runs${block.expected === null ? '' : ' and prints what the README shows'}`, { timeout: BLOCK_TIMEOUT_MS + 10_000 }, async () => {
      const code = withPorts(block.code, ports);
      if (block.marker === 'background') return startServer(code);
      const script = `source preamble.sh\n${code}\nexport -p > state.sh\n`;
      const run = spawnSync('bash', ['-c', script], { cwd: dir, env: env(), encoding: 'utf8', timeout: BLOCK_TIMEOUT_MS });
      const context = `README.md:${block.line}\n${code}\nexit ${String(run.status ?? run.signal)}\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}\nserver:\n${serverLog.slice(-4000)}`;
      expect(run.status, context).toBe(0);
      if (block.expected !== null) expect(matchesShown(run.stdout, withPorts(block.expected, ports)), `${context}\nexpected:\n${block.expected}`).toBe(true);
    });
  }
});
