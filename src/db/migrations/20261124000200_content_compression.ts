import { PostgresAdapter, sql, type Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/** The columns that hold a message's bodies, raw source and attachment bytes: usually past the 2 KB at which PostgreSQL compresses. */
const COLUMNS: ReadonlyArray<readonly [table: string, column: string]> = [
  ['message_contents', 'raw'],
  ['message_contents', 'text_body'],
  ['message_contents', 'html_body'],
  ['message_contents', 'headers_json'],
  ['attachments', 'content'],
];

/** PostgreSQL 14+ built with LZ4 lists it among the values of default_toast_compression (older servers have no such setting). */
async function hasLz4(db: AnyDb): Promise<boolean> {
  const { rows } = await sql<{ ok: boolean }>`select 'lz4' = any(enumvals) as ok from pg_settings where name = 'default_toast_compression'`.execute(db);
  return rows[0]?.ok === true;
}

/**
 * PostgreSQL: a message's large columns are compressed with LZ4 instead of pglz where the server has it.
 * LZ4 costs the server far less time per inserted row than pglz, for somewhat more bytes on disk
 * (decision 189; figures in bench/HISTORY.md). Every stored and every sent message pays it, on the
 * server all processes share, while disk is the cheaper resource to add. Rows written before keep their compression; both read back the same.
 * SQLite does not compress: nothing to do there.
 */
export async function up(db: AnyDb): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter) || !(await hasLz4(db))) return;
  for (const [table, column] of COLUMNS) {
    await sql`alter table ${sql.table(table)} alter column ${sql.ref(column)} set compression lz4`.execute(db);
  }
}

export async function down(db: AnyDb): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter) || !(await hasLz4(db))) return;
  for (const [table, column] of COLUMNS) {
    await sql`alter table ${sql.table(table)} alter column ${sql.ref(column)} set compression default`.execute(db);
  }
}
