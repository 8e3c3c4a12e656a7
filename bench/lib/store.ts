import SQLite from 'better-sqlite3';
import pg from 'pg';
import type { BenchDatabase } from './databases.js';

const COUNT_SQL = 'select count(*) as n from messages m join mailboxes b on b.id = m.mailbox_id where b.address = ';

/**
 * Messages stored in the mailbox `address`, counted as rows in the database (not from the folder
 * counters the API answers with), so a message that was answered 250 but not written shows up.
 */
export async function countStoredMessages(database: BenchDatabase, address: string): Promise<number> {
  if (database.dialect === 'sqlite') {
    const path = database.url.slice('sqlite:'.length);
    const db = new SQLite(path, { readonly: true, fileMustExist: true });
    try {
      const row = db.prepare(`${COUNT_SQL}?`).get(address) as { n: number };
      return Number(row.n);
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: database.url, connectionTimeoutMillis: 5000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    const result = await client.query<{ n: string }>(`${COUNT_SQL}$1`, [address]);
    return Number(result.rows[0]?.n ?? 0);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * PostgreSQL after a bulk load: VACUUM ANALYZE, which autovacuum would have done by the time a real
 * mailbox held that much mail (statistics for the planner, visibility map for index-only scans).
 * SQLite has no automatic equivalent, so nothing is done there.
 */
export async function settleAfterBulkLoad(database: BenchDatabase): Promise<void> {
  if (database.dialect !== 'postgres') return;
  const client = new pg.Client({ connectionString: database.url, connectionTimeoutMillis: 5000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query('vacuum analyze');
  } finally {
    await client.end().catch(() => undefined);
  }
}
