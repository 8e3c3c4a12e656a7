import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ConfigError, type Config } from '../../config/config.js';
import type { Work } from '../../db/tables.js';
import type { SecretKeyStore } from './secret-key.store.js';
import type { Clock } from '../../lib/clock.js';
import { newSecretKey, parseSecretKey, SecretBoxError, type SecretBox } from '../../lib/secret-box.js';

/** The key file made beside a SQLite database when MAILROOM_SECRET_KEY is unset. */
export const KEY_FILE_NAME = 'secret.key';
/** Owner read/write only. */
const KEY_FILE_MODE = 0o600;
const CHECK_NAME = 'v1';
const CHECK_TEXT = 'mailroom secret key check';
const CHECK_CONTEXT = `secret_key_check:${CHECK_NAME}`;

function isErrno(err: unknown, code: string): boolean {
  return err instanceof Error && (err as NodeJS.ErrnoException).code === code;
}

function readKeyFile(path: string): Buffer {
  const text = readFileSync(path, 'utf8');
  try {
    return parseSecretKey(text);
  } catch (err) {
    throw new ConfigError([`${path}: ${(err as Error).message}`]);
  }
}

/**
 * The 32-byte master key: MAILROOM_SECRET_KEY when given; else, with SQLite, the key file beside the
 * database, made (mode 0600) on first start; an in-memory database gets a key that lives as long as it.
 * PostgreSQL is shared by processes that must all hold one key, so there it has to be given (decision 205).
 */
export function loadSecretKey(config: Pick<Config, 'secretKey' | 'databaseUrl'>): Buffer {
  if (config.secretKey !== null) return parseSecretKey(config.secretKey);
  if (!config.databaseUrl.startsWith('sqlite:')) {
    throw new ConfigError([
      'MAILROOM_SECRET_KEY is required with PostgreSQL: give every process the same key (for example the output of `openssl rand -base64 32`)',
    ]);
  }
  const path = config.databaseUrl.slice('sqlite:'.length);
  if (path === ':memory:') return parseSecretKey(newSecretKey());
  const file = join(dirname(path), KEY_FILE_NAME);
  try {
    return readKeyFile(file);
  } catch (err) {
    // No file, or no directory yet: make them (a path that cannot be one fails there, as the database would).
    if (!isErrno(err, 'ENOENT') && !isErrno(err, 'ENOTDIR')) throw err;
  }
  // The first start of a new installation: the database's directory (which opening it would create) is not there yet.
  mkdirSync(dirname(file), { recursive: true });
  try {
    // `wx`: of two processes starting at once, one writes and both read that key.
    writeFileSync(file, `${newSecretKey()}\n`, { flag: 'wx', mode: KEY_FILE_MODE });
  } catch (err) {
    if (!isErrno(err, 'EEXIST')) throw err;
  }
  return readKeyFile(file);
}

/**
 * Prove the key is the database's: open the check row, writing it first on a database that has none.
 * Throws ConfigError (the CLI exits 78) when it does not open, before any secret is used or written.
 */
export async function checkSecretKey(work: Work, store: Pick<SecretKeyStore, 'sealedCheck' | 'insertCheck'>, box: SecretBox, clock: Clock): Promise<void> {
  let sealed = await store.sealedCheck(work, CHECK_NAME);
  if (sealed === undefined) {
    await store.insertCheck(work, CHECK_NAME, box.seal(CHECK_TEXT, CHECK_CONTEXT), clock.now());
    sealed = await store.sealedCheck(work, CHECK_NAME);
    if (sealed === undefined) throw new Error('the secret key check value vanished after it was stored');
  }
  try {
    if (box.open(sealed, CHECK_CONTEXT) === CHECK_TEXT) return;
  } catch (err) {
    if (!(err instanceof SecretBoxError)) throw err;
  }
  throw new ConfigError([
    'MAILROOM_SECRET_KEY: the secrets stored in this database were encrypted with another key; start with the key they were stored with' +
      ` (unset, the key is the ${KEY_FILE_NAME} file beside the SQLite database)`,
  ]);
}
