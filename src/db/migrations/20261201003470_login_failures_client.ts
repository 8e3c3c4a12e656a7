import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * Login failures remember the client address they came from (an IPv4 address, or an IPv6 /64), so that failures
 * from one address throttle that address and not the account's owner elsewhere. Older rows get '' (no address),
 * which counts for the account only; they leave the window within 15 minutes.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('login_failures').addColumn('client', 'text', (c) => c.notNull().defaultTo('')).execute();
  await db.schema.createIndex('login_failures_client_idx').on('login_failures').columns(['email', 'client', 'failed_at']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropIndex('login_failures_client_idx').execute();
  await db.schema.alterTable('login_failures').dropColumn('client').execute();
}
