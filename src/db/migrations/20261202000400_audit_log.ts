import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * The audit log: who changed what in a workspace (members, credentials, domains, webhooks, lists, suppressions,
 * the workspace itself). No foreign key to the workspace: the record of a workspace's deletion outlives it, until
 * the retention sweep. Read newest first by workspace, whole or by action or actor; swept by age.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('audit_log')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('actor_kind', 'text', (c) => c.notNull())
    .addColumn('actor_id', 'text')
    .addColumn('actor_email', 'text')
    .addColumn('ip', 'text')
    .addColumn('target_kind', 'text')
    .addColumn('target_id', 'text')
    .addColumn('details', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('audit_log_workspace_idx').on('audit_log').columns(['workspace_id', 'id']).execute();
  await db.schema.createIndex('audit_log_action_idx').on('audit_log').columns(['workspace_id', 'action', 'id']).execute();
  await db.schema.createIndex('audit_log_actor_idx').on('audit_log').columns(['workspace_id', 'actor_id', 'id']).execute();
  await db.schema.createIndex('audit_log_age_idx').on('audit_log').columns(['created_at']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('audit_log').execute();
}
