import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as pendingLimit from '../src/db/migrations/20261213001000_search_pending_limit.js';
import { asWork } from '../src/db/tables.js';
import { startService } from '../src/main.js';
import { createSearchPendingMerge } from '../src/modules/mail/search-pending.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';

const TO = 'pending@mailroom.localhost';
const silent = pino({ level: 'silent' });

/**
 * PostgreSQL's search index takes new documents into a pending list; serving processes merge that list on their own
 * connections, so that no store's transaction merges it. SQLite (FTS5) has no such list.
 */
describe(`search index pending list (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let acme: Tenant;
  const pg = TEST_DIALECT === 'postgres';
  const merge = (intervalMs?: number, logger = silent) => createSearchPendingMerge({ work: asWork(h.services.database.db), dialect: h.services.database.dialect, logger, intervalMs });
  const sendSome = async (n: number, word: string) => {
    for (let i = 0; i < n; i++) await h.send({ from: 'a@sender.test', to: TO, subject: `Note ${i}`, text: `${word} ${'lorem ipsum dolor sit amet '.repeat(200)} ${i}` });
  };
  const found = async (word: string) => {
    const res = await h.app.inject({ method: 'GET', url: `/inbox?mailbox=${encodeURIComponent(TO)}&q=${word}`, headers: bearer(acme.apiKey) });
    expect(res.statusCode).toBe(200);
    return res.json<{ messages: unknown[] }>().messages.length;
  };

  beforeAll(async () => {
    h = await startMailHarness();
    acme = await createTenant(h, 'Acme');
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(acme.apiKey), payload: { address: TO } })).statusCode).toBe(201);
  }, 60_000);
  afterAll(async () => h?.close());

  it.runIf(pg)('lets the list grow to 16 MiB before an insert would merge it itself (the migration, down and up)', async () => {
    const db = h.services.database.db;
    const options = async () => (await sql<{ reloptions: string[] | null }>`select reloptions from pg_class where relname = 'message_contents_search_idx'`.execute(db)).rows[0]?.reloptions ?? [];
    expect(await options()).toContain('gin_pending_list_limit=16384');
    await pendingLimit.down(db);
    expect(await options()).not.toContain('gin_pending_list_limit=16384');
    await pendingLimit.up(db);
    expect(await options()).toContain('gin_pending_list_limit=16384');
  });

  it.runIf(pg)('merges what stores left in the list, and finds the mail before and after', async () => {
    await sendSome(5, 'zebrafish');
    expect(await found('zebrafish')).toBe(5);
    const m = merge();
    expect(await m.mergeOnce()).toBeGreaterThan(0);
    expect(await m.mergeOnce()).toBe(0);
    expect(await found('zebrafish')).toBe(5);
  });

  it.runIf(pg)('skips, without waiting, while another process merges', async () => {
    await sendSome(2, 'okapi');
    const m = merge();
    // Another process's merge holds the lock for its statement; ours returns at once instead of queueing behind it.
    await h.services.database.db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(hashtext('mailroom.search.pending'))`.execute(trx);
      expect(await m.mergeOnce()).toBeNull();
    });
    expect(await m.mergeOnce()).toBeGreaterThan(0);
  });

  it.runIf(pg)('merges on its interval once started, until stopped', async () => {
    const lines: Array<{ msg: string; pages?: number }> = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as { msg: string; pages?: number }) });
    const m = merge(20, logger);
    m.start();
    await sendSome(3, 'narwhal');
    await expect.poll(() => lines.some((l) => l.msg === 'search index pending list merged' && (l.pages ?? 0) > 0), { timeout: 10_000 }).toBe(true);
    await m.stop();
    await sendSome(2, 'axolotl');
    // Stopped: what was stored since is still in the list for the next merge.
    expect(await merge().mergeOnce()).toBeGreaterThan(0);
    expect(await found('narwhal')).toBe(3);
  });

  it.runIf(pg)('runs in every serving process: mail stored beside a running `serve` (api role alone) is merged by it', async () => {
    const lines: Array<{ msg: string; pages?: number }> = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as { msg: string; pages?: number }) });
    const running = await startService({ ...h.config, httpPort: 0, metricsPort: null }, ['api'], logger);
    try {
      await sendSome(2, 'quokka');
      await expect.poll(() => lines.some((l) => l.msg === 'search index pending list merged' && (l.pages ?? 0) > 0), { timeout: 10_000 }).toBe(true);
    } finally {
      await running.stop();
    }
  });

  it.runIf(pg)('warns once and stops when the database user does not own the index', async () => {
    const db = h.services.database.db;
    const role = `mailroom_not_owner_${process.pid}`;
    await sql`create role ${sql.id(role)}`.execute(db);
    try {
      await db.connection().execute(async (conn) => {
        await sql`set role ${sql.id(role)}`.execute(conn);
        try {
          const lines: Array<{ msg: string }> = [];
          const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line) as { msg: string }) });
          const m = createSearchPendingMerge({ work: asWork(conn), dialect: h.services.database.dialect, logger, intervalMs: 10 });
          await expect(m.mergeOnce()).rejects.toMatchObject({ code: '42501' });
          m.start();
          await expect.poll(() => lines.length, { timeout: 10_000 }).toBeGreaterThan(0);
          // Many intervals later, still the one warning: the interval stopped.
          await new Promise((resolve) => setTimeout(resolve, 200));
          await m.stop();
          expect(lines).toHaveLength(1);
          expect(lines[0]!.msg).toMatch(/does not own/);
        } finally {
          await sql`reset role`.execute(conn);
        }
      });
    } finally {
      await sql`drop role ${sql.id(role)}`.execute(db);
    }
  });

  it.runIf(!pg)('does nothing on SQLite', async () => {
    const m = merge(20);
    m.start();
    expect(await m.mergeOnce()).toBeNull();
    await m.stop();
  });
});
