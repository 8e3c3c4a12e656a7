/**
 * The reports module's tables: a report once per reporter's id, its figures in the same transaction, and the sums
 * per source IP (DMARC) or per policy type (TLS) over the reports of one domain whose date range meets a period.
 */
import type { Expression, ExpressionBuilder, SqlBool } from 'kysely';
import { deleteWorkspaceBatch } from '../../db/purge.js';
import { insertRows } from '../../db/prepared.js';
import { tablesOf, type Work } from '../../db/tables.js';
import type { DmarcReportRowTable, DomainReportTable, ReportTables, TlsReportFailureTable, TlsReportPolicyTable } from './report.table.js';

/** The figures of one report, without the report's id and workspace (the store adds them). */
export interface ReportFigures {
  dmarc: Array<Omit<DmarcReportRowTable, 'report_id' | 'workspace_id'>>;
  policies: Array<Omit<TlsReportPolicyTable, 'report_id' | 'workspace_id'>>;
  failures: Array<Omit<TlsReportFailureTable, 'report_id' | 'workspace_id'>>;
}

/** Which reports a sum reads: one workspace's about one domain, their date ranges meeting [from, to). */
export interface ReportScope {
  workspaceId: string;
  domain: string;
  from: number;
  to: number;
}

export interface DmarcSourceSum {
  source_ip: string;
  reports: number;
  messages: number;
  dkim_pass: number;
  spf_pass: number;
  aligned_dkim_pass: number;
  aligned_spf_pass: number;
  dmarc_pass: number;
  quarantined: number;
  rejected: number;
}

export interface TlsPolicySum {
  policy_type: string;
  reports: number;
  successful: number;
  failed: number;
}

export function createReportStore() {
  const of = (work: Work) => tablesOf<ReportTables>(work);
  const reportsIn = (work: Work, scope: ReportScope, kind: 'dmarc' | 'tls') =>
    of(work)
      .selectFrom('domain_reports')
      .select('id')
      .where('workspace_id', '=', scope.workspaceId)
      .where('domain', '=', scope.domain)
      .where('kind', '=', kind)
      .where('end_at', '>', scope.from)
      .where('begin_at', '<', scope.to);
  return {
    /** Keep a report and its figures; false (nothing written) when this reporter's report was kept before. */
    async saveReport(work: Work, report: DomainReportTable, figures: ReportFigures): Promise<boolean> {
      const db = of(work);
      const inserted = await db
        .insertInto('domain_reports')
        .values(report)
        .onConflict((oc) => oc.columns(['workspace_id', 'kind', 'domain', 'org_name', 'external_id']).doNothing())
        .executeTakeFirst();
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 0) return false;
      const owned = { report_id: report.id, workspace_id: report.workspace_id };
      await insertRows(db, 'dmarc_report_rows', figures.dmarc.map((r) => ({ ...owned, ...r })));
      await insertRows(db, 'tls_report_policies', figures.policies.map((r) => ({ ...owned, ...r })));
      await insertRows(db, 'tls_report_failures', figures.failures.map((r) => ({ ...owned, ...r })));
      return true;
    },

    /** DMARC figures summed per source IP, most messages first. */
    async dmarcSums(work: Work, scope: ReportScope, limit: number): Promise<DmarcSourceSum[]> {
      type Eb = ExpressionBuilder<ReportTables, 'dmarc_report_rows'>;
      // The messages of the records that meet a test: a sum of counts, not of records.
      const sumIf = (eb: Eb, test: (eb: Eb) => Expression<SqlBool>) => eb.fn.sum<number | string>(eb.case().when(test(eb)).then(eb.ref('count')).else(0).end());
      const rows = await of(work)
        .selectFrom('dmarc_report_rows')
        .where('workspace_id', '=', scope.workspaceId)
        .where('report_id', 'in', reportsIn(work, scope, 'dmarc'))
        .groupBy('source_ip')
        .select((eb) => [
          'source_ip',
          eb.fn.count<number | string>('report_id').distinct().as('reports'),
          eb.fn.sum<number | string>('count').as('messages'),
          sumIf(eb, (e) => e('dkim', '=', 1)).as('dkim_pass'),
          sumIf(eb, (e) => e('spf', '=', 1)).as('spf_pass'),
          sumIf(eb, (e) => e('aligned_dkim', '=', 1)).as('aligned_dkim_pass'),
          sumIf(eb, (e) => e('aligned_spf', '=', 1)).as('aligned_spf_pass'),
          sumIf(eb, (e) => e.or([e('aligned_dkim', '=', 1), e('aligned_spf', '=', 1)])).as('dmarc_pass'),
          sumIf(eb, (e) => e('disposition', '=', 'quarantine')).as('quarantined'),
          sumIf(eb, (e) => e('disposition', '=', 'reject')).as('rejected'),
        ])
        .orderBy('messages', 'desc')
        .orderBy('source_ip')
        .limit(limit)
        .execute();
      return rows.map((r) => ({ ...numbers(r), source_ip: r.source_ip }));
    },

    /** TLS session counts summed per policy type. */
    async tlsSums(work: Work, scope: ReportScope): Promise<TlsPolicySum[]> {
      const rows = await of(work)
        .selectFrom('tls_report_policies')
        .where('workspace_id', '=', scope.workspaceId)
        .where('report_id', 'in', reportsIn(work, scope, 'tls'))
        .groupBy('policy_type')
        .select((eb) => ['policy_type', eb.fn.count<number | string>('report_id').distinct().as('reports'), eb.fn.sum<number | string>('successful').as('successful'), eb.fn.sum<number | string>('failed').as('failed')])
        .orderBy('policy_type')
        .execute();
      return rows.map((r) => ({ ...numbers(r), policy_type: r.policy_type }));
    },

    /** TLS failed sessions summed per policy type and result type. */
    async tlsFailureSums(work: Work, scope: ReportScope): Promise<Array<{ policy_type: string; result_type: string; count: number }>> {
      const rows = await of(work)
        .selectFrom('tls_report_failures')
        .where('workspace_id', '=', scope.workspaceId)
        .where('report_id', 'in', reportsIn(work, scope, 'tls'))
        .groupBy(['policy_type', 'result_type'])
        .select((eb) => ['policy_type', 'result_type', eb.fn.sum<number | string>('count').as('count')])
        .orderBy('policy_type')
        .orderBy('result_type')
        .execute();
      return rows.map((r) => ({ policy_type: r.policy_type, result_type: r.result_type, count: Number(r.count) }));
    },

    purgeWorkspaceBatch: (work: Work, workspaceId: string, limit: number) => deleteWorkspaceBatch(of(work), 'domain_reports', 'id', workspaceId, limit),
  };
}

export type ReportStore = ReturnType<typeof createReportStore>;

/** Sums and counts come back as strings from PostgreSQL (numeric, bigint) and numbers from SQLite. */
function numbers<R extends Record<string, unknown>>(row: R): { [K in keyof R]: number } {
  return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Number(v ?? 0)])) as { [K in keyof R]: number };
}
