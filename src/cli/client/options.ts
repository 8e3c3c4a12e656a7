import { InvalidArgumentError, type Command } from 'commander';

/** A whole number option (`--limit 20`); the server checks the range and says so if it is wrong. */
export function integer(value: string): number {
  if (!/^\d+$/.test(value.trim())) throw new InvalidArgumentError('expected a whole number');
  return Number(value);
}

/** A repeatable, comma-separable option: `--to a@x.example --to b@y.example` or `--to a@x.example,b@y.example`. */
export function collect(value: string, previous: string[] = []): string[] {
  return [
    ...previous,
    ...value
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean),
  ];
}

export interface PageOptions {
  limit?: number;
  offset?: number;
}

/** `--limit` and `--offset`, as every paginated list takes them. */
export function withPaging(command: Command): Command {
  return command.option('--limit <n>', 'how many to show (1–500, default 50)', integer).option('--offset <n>', 'how many to skip (default 0)', integer);
}

/** A date and time without an offset (`2026-12-01T09:00`, `2026-12-01 09:00:00`): the CLI reads it as local time. */
const LOCAL_DATE_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?$/;

/**
 * `--at <time>`: when a scheduled message leaves. An ISO 8601 time with its offset goes to the server as written (it
 * checks it, and that it is at most 30 days ahead); one without an offset is this machine's local time, sent in UTC.
 */
export function sendAt(value: string): string {
  const text = value.trim();
  if (!LOCAL_DATE_TIME.test(text)) return text;
  const local = new Date(text.replace(' ', 'T'));
  if (Number.isNaN(local.getTime())) throw new InvalidArgumentError('expected an ISO 8601 time, e.g. 2026-12-01T09:00:00Z');
  return local.toISOString();
}
