import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- historic schema, not today's Database type
type AnyDb = Kysely<any>;

/**
 * Figures of DMARC aggregate and TLS reports per sending domain. Reports end with their workspace; their figures
 * with their report (cascades). Read by workspace, domain and date range; a report is kept once per reporter's id.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('domain_reports')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('domain', 'text', (c) => c.notNull())
    .addColumn('org_name', 'text', (c) => c.notNull())
    .addColumn('external_id', 'text', (c) => c.notNull())
    .addColumn('begin_at', 'bigint', (c) => c.notNull())
    .addColumn('end_at', 'bigint', (c) => c.notNull())
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('domain_reports_once_idx').unique().on('domain_reports').columns(['workspace_id', 'kind', 'domain', 'org_name', 'external_id']).execute();
  await db.schema.createIndex('domain_reports_range_idx').on('domain_reports').columns(['workspace_id', 'domain', 'kind', 'end_at']).execute();
  const figures = (name: string) =>
    db.schema
      .createTable(name)
      .addColumn('report_id', 'text', (c) => c.notNull().references('domain_reports.id').onDelete('cascade'))
      .addColumn('workspace_id', 'text', (c) => c.notNull());
  await figures('dmarc_report_rows')
    .addColumn('source_ip', 'text', (c) => c.notNull())
    .addColumn('count', 'bigint', (c) => c.notNull())
    .addColumn('disposition', 'text', (c) => c.notNull())
    .addColumn('aligned_dkim', 'integer', (c) => c.notNull())
    .addColumn('aligned_spf', 'integer', (c) => c.notNull())
    .addColumn('dkim', 'integer', (c) => c.notNull())
    .addColumn('spf', 'integer', (c) => c.notNull())
    .addColumn('header_from', 'text')
    .execute();
  await figures('tls_report_policies')
    .addColumn('policy_type', 'text', (c) => c.notNull())
    .addColumn('successful', 'bigint', (c) => c.notNull())
    .addColumn('failed', 'bigint', (c) => c.notNull())
    .execute();
  await figures('tls_report_failures')
    .addColumn('policy_type', 'text', (c) => c.notNull())
    .addColumn('result_type', 'text', (c) => c.notNull())
    .addColumn('count', 'bigint', (c) => c.notNull())
    .execute();
  for (const table of ['dmarc_report_rows', 'tls_report_policies', 'tls_report_failures']) {
    await db.schema.createIndex(`${table}_report_idx`).on(table).columns(['report_id']).execute();
  }
}

export async function down(db: AnyDb): Promise<void> {
  for (const table of ['tls_report_failures', 'tls_report_policies', 'dmarc_report_rows', 'domain_reports']) await db.schema.dropTable(table).execute();
}
