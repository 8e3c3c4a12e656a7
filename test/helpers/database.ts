import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/**
 * A fresh, empty database for one test file: a temporary SQLite file, or — when
 * MAILROOM_DATABASE_URL is a postgres:// URL — a new PostgreSQL database created beside the one
 * it names (so parallel test files never share tables). `drop()` removes it.
 */
export interface TestDatabase {
  url: string;
  dialect: 'sqlite' | 'postgres';
  /**
   * MAILROOM_SECRET_KEY for processes on this database: PostgreSQL needs one given (every process the same);
   * on SQLite none, so the key file beside the database is made and used as `mailroom serve` does.
   */
  secretEnv: Record<string, string>;
  drop(): Promise<void>;
}

/** The test key for PostgreSQL databases (64 hex digits = 32 bytes). */
export const TEST_SECRET_KEY = '6d61696c726f6f6d2d746573742d6b65792d3031323334353637383961626364';

export const TEST_DIALECT: 'sqlite' | 'postgres' = process.env.MAILROOM_DATABASE_URL?.startsWith('postgres') ? 'postgres' : 'sqlite';

export async function createTestDatabase(): Promise<TestDatabase> {
  const base = process.env.MAILROOM_DATABASE_URL;
  if (base && /^postgres(ql)?:\/\//.test(base)) {
    const name = `mailroom_t_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
    const admin = new pg.Client({ connectionString: base });
    await admin.connect();
    try {
      await admin.query(`create database ${name}`);
    } finally {
      await admin.end();
    }
    const url = new URL(base);
    url.pathname = `/${name}`;
    return {
      url: url.toString(),
      dialect: 'postgres',
      secretEnv: { MAILROOM_SECRET_KEY: TEST_SECRET_KEY },
      async drop() {
        const client = new pg.Client({ connectionString: base });
        await client.connect();
        try {
          await client.query(`drop database if exists ${name} with (force)`);
        } finally {
          await client.end();
        }
      },
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'mailroom-test-'));
  return {
    url: `sqlite:${join(dir, 'mailroom.db')}`,
    dialect: 'sqlite',
    secretEnv: {},
    drop: async () => rmSync(dir, { recursive: true, force: true }),
  };
}
