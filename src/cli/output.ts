import { isDomainError } from '../lib/errors.js';

/** Print a result as JSON (`--json`) or as `label: value` lines for a person. */
export function printResult(result: Record<string, unknown>, json: boolean, lines: string[]): void {
  if (json) process.stdout.write(`${JSON.stringify(result)}\n`);
  else process.stdout.write(`${lines.join('\n')}\n`);
}

/** One clear line on stderr and a non-zero exit status; never a stack trace for expected errors. */
export function failWith(err: unknown): never {
  // By name, not instanceof: the client commands never load the configuration module (it is the server's).
  if (err instanceof Error && err.name === 'ConfigError') {
    process.stderr.write(`mailroom: ${err.message}\n`);
    process.exit(78); // EX_CONFIG
  }
  if (isDomainError(err)) {
    process.stderr.write(`mailroom: ${err.detail} (${err.code})\n`);
    process.exit(1);
  }
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`mailroom: ${message}\n`);
  process.exit(1);
}
