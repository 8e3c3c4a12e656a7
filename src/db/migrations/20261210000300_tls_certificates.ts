import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * The service's own TLS certificate obtained with ACME, shared by every process of one database:
 * - `tls_certificates`: one row per certificate (`acme`): the chain, its key sealed under MAILROOM_SECRET_KEY, a
 *   version every new certificate raises (processes poll it), and the lease of the one process ordering now.
 * - `acme_accounts`: the account key per ACME directory, sealed.
 * - `acme_challenges`: HTTP-01 answers waiting for the CA, answered by whichever api process the CA reaches.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('tls_certificates')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('domains', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('cert_pem', 'text')
    .addColumn('key_sealed', 'text')
    .addColumn('not_after', 'bigint')
    .addColumn('version', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('lease_holder', 'text')
    .addColumn('lease_until', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('last_error', 'text')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('acme_accounts')
    .addColumn('directory_url', 'text', (c) => c.primaryKey())
    .addColumn('key_sealed', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('acme_challenges')
    .addColumn('token', 'text', (c) => c.primaryKey())
    .addColumn('key_authorization', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('acme_challenges').execute();
  await db.schema.dropTable('acme_accounts').execute();
  await db.schema.dropTable('tls_certificates').execute();
}
