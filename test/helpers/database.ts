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
  drop(): Promise<void>;
}

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
    drop: async () => rmSync(dir, { recursive: true, force: true }),
  };
}
