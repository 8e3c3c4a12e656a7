// Python's imaplib as a test's mail client: steps run in order on one connection by test/imap/client.py.
import { execFile } from 'node:child_process';
import { join } from 'node:path';

/** An imaplib call: its name (`login`, `select`, `uid`, `raw`, …) and arguments. */
export type Step = [string, ...unknown[]];
/** One step's answer as client.py reports it (the first is the greeting's). */
export type Answer = { typ?: string; data?: unknown; error?: string; abort?: string; exception?: string; welcome?: string; capabilities?: string[] };

const CLIENT = join(import.meta.dirname, '..', 'imap', 'client.py');

/** Run imaplib steps on one connection; one answer per step, after the greeting's. */
export function imaplib(port: number, steps: Step[]): Promise<Answer[]> {
  return new Promise((resolve, reject) => {
    const child = execFile('python3', [CLIENT], { timeout: 30_000, maxBuffer: 32 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${err.message}\n${stderr}`));
      else resolve(JSON.parse(stdout) as Answer[]);
    });
    child.stdin!.end(JSON.stringify({ host: '127.0.0.1', port, steps }));
  });
}

/** A string imaplib returned as the bytes it stands for. */
export const latin1 = (s: unknown) => Buffer.from(String(s), 'latin1');
