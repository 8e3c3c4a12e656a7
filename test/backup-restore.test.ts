import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import SQLite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '../src/db/database.js';
import { createMigrator, knownMigrationNames } from '../src/db/migrator.js';
import type { MessageListView } from '../src/modules/messages/message.types.js';
import { runCli, startServe } from './helpers/cli.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';

const MAILBOX = 'ops@mailroom.localhost';

/** Wait for a condition the test itself brings about (bounded, so a broken sender fails the test instead of hanging it). */
async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 3000 && !condition(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!condition()) throw new Error('the condition never came true');
}

describe.skipIf(TEST_DIALECT === 'postgres')('admin backup and restore (sqlite)', () => {
  let h: MailHarness;
  let acme: Tenant;
  let dir: string;
  let backupFile: string;
  const keyFileOf = (url: string) => join(dirname(url.slice('sqlite:'.length)), 'secret.key');

  beforeAll(async () => {
    h = await startMailHarness();
    h.clock.set(Date.now());
    acme = await createTenant(h, 'Acme');
    const res = await h.app.inject({ method: 'POST', url: `/mailboxes?address=${MAILBOX}`, headers: bearer(acme.apiKey) });
    expect(res.statusCode).toBe(201);
    dir = mkdtempSync(join(tmpdir(), 'mailroom-backup-'));
    backupFile = join(dir, 'backup.db');
  });
  afterAll(async () => {
    await h.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('backs up while mail streams in; the backup restored elsewhere serves every message acknowledged before, byte for byte', async () => {
    for (let i = 0; i < 12; i++) {
      const attachments = i % 3 === 0 ? [{ filename: `part-${i}.txt`, content: `attachment number ${i}\n` }] : [];
      await h.send({ from: 'sender@sender.test', to: MAILBOX, subject: `before ${i}`, text: `pelican report ${i}`, attachments });
    }
    const page = await h.app.inject({ url: `/inbox?mailbox=${MAILBOX}&limit=500`, headers: bearer(acme.apiKey) });
    const acked = page.json<{ messages: MessageListView[] }>().messages;
    expect(acked).toHaveLength(12);
    const raws = new Map<string, Buffer>();
    for (const m of acked) raws.set(m.message_id, (await h.app.inject({ url: `/messages/${m.message_id}/raw`, headers: bearer(acme.apiKey) })).rawPayload);

    // Ingest load over SMTP while the backup runs (a separate process reading the same file).
    let stop = false;
    let during = 0;
    const senders = [0, 1, 2].map(async (k) => {
      while (!stop) {
        await h.send({ from: 'load@sender.test', to: MAILBOX, subject: `load ${k}`, text: 'streaming in' });
        during++;
      }
    });
    await until(() => during >= 3);
    const backup = await runCli(['admin', 'backup', backupFile, '--json'], { MAILROOM_DATABASE_URL: h.database.url }, 60_000);
    const atBackupEnd = during;
    await until(() => during > atBackupEnd);
    stop = true;
    await Promise.all(senders);
    expect(backup.stderr).toBe('');
    expect(backup.code).toBe(0);
    const made = JSON.parse(backup.stdout) as { path: string; bytes: number; keep: string[] };
    expect(made.path).toBe(backupFile);
    expect(made.keep.join('\n')).toContain(keyFileOf(h.database.url));

    // A fresh place: without the secret key kept with the backup, the restore says so and changes nothing.
    const fresh = mkdtempSync(join(tmpdir(), 'mailroom-restored-'));
    try {
      const url = `sqlite:${join(fresh, 'mailroom.db')}`;
      const noKey = await runCli(['admin', 'restore', backupFile], { MAILROOM_DATABASE_URL: url });
      expect(noKey.code).toBe(1);
      expect(noKey.stderr).toContain('(secret_key_missing)');
      expect(existsSync(join(fresh, 'mailroom.db'))).toBe(false);
      copyFileSync(keyFileOf(h.database.url), join(fresh, 'secret.key'));
      const restored = await runCli(['admin', 'restore', backupFile, '--json'], { MAILROOM_DATABASE_URL: url });
      expect(restored.stderr).toBe('');
      expect(JSON.parse(restored.stdout)).toMatchObject({ path: join(fresh, 'mailroom.db'), migrated: [], previous: null });

      const server = await startServe(['--role', 'api'], { MAILROOM_DATABASE_URL: url, MAILROOM_HTTP_PORT: '0' });
      try {
        const get = (path: string) => fetch(`${server.url}${path}`, { headers: bearer(acme.apiKey) });
        const listed = ((await (await get(`/inbox?mailbox=${MAILBOX}&limit=500`)).json()) as { messages: MessageListView[] }).messages;
        expect(listed.length).toBeGreaterThanOrEqual(12);
        for (const m of acked) {
          const raw = Buffer.from(await (await get(`/messages/${m.message_id}/raw`)).arrayBuffer());
          expect(raw.equals(raws.get(m.message_id)!)).toBe(true);
          for (const a of m.attachments) {
            const bytes = Buffer.from(await (await get(`/messages/${m.message_id}/attachments/${a.attachment_id}`)).arrayBuffer());
            expect(bytes.toString()).toBe(`attachment number ${m.subject.slice('before '.length)}\n`);
          }
        }
        expect(acked.filter((m) => m.attachments.length > 0)).toHaveLength(4);
        const found = (await (await get(`/inbox?mailbox=${MAILBOX}&q=pelican&limit=50`)).json()) as { messages: MessageListView[] };
        expect(found.messages.map((m) => m.subject).sort()).toEqual(acked.map((m) => m.subject).sort());
      } finally {
        server.child.kill('SIGTERM');
        await server.exited;
      }
    } finally {
      rmSync(fresh, { recursive: true, force: true });
    }
  });

  it('refuses to restore over a database a running service has open, and leaves it as it was', async () => {
    const before = (await h.app.inject({ url: '/stats', headers: bearer(acme.apiKey) })).json<Record<string, unknown>>();
    const refused = await runCli(['admin', 'restore', backupFile], { MAILROOM_DATABASE_URL: h.database.url });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('(database_in_use)');
    expect((await h.app.inject({ url: '/stats', headers: bearer(acme.apiKey) })).json()).toEqual(before);
  });

  it('checks what it is given: not SQLite, not Mailroom, another key; an existing backup file; an older database is migrated forward', async () => {
    const target = mkdtempSync(join(tmpdir(), 'mailroom-target-'));
    try {
      const url = `sqlite:${join(target, 'mailroom.db')}`;
      const text = join(dir, 'notes.txt');
      writeFileSync(text, 'not a database at all, just some words that go on for a while\n'.repeat(100));
      expect((await runCli(['admin', 'restore', text], { MAILROOM_DATABASE_URL: url })).stderr).toContain('(not_a_database)');
      const other = join(dir, 'other.db');
      const db = new SQLite(other);
      db.exec('create table notes (body text)');
      db.close();
      expect((await runCli(['admin', 'restore', other], { MAILROOM_DATABASE_URL: url })).stderr).toContain('(not_a_mailroom_database)');
      expect((await runCli(['admin', 'backup', backupFile], { MAILROOM_DATABASE_URL: h.database.url })).stderr).toContain('(backup_target_exists)');

      writeFileSync(join(target, 'secret.key'), `${Buffer.alloc(32, 7).toString('base64')}\n`);
      expect((await runCli(['admin', 'restore', backupFile], { MAILROOM_DATABASE_URL: url })).stderr).toContain('(secret_key_mismatch)');

      // A database left at an older migration (never started, so no secret sealed): restored, then migrated.
      const older = join(dir, 'older.db');
      const opened = createDb(`sqlite:${older}`);
      const names = knownMigrationNames();
      const { error } = await createMigrator(opened.db).migrateTo(names[names.length - 3]!);
      await opened.destroy();
      expect(error).toBeUndefined();
      const restored = await runCli(['admin', 'restore', older, '--json'], { MAILROOM_DATABASE_URL: url });
      expect(restored.stderr).toBe('');
      expect((JSON.parse(restored.stdout) as { migrated: string[] }).migrated).toEqual(names.slice(-2));
      // Restoring again moves the database in place aside rather than deleting it.
      const again = JSON.parse((await runCli(['admin', 'restore', older, '--json'], { MAILROOM_DATABASE_URL: url })).stdout) as { previous: string };
      expect(again.previous).toMatch(/mailroom\.db\.before-restore-/);
      expect(existsSync(again.previous)).toBe(true);
    } finally {
      rmSync(target, { recursive: true, force: true });
    }
  });
});

describe.skipIf(TEST_DIALECT !== 'postgres')('admin backup and restore on PostgreSQL', () => {
  it('refuse, pointing at docs/operations.md', async () => {
    const env = { MAILROOM_DATABASE_URL: process.env.MAILROOM_DATABASE_URL!, MAILROOM_SECRET_KEY: Buffer.alloc(32, 1).toString('base64') };
    for (const command of ['backup', 'restore']) {
      const result = await runCli(['admin', command, join(tmpdir(), 'never-written.db')], env);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('docs/operations.md');
      expect(result.stderr).toContain('(not_sqlite)');
    }
  });
});
