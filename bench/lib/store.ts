import { createPrivateKey } from 'node:crypto';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { createSecretBox, isSealed, parseSecretKey } from '../../src/lib/secret-box.js';
import type { BenchDatabase } from './databases.js';

/**
 * Rows of one read of the bench's own database, over a connection opened for it (SQLite read-only); the same
 * statement in each driver's placeholder style (`?`, `$1`).
 */
export async function benchRows<T>(database: BenchDatabase, statement: { sqlite: string; postgres: string }, params: readonly unknown[] = []): Promise<T[]> {
  if (database.dialect === 'sqlite') {
    const db = new SQLite(database.url.slice('sqlite:'.length), { readonly: true, fileMustExist: true });
    try {
      return db.prepare(statement.sqlite).all(...params) as T[];
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: database.url, connectionTimeoutMillis: 5000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query(statement.postgres, [...params])).rows as T[];
  } finally {
    await client.end().catch(() => undefined);
  }
}

const COUNT_SQL = 'select count(*) as n from messages m join mailboxes b on b.id = m.mailbox_id where b.address = ';

/**
 * Messages stored in the mailbox `address`, counted as rows in the database (not from the folder
 * counters the API answers with), so a message that was answered 250 but not written shows up.
 */
export async function countStoredMessages(database: BenchDatabase, address: string): Promise<number> {
  const rows = await benchRows<{ n: number | string }>(database, { sqlite: `${COUNT_SQL}?`, postgres: `${COUNT_SQL}$1` }, [address]);
  return Number(rows[0]?.n ?? 0);
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

/** Outbound messages by delivery status (queued, processing, accepted, failed, unknown), plus the queue. */
export interface OutboundCounts {
  /** Rows in `outbound`, by status. */
  byStatus: Record<string, number>;
  total: number;
  /** Rows with a last_error (a deferred attempt, a failure), and one such error. */
  withError: number;
  firstError: string | null;
  /** Jobs left in the delivery queue (a delivered message's job is deleted), by state. */
  jobs: Record<string, number>;
}

export interface OutboundMonitor {
  counts(): Promise<OutboundCounts>;
  close(): Promise<void>;
}

const STATUS_SQL = 'select status, count(*) as n from outbound group by status';
const ERROR_SQL = 'select count(*) as n, min(last_error) as first from outbound where last_error is not null';
const JOBS_SQL = "select state, count(*) as n from jobs where queue = 'delivery' group by state";

/**
 * One open connection for polling the outbound pipeline's state while it runs (counting rows, not
 * asking the API, so the poll costs the measured process nothing).
 */
export async function openOutboundMonitor(database: BenchDatabase): Promise<OutboundMonitor> {
  const shape = (statuses: Array<{ status: string; n: number | string }>, errors: { n: number | string; first: string | null } | undefined, jobs: Array<{ state: string; n: number | string }>): OutboundCounts => {
    const byStatus = Object.fromEntries(statuses.map((r) => [r.status, Number(r.n)]));
    return {
      byStatus,
      total: Object.values(byStatus).reduce((a, b) => a + b, 0),
      withError: Number(errors?.n ?? 0),
      firstError: errors?.first ?? null,
      jobs: Object.fromEntries(jobs.map((r) => [r.state, Number(r.n)])),
    };
  };
  if (database.dialect === 'sqlite') {
    const db = new SQLite(database.url.slice('sqlite:'.length), { readonly: true, fileMustExist: true });
    const statuses = db.prepare(STATUS_SQL);
    const errors = db.prepare(ERROR_SQL);
    const jobs = db.prepare(JOBS_SQL);
    return {
      async counts() {
        // One read transaction, so the three answers describe the same moment.
        return db.transaction(() =>
          shape(statuses.all() as Array<{ status: string; n: number }>, errors.get() as { n: number; first: string | null } | undefined, jobs.all() as Array<{ state: string; n: number }>),
        )();
      },
      async close() {
        db.close();
      },
    };
  }
  const client = new pg.Client({ connectionString: database.url, connectionTimeoutMillis: 5000 });
  client.on('error', () => undefined);
  await client.connect();
  return {
    async counts() {
      await client.query('begin isolation level repeatable read read only');
      try {
        const statuses = await client.query<{ status: string; n: string }>(STATUS_SQL);
        const errors = await client.query<{ n: string; first: string | null }>(ERROR_SQL);
        const jobs = await client.query<{ state: string; n: string }>(JOBS_SQL);
        return shape(statuses.rows, errors.rows[0], jobs.rows);
      } finally {
        await client.query('commit');
      }
    },
    async close() {
      await client.end().catch(() => undefined);
    },
  };
}

/** The service's DKIM key for hosted domains, as it stored it (generated at its first signature). */
async function readStoredHostedKey(database: BenchDatabase): Promise<{ selector: string; private_key: string } | undefined> {
  const sql = "select selector, private_key from service_keys where name = 'hosted-dkim'";
  if (database.dialect === 'sqlite') {
    const db = new SQLite(database.url.slice('sqlite:'.length), { readonly: true, fileMustExist: true });
    try {
      return db.prepare(sql).get() as { selector: string; private_key: string } | undefined;
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: database.url, connectionTimeoutMillis: 5000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query<{ selector: string; private_key: string }>(sql)).rows[0];
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * The hosted DKIM key in PEM, opened with the service's MAILROOM_SECRET_KEY (keys are sealed at rest). The PEM is
 * parsed here because nodemailer skips signing on a key it cannot use: a baseline given the sealed text would send
 * unsigned mail, cheaper than what the service does, and the ratio would mislead.
 */
export async function readHostedDkimKey(database: BenchDatabase, secretKey: string): Promise<{ selector: string; privateKey: string } | null> {
  const row = await readStoredHostedKey(database);
  if (!row) return null;
  // The context the service seals it under (domain.service.ts: serviceKeyContext).
  const privateKey = isSealed(row.private_key) ? createSecretBox(parseSecretKey(secretKey)).open(row.private_key, 'service_keys.private_key:hosted-dkim') : row.private_key;
  createPrivateKey(privateKey);
  return { selector: row.selector, privateKey };
}
