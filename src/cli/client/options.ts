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
