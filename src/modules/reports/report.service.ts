/**
 * DMARC aggregate and SMTP TLS reports that reach a workspace's mailboxes become figures per sending domain. The
 * message is stored as any other; a message with report-like attachments gets a job (in the storing transaction),
 * and the job reads them, outside any transaction, into this module's tables, or labels the message
 * `report-malformed` when one cannot be read.
 */
import { asWork, type Work } from '../../db/tables.js';
import type { ClaimedJob, Queue } from '../../jobs/queue.js';
import type { JobHandler, JobOutcome } from '../../jobs/worker.js';
import type { Clock } from '../../lib/clock.js';
import { invalid } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import type { Logger } from '../../lib/logger.js';
import type { MailStore } from '../mail/mail.store.js';
import type { TenantContext } from '../tenancy/tenancy.types.js';
import { isReportAttachment } from './report-candidates.js';
import { MAX_REPORT_ATTACHMENT_BYTES, ReportFormatError, reportDocument } from './report-extract.js';
import { parseReportDocument, type DmarcReport, type DomainReport, type TlsReport } from './report-parse.js';
import type { ReportFigures, ReportScope, ReportStore } from './report.store.js';

/** The queue of report parses. */
export const REPORT_QUEUE = 'domain-reports';
/** The label a message gets when an attachment that looked like a report could not be read as one. */
export const MALFORMED_LABEL = 'report-malformed';
/** Report attachments read of one message (a reporter sends one). */
const MAX_REPORT_ATTACHMENTS = 5;
/** Source IPs a figures answer lists (the most messages first). */
export const MAX_REPORT_SOURCES = 1000;
/** The period a figures answer covers when none is asked for. */
const DEFAULT_PERIOD_MS = 30 * 24 * 3600 * 1000;

export interface DmarcSourceView {
  source_ip: string;
  reports: number;
  messages: number;
  dkim: { pass: number; fail: number };
  spf: { pass: number; fail: number };
  aligned: { dkim_pass: number; spf_pass: number };
  dmarc: { pass: number; fail: number };
  disposition: { none: number; quarantine: number; reject: number };
}

export interface TlsPolicyView {
  policy_type: string;
  reports: number;
  successful: number;
  failed: number;
  failure_types: Array<{ result_type: string; count: number }>;
}

export interface DomainReportsView {
  domain_id: string;
  domain: string;
  from: string;
  to: string;
  dmarc: DmarcSourceView[];
  tls: TlsPolicyView[];
}

export interface ReportDeps {
  work: Work;
  clock: Clock;
  logger: Logger;
  store: Pick<ReportStore, 'saveReport' | 'dmarcSums' | 'tlsSums' | 'tlsFailureSums'>;
  queue: Pick<Queue, 'enqueue'>;
  mail: Pick<MailStore, 'findMessage' | 'findAttachment' | 'changeLabels' | 'labelsChanged'>;
  domains: {
    /** The tenant's domain (404 for another workspace's, as the domain routes answer). */
    get(tenant: TenantContext, domainId: string): Promise<{ domain_id: string; domain: string }>;
    /** The names of a workspace's sending domains, lower-case. */
    namesOf(workspaceId: string): Promise<string[]>;
  };
}

export interface ReportService {
  /** Whether a message about to be stored has attachments that look like reports (names and types only). */
  hasReports(message: { subject: string; attachments: ReadonlyArray<{ filename: string; contentType: string }> }): boolean;
  /** In the storing transaction: the job that reads the stored message's reports. */
  enqueueParse(trx: Work, workspaceId: string, messageId: string): Promise<void>;
  handler: JobHandler<{ message_id: string }>;
  /** A domain's figures over a period (ISO 8601 `from` inclusive, `to` exclusive; default the last 30 days). */
  figures(tenant: TenantContext, domainId: string, period: { from?: string | undefined; to?: string | undefined }): Promise<DomainReportsView>;
}

type AttachmentEntry = { attachment_id: string; filename: string; content_type: string; size: number };

export function createReportService(deps: ReportDeps): ReportService {
  const { work, logger } = deps;
  const read = createReportReader(deps);
  return {
    hasReports: (message) => message.attachments.some((a) => isReportAttachment(a, message.subject)),
    async enqueueParse(trx, workspaceId, messageId) {
      await deps.queue.enqueue(trx, { queue: REPORT_QUEUE, workspaceId, payload: { message_id: messageId }, maxAttempts: 5 });
    },
    handler: {
      queue: REPORT_QUEUE,
      concurrency: 2,
      workspaceConcurrency: 1,
      backoff: { baseMs: 5000, factor: 4, capMs: 600_000, jitter: 0.2 },
      handle: (job: ClaimedJob<{ message_id: string }>): Promise<JobOutcome> => read(job.workspaceId ?? '', job.payload.message_id),
    },
    async figures(tenant, domainId, period) {
      const { domain_id, domain } = await deps.domains.get(tenant, domainId);
      const to = period.to === undefined ? deps.clock.now() : timeOf(period.to, 'to');
      const from = period.from === undefined ? to - DEFAULT_PERIOD_MS : timeOf(period.from, 'from');
      if (from >= to) throw invalid('invalid_period', '`from` must be before `to`');
      const scope: ReportScope = { workspaceId: tenant.workspaceId, domain, from, to };
      const [sources, policies, failures] = await Promise.all([deps.store.dmarcSums(work, scope, MAX_REPORT_SOURCES), deps.store.tlsSums(work, scope), deps.store.tlsFailureSums(work, scope)]);
      const dmarc = sources.map((s) => ({
        source_ip: s.source_ip,
        reports: s.reports,
        messages: s.messages,
        dkim: { pass: s.dkim_pass, fail: s.messages - s.dkim_pass },
        spf: { pass: s.spf_pass, fail: s.messages - s.spf_pass },
        aligned: { dkim_pass: s.aligned_dkim_pass, spf_pass: s.aligned_spf_pass },
        dmarc: { pass: s.dmarc_pass, fail: s.messages - s.dmarc_pass },
        disposition: { none: s.messages - s.quarantined - s.rejected, quarantine: s.quarantined, reject: s.rejected },
      }));
      const tls = policies.map((p) => ({ ...p, failure_types: failures.filter((f) => f.policy_type === p.policy_type).map(({ result_type, count }) => ({ result_type, count })) }));
      logger.debug({ domain, sources: dmarc.length, policies: tls.length }, 'domain report figures read');
      return { domain_id, domain, from: new Date(from).toISOString(), to: new Date(to).toISOString(), dmarc, tls };
    },
  };
}

