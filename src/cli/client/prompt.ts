import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { CliError, Interrupted } from './errors.js';

/** Ask for one line on the terminal (echoed); the question goes to stderr so stdout stays clean. */
export async function promptLine(question: string, needed: string): Promise<string> {
  if (!process.stdin.isTTY) throw new CliError(`no terminal to ask for ${needed}`);
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
  try {
    return await new Promise<string>((resolve, reject) => {
      rl.on('SIGINT', () => {
        process.stderr.write('\n');
        reject(new Interrupted());
      });
      rl.question(question, resolve);
    });
  } finally {
    rl.close();
  }
}

/**
 * Ask for a secret on the terminal without echoing it: the terminal goes into raw mode and nothing typed
 * is written back. Backspace and Ctrl-U edit, Enter ends, Ctrl-C interrupts; escape sequences (arrow
 * keys) are skipped.
 */
export function promptHidden(question: string): Promise<string> {
  const stdin = process.stdin;
  if (!stdin.isTTY) return Promise.reject(new CliError('no terminal to ask for the password; pipe it in with --password-stdin'));
  // Echo goes off before the question shows, so nothing typed after it can appear on the screen.
  stdin.setRawMode(true);
  process.stderr.write(question);
  stdin.setEncoding('utf8');
  stdin.resume();
  return new Promise((resolve, reject) => {
    let value = '';
    let escape = false;
    const finish = (error: Error | null) => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write('\n');
      if (error) reject(error);
      else resolve(value);
    };
    const onData = (chunk: string) => {
      for (const char of chunk) {
        if (escape) {
          // CSI sequences end with a letter or `~`
          if (/[A-Za-z~]/.test(char)) escape = false;
          continue;
        }
        if (char === '\r' || char === '\n') return finish(null);
        if (char === '\u0003') return finish(new Interrupted());
        if (char === '\u0004') {
          if (value === '') return finish(new Interrupted());
          continue;
        }
        if (char === '\u007f' || char === '\b') value = [...value].slice(0, -1).join('');
        else if (char === '\u0015') value = '';
        else if (char === '\u001b') escape = true;
        else if (char >= ' ') value += char;
      }
    };
    stdin.on('data', onData);
  });
}

/** A new password asked twice on the terminal (hidden); the two must match. */
export async function promptNewPassword(question: string): Promise<string> {
  const first = await promptHidden(`${question}: `);
  const second = await promptHidden(`${question} again: `);
  if (first !== second) throw new CliError('the two passwords differ; nothing was changed');
  return first;
}

/** Standard input's lines (without their line breaks), for secrets piped in one a line. */
export async function stdinLines(): Promise<string[]> {
  return (await readStdin()).split(/\r?\n/);
}

/** All of standard input as text. */
export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/** A file's text, or standard input's for `-`. */
export async function readTextFile(path: string): Promise<string> {
  if (path === '-') return readStdin();
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
  }
}

/**
 * Let the user edit `initial` in `$VISUAL` or `$EDITOR` (else `vi`) and return the result. The editor value
 * is run by the shell, as git does, so `EDITOR="code --wait"` works; the file is private to the user and
 * removed afterwards.
 */
export function editText(initial: string, env: Record<string, string | undefined> = process.env): string {
  const editor = env.VISUAL || env.EDITOR || 'vi';
  const dir = mkdtempSync(join(tmpdir(), 'mailroom-'));
  const file = join(dir, 'draft.txt');
  try {
    writeFileSync(file, initial, { mode: 0o600 });
    const result = spawnSync('/bin/sh', ['-c', `${editor} "$1"`, 'editor', file], { stdio: 'inherit' });
    if (result.error) throw new CliError(`cannot start the editor '${editor}': ${result.error.message}`);
    if (result.status !== 0) throw new CliError(`the editor '${editor}' exited with ${result.status ?? result.signal ?? 'an error'}; nothing was saved`);
    return readFileSync(file, 'utf8');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
