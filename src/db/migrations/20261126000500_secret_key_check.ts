import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * One sealed value per database, written by the first process that starts with a MAILROOM_SECRET_KEY: every
 * later start opens it and refuses to run with another key, even before any secret is stored.
 * Encrypting the existing plaintext secrets needs the key, which migrations do not have: that is a start-up
 * step (modules/secrets/secret-key.ts), run after migrating.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('secret_key_check')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('sealed', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('secret_key_check').ifExists().execute();
}
