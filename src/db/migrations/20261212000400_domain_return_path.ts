import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * A sending domain's own return-path host (`bounces.<domain>`), and when its MX and SPF records were last found
 * right (null: not verified, mail goes out with the hosted bounce domain as before). Inbound mail asks by host.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('sending_domains').addColumn('return_path_host', 'text').execute();
  await db.schema.alterTable('sending_domains').addColumn('return_path_verified_at', 'bigint').execute();
  await db.schema.createIndex('sending_domains_return_path_idx').on('sending_domains').columns(['return_path_host']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropIndex('sending_domains_return_path_idx').execute();
  await db.schema.alterTable('sending_domains').dropColumn('return_path_verified_at').execute();
  await db.schema.alterTable('sending_domains').dropColumn('return_path_host').execute();
}
