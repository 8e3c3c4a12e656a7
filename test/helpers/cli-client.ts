import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { BIN, ROOT, runCli, type CliResult, type RunOptions } from './cli.js';

/** Put an in-process app (the test harness's, whose clock the test moves) on a loopback port. */
export async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

export type UserRunOptions = RunOptions & { env?: Record<string, string> };

/** Someone at a terminal: their own home and config directory, so each user's login is their own. */
export interface CliUser {
  home: string;
  env: Record<string, string>;
  configFile: string;
  run(args: string[], options?: UserRunOptions): Promise<CliResult>;
  /** Run with --json, expect success, parse stdout. */
  json<T>(args: string[], options?: UserRunOptions): Promise<T>;
  login(email: string, password: string): Promise<CliResult>;
  config(): { server?: string; session?: { token: string; email: string } };
}

export function cliUser(server: string): CliUser {
  const home = mkdtempSync(join(tmpdir(), 'mailroom-cli-'));
  const env = { HOME: home, XDG_CONFIG_HOME: join(home, 'config') };
  const configFile = join(home, 'config', 'mailroom', 'config.json');
  const run: CliUser['run'] = (args, options = {}) => runCli(args, { ...env, ...options.env }, 20_000, options);
  return {
    home,
    env,
    configFile,
    run,
    async json<T>(args: string[], options: UserRunOptions = {}) {
      const result = await run([...args, '--json'], options);
      if (result.code !== 0) throw new Error(`mailroom ${args.join(' ')} failed (${result.code}): ${result.stderr}`);
      return JSON.parse(result.stdout) as T;
    },
    login: (email, password) => run(['login', '--server', server, '--email', email, '--password-stdin'], { input: `${password}\n` }),
    config: () => JSON.parse(readFileSync(configFile, 'utf8')) as ReturnType<CliUser['config']>,
  };
}

const shellQuote = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`;

/**
 * Run `mailroom` on a pseudo-terminal (util-linux `script`), answering prompts: each step waits until the
 * output so far contains `waitFor`, then types `send`. Resolves with everything the terminal showed.
 */
export function runInTerminal(args: string[], env: Record<string, string>, steps: { waitFor: string; send: string }[] = [], timeoutMs = 20_000): Promise<{ code: number | null; output: string }> {
  const command = [process.execPath, BIN, ...args].map(shellQuote).join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qec', command, '/dev/null'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', SHELL: '/bin/sh', TERM: 'xterm', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let output = '';
    let step = 0;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`mailroom ${args.join(' ')} on a terminal timed out; it showed: ${JSON.stringify(output)}`));
    }, timeoutMs);
    const onData = (d: Buffer) => {
      output += d.toString();
      const next = steps[step];
      if (next && output.includes(next.waitFor)) {
        step += 1;
        child.stdin.write(next.send);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output: output.replace(/\r\n/g, '\n') });
    });
  });
}
