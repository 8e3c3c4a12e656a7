import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { CliError } from './errors.js';

/** What `mailroom login` keeps: the server it logged in to and that server's session. */
export interface ClientConfig {
  server?: string;
  session?: StoredSession;
}

export interface StoredSession {
  /** The session token (`mrs_…`): never printed, sent only to `server`. */
  token: string;
  email: string;
}

type Env = Record<string, string | undefined>;

/**
 * `$XDG_CONFIG_HOME/mailroom`, or `~/.config/mailroom`. A relative XDG_CONFIG_HOME is ignored, as the XDG
 * Base Directory specification asks.
 */
export function configDir(env: Env = process.env): string {
  const xdg = env.XDG_CONFIG_HOME;
  const base = xdg && isAbsolute(xdg) ? xdg : join(homedir(), '.config');
  return join(base, 'mailroom');
}

export function configPath(env: Env = process.env): string {
  return join(configDir(env), 'config.json');
}

/** The stored configuration, or `{}` when there is none yet. */
export function readConfig(env: Env = process.env): ClientConfig {
  const path = configPath(env);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new CliError(`cannot read ${path}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new CliError(`${path} is not valid JSON; delete it and run mailroom login`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new CliError(`${path} is not a JSON object; delete it and run mailroom login`);
  }
  const raw = parsed as Record<string, unknown>;
  const config: ClientConfig = {};
  if (typeof raw.server === 'string') config.server = raw.server;
  const session = raw.session as Record<string, unknown> | undefined;
  if (session && typeof session.token === 'string' && typeof session.email === 'string') {
    config.session = { token: session.token, email: session.email };
  }
  return config;
}

/**
 * Replace the stored configuration atomically: a temporary file (mode 0600) in the same directory
 * (mode 0700), flushed, then renamed over the old one, so a crash leaves the old file or the new one,
 * never half of either, and the token is never readable by other users, not even for a moment.
 */
export function writeConfig(config: ClientConfig, env: Env = process.env): void {
  const dir = configDir(env);
  const path = configPath(env);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const temp = join(dir, `.config.json.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const fd = openSync(temp, 'wx', 0o600);
    try {
      writeSync(fd, `${JSON.stringify(config, null, 2)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, path);
  } catch (err) {
    rmSync(temp, { force: true });
    throw new CliError(`cannot write ${path}: ${(err as Error).message}`);
  }
  // The rename is durable once the directory entry is: flush it too where the platform allows.
  try {
    const dirFd = openSync(dir, 'r');
    try {
      fsyncSync(dirFd);
    } finally {
      closeSync(dirFd);
    }
  } catch {
    // some file systems refuse fsync on a directory; the file itself is already flushed
  }
}
