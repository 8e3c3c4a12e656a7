import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TEST_SERVICE_ENV } from './service-env.js';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BIN = join(ROOT, 'bin', 'mailroom.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** Written to the command's standard input, which is then closed (without it, stdin is empty). */
  input?: string;
  cwd?: string;
}

/** Run the built `mailroom` command as a child process (npm test builds dist/ first). */
export function runCli(args: string[], env: Record<string, string>, timeoutMs = 20_000, options: RunOptions = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd ?? ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...TEST_SERVICE_ENV, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child.stdin.end(options.input);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`mailroom ${args.join(' ')} timed out; stderr: ${stderr}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Start `mailroom serve` and resolve once its HTTP listener logs its URL. */
export function startServe(args: string[], env: Record<string, string>, timeoutMs = 20_000): Promise<{ child: ChildProcess; url: string; logs: () => string; exited: Promise<number | null> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'serve', ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...TEST_SERVICE_ENV, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const exited = new Promise<number | null>((res) => child.on('close', (code) => res(code)));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`serve did not start: ${out}`));
    }, timeoutMs);
    const onData = (d: Buffer) => {
      out += d.toString();
      for (const line of out.split('\n')) {
        if (!line.startsWith('{')) continue;
        try {
          const entry = JSON.parse(line) as { msg?: string; url?: string };
          if (entry.msg === 'http api listening' && entry.url) {
            clearTimeout(timer);
            resolve({ child, url: entry.url, logs: () => out, exited });
            return;
          }
        } catch {
          // a partial line; wait for the rest
        }
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}: ${out}`));
    });
  });
}