function timeOf(value: string, name: string): number {
  const at = Date.parse(value);
  if (!Number.isFinite(at)) throw invalid('invalid_period', `\`${name}\` must be an ISO 8601 date or date-time`);
  return at;
}

/** The job: read each report attachment of one stored message; keep the figures of the workspace's domains. */
function createReportReader(deps: ReportDeps): (workspaceId: string, messageId: string) => Promise<JobOutcome> {
  const { work, mail, logger } = deps;
  async function reportOf(workspaceId: string, messageId: string, entry: AttachmentEntry): Promise<DomainReport> {
    if (entry.size > MAX_REPORT_ATTACHMENT_BYTES) throw new ReportFormatError(`attachment over ${MAX_REPORT_ATTACHMENT_BYTES} bytes`);
    const attachment = await mail.findAttachment(work, workspaceId, messageId, entry.attachment_id);
    if (!attachment) throw new ReportFormatError('attachment gone');
    return parseReportDocument(await reportDocument(Buffer.from(attachment.content)));
  }
  return async (workspaceId, messageId) => {
    const row = await mail.findMessage(work, workspaceId, messageId);
    // Deleted before its turn: nothing to read.
    if (!row) return { type: 'done' };
    const entries = (JSON.parse(row.attachments_json) as AttachmentEntry[]).filter((a) => isReportAttachment({ filename: a.filename, contentType: a.content_type }, row.subject ?? ''));
    const owned = new Set(await deps.domains.namesOf(workspaceId));
    let malformed: string | null = null;
    for (const entry of entries.slice(0, MAX_REPORT_ATTACHMENTS)) {
      let report: DomainReport;
      try {
        report = await reportOf(workspaceId, messageId, entry);
      } catch (err) {
        if (!(err instanceof ReportFormatError)) throw err;
        malformed = err.message;
        continue;
      }
      await keep(workspaceId, messageId, report, owned);
    }
    if (malformed !== null) {
      logger.info({ workspaceId, messageId, why: malformed }, 'a report attachment could not be read; message labelled');
      await work.transaction().execute(async (trx) => {
        await mail.changeLabels(asWork(trx), workspaceId, messageId, [MALFORMED_LABEL], []);
        await mail.labelsChanged(asWork(trx), workspaceId, row.thread_id, [row]);
      });
    }
    return { type: 'done' };
  };

  /** The report's figures for each of its domains that is one of the workspace's; others are no business of ours. */
  async function keep(workspaceId: string, messageId: string, report: DomainReport, owned: ReadonlySet<string>): Promise<void> {
    const parts = report.kind === 'dmarc' ? [{ domain: report.domain, figures: dmarcFigures(report) }] : tlsParts(report);
    for (const { domain, figures } of parts) {
      if (!owned.has(domain)) {
        logger.info({ workspaceId, messageId, domain }, 'a report about a domain that is no sending domain of the workspace; ignored');
        continue;
      }
      const row = { id: newId('rpt'), workspace_id: workspaceId, kind: report.kind, domain, org_name: report.orgName, external_id: report.reportId, begin_at: report.beginAt, end_at: report.endAt, message_id: messageId, created_at: deps.clock.now() };
      await work.transaction().execute((trx) => deps.store.saveReport(asWork(trx), row, figures));
    }
  }
}

const bit = (verdict: 'pass' | 'fail'): number => (verdict === 'pass' ? 1 : 0);

function dmarcFigures(report: DmarcReport): ReportFigures {
  const dmarc = report.records.map((r) => ({ source_ip: r.sourceIp, count: r.count, disposition: r.disposition, aligned_dkim: bit(r.alignedDkim), aligned_spf: bit(r.alignedSpf), dkim: bit(r.dkim), spf: bit(r.spf), header_from: r.headerFrom }));
  return { dmarc, policies: [], failures: [] };
}

/** A TLS report's policies by their domain: one kept report per domain. */
function tlsParts(report: TlsReport): Array<{ domain: string; figures: ReportFigures }> {
  const byDomain = new Map<string, ReportFigures>();
  for (const policy of report.policies) {
    let figures = byDomain.get(policy.domain);
    if (!figures) byDomain.set(policy.domain, (figures = { dmarc: [], policies: [], failures: [] }));
    figures.policies.push({ policy_type: policy.policyType, successful: policy.successful, failed: policy.failed });
    for (const f of policy.failures) figures.failures.push({ policy_type: policy.policyType, result_type: f.resultType, count: f.count });
  }
  return [...byDomain].map(([domain, figures]) => ({ domain, figures }));
}
