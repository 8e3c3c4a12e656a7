/**
 * Figures from DMARC aggregate and SMTP TLS reports mailed to a workspace's mailboxes, per sending domain. A report
 * row is one reporter's report about one domain; its figures hang off it (cascade). The message the report came in
 * is named, not referenced: the figures outlive its deletion. Times are epoch milliseconds.
 */
export interface DomainReportTable {
  id: string;
  workspace_id: string;
  kind: 'dmarc' | 'tls';
  /** The sending domain the report is about, lower-case. */
  domain: string;
  org_name: string;
  /** The reporter's report id: with org_name, kind and domain, a report mailed twice is kept once. */
  external_id: string;
  begin_at: number;
  end_at: number;
  message_id: string;
  created_at: number;
}

/** One record of a DMARC report: a source IP and its results. Verdicts are 1 (pass) or 0 (fail). */
export interface DmarcReportRowTable {
  report_id: string;
  workspace_id: string;
  source_ip: string;
  count: number;
  disposition: string;
  aligned_dkim: number;
  aligned_spf: number;
  dkim: number;
  spf: number;
  header_from: string | null;
}

/** One policy of a TLS report: its session counts. */
export interface TlsReportPolicyTable {
  report_id: string;
  workspace_id: string;
  policy_type: string;
  successful: number;
  failed: number;
}

/** Failed sessions of one TLS report policy by result type (RFC 8460 section 4.3). */
export interface TlsReportFailureTable {
  report_id: string;
  workspace_id: string;
  policy_type: string;
  result_type: string;
  count: number;
}

/** The reports module's tables. */
export interface ReportTables {
  domain_reports: DomainReportTable;
  dmarc_report_rows: DmarcReportRowTable;
  tls_report_policies: TlsReportPolicyTable;
  tls_report_failures: TlsReportFailureTable;
}
