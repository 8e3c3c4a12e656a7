import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type DbHandle } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrator.js';
import { FIRST_RENEWAL, MAX_PER_CONNECTION } from '../src/db/pg-named-statements.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from './helpers/database.js';

/**
 * PostgreSQL named prepared statements (src/db/pg-named-statements.ts), seen from the server: the
 * `pg_prepared_statements` view lists what the connection it is read on has prepared. Each handle here
 * has one connection, so every statement of a test runs on the same server session.
 */
describe.runIf(TEST_DIALECT === 'postgres')('named prepared statements (postgres)', () => {
  let database: TestDatabase;
  const handles: DbHandle[] = [];
  const open = (pgPrepare: boolean) => {
    const handle = createDb(database.url, { poolSize: 1, pgPrepare });
    handles.push(handle);
    return handle.db;
  };
  const prepared = async (db: DbHandle['db']) =>
    (await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements order by name`.execute(db)).rows;
  const backend = async (db: DbHandle['db']) => (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db)).rows[0]!.pid;

  beforeAll(async () => {
    database = await createTestDatabase();
    const handle = createDb(database.url, { poolSize: 1 });
    await migrateToLatest(handle.db);
    await handle.destroy();
  });
  afterAll(async () => {
    for (const handle of handles) await handle.destroy();
    await database.drop();
  });

  it('prepares a statement with parameters once per connection and runs it again by name', async () => {
    const db = open(true);
    const read = () => db.selectFrom('workspaces').select('id').where('id', '=', 'ws_none').execute();
    expect(await read()).toEqual([]);
    expect(await read()).toEqual([]);
    const statements = await prepared(db);
    // The read is there once, under a generated name; the view's own read has no parameters and is not prepared.
    const reads = statements.filter((s) => s.statement.startsWith('select "id" from "workspaces"'));
    expect(reads).toHaveLength(1);
    expect(reads[0]!.name).toMatch(/^s\d+_0$/);
    expect(statements.some((s) => s.statement.includes('pg_prepared_statements'))).toBe(false);
  });

  it('prepares a statement again under a new name after 32, 64, 128… runs, and deallocates the old one', async () => {
    const db = open(true);
    const read = () => db.selectFrom('mailboxes').select('id').where('address', '=', 'nobody@renew.test').execute();
    const names = async () => (await prepared(db)).filter((s) => s.statement.startsWith('select "id" from "mailboxes"')).map((s) => s.name);
    for (let run = 1; run <= FIRST_RENEWAL; run++) await read();
    const first = await names();
    expect(first).toEqual([expect.stringMatching(/^s\d+_0$/)]);
    await read(); // run 33: prepared again
    const second = await names();
    expect(second).toEqual([first[0]!.replace(/_0$/, '_1')]);
    for (let run = FIRST_RENEWAL + 2; run <= 2 * FIRST_RENEWAL; run++) await read();
    expect(await names()).toEqual(second); // the next renewal is at run 65
    await read();
    expect(await names()).toEqual([first[0]!.replace(/_0$/, '_2')]);
  });

  it('prepares nothing when turned off (MAILROOM_PG_PREPARE=off)', async () => {
    const db = open(false);
    await db.selectFrom('workspaces').select('id').where('id', '=', 'ws_none').execute();
    await db.selectFrom('workspaces').select('id').where('id', '=', 'ws_none').execute();
    expect(await prepared(db)).toEqual([]);
  });

  it('runs texts beyond its share unnamed and replaces the connection, so the server never keeps more', async () => {
    const db = open(true);
    const first = await backend(db);
    // Distinct texts (a different alias each); the first MAX_PER_CONNECTION are prepared on this connection.
    for (let i = 0; i < MAX_PER_CONNECTION; i++) {
      await db.selectFrom('workspaces').select(sql<string>`id`.as(`c${i}`)).where('id', '=', 'ws_none').execute();
    }
    expect(await backend(db)).toBe(first);
    expect(await prepared(db)).toHaveLength(MAX_PER_CONNECTION);
    await db.selectFrom('workspaces').select(sql<string>`id`.as('one_too_many')).where('id', '=', 'ws_none').execute();
    // The connection went back to the pool closed after the statement beyond the limit.
    const second = await backend(db);
    expect(second).not.toBe(first);
    expect(await prepared(db)).toEqual([]);
  });

  it('a schema change under a cached plan fails one statement, and the next runs on a fresh connection', async () => {
    const db = open(true);
    await sql`create table named_shape (id text primary key)`.execute(db);
    await sql`insert into named_shape values ('a')`.execute(db);
    // `select *`: its result columns are fixed when it is prepared.
    const read = () => sql<Record<string, unknown>>`select * from named_shape where id = ${'a'}`.execute(db);
    expect((await read()).rows).toEqual([{ id: 'a' }]);
    await sql`alter table named_shape add column extra text`.execute(db);
    await expect(read()).rejects.toMatchObject({ code: '0A000' });
    expect((await read()).rows).toEqual([{ id: 'a', extra: null }]);
  });

  it('compresses message contents with LZ4 where the server has it', async () => {
    const db = open(true);
    const lz4 = (await sql<{ ok: boolean }>`select 'lz4' = any(enumvals) as ok from pg_settings where name = 'default_toast_compression'`.execute(db)).rows[0]?.ok === true;
    const columns = (
      await sql<{ column: string; compression: string }>`
        select c.relname || '.' || a.attname as column, a.attcompression as compression from pg_attribute a join pg_class c on c.oid = a.attrelid
        where c.relname in ('message_contents', 'attachments') and a.attname in ('raw', 'text_body', 'html_body', 'headers_json', 'content') order by 1`.execute(db)
    ).rows;
    expect(columns.map((c) => c.column)).toEqual(['attachments.content', 'message_contents.headers_json', 'message_contents.html_body', 'message_contents.raw', 'message_contents.text_body']);
    // 'l' is LZ4; '' is the server's default (pglz).
    for (const c of columns) expect(c.compression).toBe(lz4 ? 'l' : '');
  });
});
