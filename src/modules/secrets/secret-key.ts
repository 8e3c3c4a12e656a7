import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ConfigError, type Config } from '../../config/config.js';
import type { Work } from '../../db/tables.js';
import type { SecretKeyStore } from './secret-key.store.js';
import type { Clock } from '../../lib/clock.js';
import { conflict } from '../../lib/errors.js';
import { createSecretBox, newSecretKey, parseSecretKey, SecretBoxError, type SecretBox } from '../../lib/secret-box.js';

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

/** Where the key of a configuration comes from: the environment, or the key file beside the SQLite database. */
export type SecretKeySource = { kind: 'environment' } | { kind: 'file'; path: string } | { kind: 'none' };

/** Where `loadSecretKey` takes the key from for this configuration (without reading or making anything). */
export function secretKeySource(config: Pick<Config, 'secretKey' | 'databaseUrl'>): SecretKeySource {
  if (config.secretKey !== null) return { kind: 'environment' };
  if (!config.databaseUrl.startsWith('sqlite:') || config.databaseUrl === 'sqlite::memory:') return { kind: 'none' };
  return { kind: 'file', path: join(dirname(config.databaseUrl.slice('sqlite:'.length)), KEY_FILE_NAME) };
}

/** The key a process would use for this configuration if it exists already (no key file is made); null if none. */
export function existingSecretKey(config: Pick<Config, 'secretKey' | 'databaseUrl'>): Buffer | null {
  const source = secretKeySource(config);
  if (source.kind === 'environment') return parseSecretKey(config.secretKey!);
  if (source.kind === 'file') {
    try {
      return readKeyFile(source.path);
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return null;
      throw err;
    }
  }
  return null;
}

/**
 * Whether the key opens a database's stored secrets, read only: `opens`, `other_key`, or `unchecked` for a
 * database that has never been started (no check value yet, so no secret sealed either).
 */
export async function secretKeyOpens(work: Work, store: Pick<SecretKeyStore, 'sealedCheck'>, box: SecretBox): Promise<'opens' | 'other_key' | 'unchecked'> {
  const sealed = await store.sealedCheck(work, CHECK_NAME);
  if (sealed === undefined) return 'unchecked';
  try {
    return box.open(sealed, CHECK_CONTEXT) === CHECK_TEXT ? 'opens' : 'other_key';
  } catch (err) {
    if (err instanceof SecretBoxError) return 'other_key';
    throw err;
  }
}

/**
 * Before a restore puts a database in place: the key the service will start with there must open its secrets (else
 * it would refuse to start, exit 78). A database never started has sealed nothing yet, and any key will do.
 */
export async function checkKeyForRestore(config: Pick<Config, 'secretKey' | 'databaseUrl'>, work: Work, store: Pick<SecretKeyStore, 'sealedCheck'>): Promise<void> {
  if ((await store.sealedCheck(work, CHECK_NAME)) === undefined) return;
  const source = secretKeySource(config);
  const place = source.kind === 'file' ? `the key file ${source.path}` : 'MAILROOM_SECRET_KEY';
  const key = existingSecretKey(config);
  if (!key) {
    throw conflict('secret_key_missing', `the backup's secrets are sealed with a secret key and there is none at ${place}: put the key kept with the backup there (or set MAILROOM_SECRET_KEY to it), then restore again`);
  }
  if ((await secretKeyOpens(work, store, createSecretBox(key))) !== 'opens') {
    throw conflict('secret_key_mismatch', `${place} holds another key than the one the backup's secrets were sealed with: put the key kept with the backup there, then restore again`);
  }
}
