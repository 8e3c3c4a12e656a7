/**
 * The Node flags `mailroom serve` is meant to run with (`npm start` passes them; docs/operations.md shows them in a
 * service unit). Node reads them only at start, so the server cannot set them itself; it says at start-up which
 * are missing.
 *
 * `--max-semi-space-size=64` (MiB; Node 20's default is 16): an IMAP pull or FETCH streams every message through
 * short-lived strings and Buffers (a PostgreSQL row arrives as text), and with the default young generation many
 * outlived a scavenge, were promoted, and cost full collections. On an mbsync pull over PostgreSQL the garbage
 * collector's time fell by 72 % and the process's CPU a message by half (bench/HISTORY.md).
 */
export const SERVER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=64'];

/** The server flags (by name) that neither the command line nor NODE_OPTIONS gave. */
export function missingServerFlags(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  const given = [...execArgv, ...(nodeOptions ?? '').split(/\s+/)].map((flag) => flag.split('=')[0]!);
  return SERVER_NODE_FLAGS.filter((flag) => !given.includes(flag.split('=')[0]!));
}
