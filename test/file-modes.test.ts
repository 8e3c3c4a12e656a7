import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.js';
import { createServices } from '../src/services.js';
import { MessageSpool } from '../src/transports/smtp/spool.js';
import { TEST_DIALECT } from './helpers/database.js';
import { TEST_SERVICE_ENV } from './helpers/service-env.js';

const modeOf = (file: string) => statSync(file).mode & 0o777;

/**
 * Files holding tenants' mail and the master key are readable by their owner only, whatever the umask: the SQLite
 * database with its -wal and -shm files, secret.key, and the spill files of inbound SMTP messages. The database is
 * SQLite here whichever database the suite runs on (PostgreSQL keeps no files of ours).
 */
describe(`files of a running service are mode 0600 (${TEST_DIALECT})`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'mailroom-modes-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('the SQLite database, its -wal and -shm files and secret.key after a first start', async () => {
    const previous = process.umask(0o022);
    try {
      const db = join(dir, 'data', 'mailroom.db');
      const config = loadConfig({ ...TEST_SERVICE_ENV, MAILROOM_DATABASE_URL: `sqlite:${db}`, MAILROOM_LOG_LEVEL: 'silent' });
      const services = await createServices(config);
      try {
        for (const file of [db, `${db}-wal`, `${db}-shm`, join(dir, 'data', 'secret.key')]) expect({ file, mode: modeOf(file) }).toEqual({ file, mode: 0o600 });
      } finally {
        services.deliverer.close?.();
        await services.analyzer.close();
        await services.signer.close();
        await services.database.destroy();
      }
    } finally {
      process.umask(previous);
    }
  });

  it('the spill file of an inbound message past its memory share', async () => {
    const spoolDir = mkdtempSync(join(dir, 'spool-'));
    const spool = new MessageSpool({ memoryBytes: 16, maxBytes: 1024, dir: spoolDir });
    await spool.add(Buffer.alloc(64, 'x'));
    const [file] = readdirSync(spoolDir);
    expect(modeOf(join(spoolDir, file!))).toBe(0o600);
    await spool.discard();
  });
});
