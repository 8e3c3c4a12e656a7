/**
 * DMARC aggregate reports (RFC 7489 appendix C, XML) and SMTP TLS reports (RFC 8460 section 4, JSON) read into
 * the figures the reports module keeps. Pure and bounded: the document is at most MAX_REPORT_DOCUMENT_BYTES
 * (report-extract.ts), and a report with more records or policies than the caps below is refused whole.
 */
import { isIP } from 'node:net';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { ReportFormatError } from './report-extract.js';

/** Records of one DMARC report (one per source IP and result set: a large receiver's day stays in the thousands). */
export const MAX_DMARC_RECORDS = 10_000;
/** Policies of one TLS report, and failure details of one policy. */
export const MAX_TLS_POLICIES = 1_000;
export const MAX_TLS_FAILURE_DETAILS = 1_000;
/** Longest text kept of a reporter's name, a report id, a policy type or a failure's result type. */
const MAX_TEXT = 255;

export type Verdict = 'pass' | 'fail';
export type Disposition = 'none' | 'quarantine' | 'reject';

export interface DmarcRecord {
  sourceIp: string;
  count: number;
  disposition: Disposition;
  /** policy_evaluated: whether DKIM and SPF passed aligned (what DMARC judged by). */
  alignedDkim: Verdict;
  alignedSpf: Verdict;
  /** auth_results: whether any DKIM signature verified, and whether SPF passed (aligned or not). */
  dkim: Verdict;
  spf: Verdict;
  headerFrom: string | null;
}

export interface DmarcReport {
  kind: 'dmarc';
  orgName: string;
  reportId: string;
  /** policy_published/domain, lower-case. */
  domain: string;
  beginAt: number;
  endAt: number;
  records: DmarcRecord[];
}

export interface TlsPolicy {
  policyType: string;
  /** policy-domain, lower-case. */
  domain: string;
  successful: number;
  failed: number;
  failures: Array<{ resultType: string; count: number }>;
}

export interface TlsReport {
  kind: 'tls';
  orgName: string;
  reportId: string;
  beginAt: number;
  endAt: number;
  policies: TlsPolicy[];
}

export type DomainReport = DmarcReport | TlsReport;

const fail = (why: string): never => {
  throw new ReportFormatError(why);
};

/** A report from its document: XML is DMARC, JSON is TLS-RPT; anything else, or either out of shape, throws ReportFormatError. */
export function parseReportDocument(document: Buffer): DomainReport {
  const text = document.toString('utf8').replace(/^\uFEFF/, '').trimStart();
  if (text.startsWith('<')) return parseDmarc(text);
  if (text.startsWith('{')) return parseTlsRpt(text);
  return fail('neither XML nor JSON');
}

// Only the five predefined entities are decoded: entity processing is off (no DOCTYPE is read at all).
const PREDEFINED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
const decode = (value: string): string => value.replace(/&(amp|lt|gt|quot|apos);/g, (_, name: string) => PREDEFINED[name]!);

const xmlParser = new XMLParser({
  ignoreAttributes: true,
  parseTagValue: false,
  processEntities: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  // `dkim` and `spf` repeat under auth_results; under policy_evaluated they are single words (leaves).
  isArray: (tagName, _path, isLeafNode) => tagName === 'record' || ((tagName === 'dkim' || tagName === 'spf') && !isLeafNode),
});

type Node = Record<string, unknown>;
const nodeOf = (value: unknown, what: string): Node => (value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Node) : fail(`${what} missing`));
const listOf = (value: unknown): Node[] => (Array.isArray(value) ? value.filter((v): v is Node => v !== null && typeof v === 'object') : []);
function textOf(value: unknown, what: string): string {
  if (typeof value !== 'string' && typeof value !== 'number') return fail(`${what} missing`);
  const text = decode(String(value).trim());
  return text.length === 0 ? fail(`${what} empty`) : text.slice(0, MAX_TEXT);
}
function countOf(value: unknown, what: string): number {
  const n = typeof value === 'number' ? value : Number(textOf(value, what));
  return Number.isSafeInteger(n) && n >= 0 && n <= 2 ** 31 ? n : fail(`${what} is no count`);
}
const domainOf = (value: unknown, what: string): string => {
  const domain = textOf(value, what).toLowerCase().replace(/\.$/, '');
  return /^[a-z0-9-]+(\.[a-z0-9-]+)+$/.test(domain) ? domain : fail(`${what} is no domain`);
};
const verdictOf = (value: unknown): Verdict => (typeof value === 'string' && value.trim().toLowerCase() === 'pass' ? 'pass' : 'fail');

function parseDmarc(text: string): DmarcReport {
  // No report needs a DTD; refusing one keeps every entity, external or expanding, out (XXE, billion laughs).
  if (/<!DOCTYPE|<!ENTITY/i.test(text)) fail('DTD in a DMARC report');
  // Counted before the parse, so that a report with too many records costs a scan, not a tree.
  if ((text.match(/<record[\s>]/g)?.length ?? 0) > MAX_DMARC_RECORDS) fail(`over ${MAX_DMARC_RECORDS} records`);
  const valid = XMLValidator.validate(text);
  if (valid !== true) fail(`XML not well-formed: ${valid.err.msg}`);
  const feedback = nodeOf((xmlParser.parse(text) as Node).feedback, 'feedback');
  const meta = nodeOf(feedback.report_metadata, 'report_metadata');
  const range = nodeOf(meta.date_range, 'date_range');
  const records = listOf(feedback.record).map(dmarcRecord);
  return {
    kind: 'dmarc',
    orgName: textOf(meta.org_name, 'org_name'),
    reportId: textOf(meta.report_id, 'report_id'),
    domain: domainOf(nodeOf(feedback.policy_published, 'policy_published').domain, 'policy domain'),
    beginAt: countOf(range.begin, 'begin') * 1000,
    endAt: countOf(range.end, 'end') * 1000,
    records,
  };
}

function dmarcRecord(record: Node): DmarcRecord {
  const row = nodeOf(record.row, 'row');
  const evaluated = nodeOf(row.policy_evaluated, 'policy_evaluated');
  const sourceIp = textOf(row.source_ip, 'source_ip');
  if (isIP(sourceIp) === 0) fail('source_ip is no IP address');
  const disposition = dispositionOf(textOf(evaluated.disposition, 'disposition').toLowerCase());
  const auth = record.auth_results === undefined ? {} : nodeOf(record.auth_results, 'auth_results');
  const anyPass = (results: unknown): Verdict => (listOf(results).some((r) => verdictOf(r.result) === 'pass') ? 'pass' : 'fail');
  const identifiers = record.identifiers === undefined ? {} : nodeOf(record.identifiers, 'identifiers');
  return {
    sourceIp,
    count: countOf(row.count, 'count'),
    disposition,
    alignedDkim: verdictOf(evaluated.dkim),
    alignedSpf: verdictOf(evaluated.spf),
    dkim: anyPass(auth.dkim),
    spf: anyPass(auth.spf),
    headerFrom: typeof identifiers.header_from === 'string' ? identifiers.header_from.trim().toLowerCase().slice(0, MAX_TEXT) : null,
  };
}

const DISPOSITIONS: readonly Disposition[] = ['none', 'quarantine', 'reject'];
const dispositionOf = (value: string): Disposition => DISPOSITIONS.find((d) => d === value) ?? fail('unknown disposition');

function parseTlsRpt(text: string): TlsReport {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return fail('JSON not well-formed');
  }
  const report = nodeOf(json, 'report');
  const range = nodeOf(report['date-range'], 'date-range');
  const policies = Array.isArray(report.policies) ? report.policies : fail('policies missing');
  if (policies.length > MAX_TLS_POLICIES) fail(`over ${MAX_TLS_POLICIES} policies`);
  return {
    kind: 'tls',
    orgName: textOf(report['organization-name'], 'organization-name'),
    reportId: textOf(report['report-id'], 'report-id'),
    beginAt: timeOf(range['start-datetime'], 'start-datetime'),
    endAt: timeOf(range['end-datetime'], 'end-datetime'),
    policies: policies.map((p) => tlsPolicy(nodeOf(p, 'policy'))),
  };
}

function timeOf(value: unknown, what: string): number {
  const at = Date.parse(textOf(value, what));
  return Number.isFinite(at) ? at : fail(`${what} is no date-time`);
}

function tlsPolicy(entry: Node): TlsPolicy {
  const policy = nodeOf(entry.policy, 'policy');
  const summary = nodeOf(entry.summary, 'summary');
  const details = entry['failure-details'] === undefined ? [] : Array.isArray(entry['failure-details']) ? entry['failure-details'] : fail('failure-details is no list');
  if (details.length > MAX_TLS_FAILURE_DETAILS) fail(`over ${MAX_TLS_FAILURE_DETAILS} failure details`);
  // Several details of one result type (different MX hosts or sending IPs) are one figure.
  const byType = new Map<string, number>();
  for (const detail of details) {
    const d = nodeOf(detail, 'failure detail');
    const type = textOf(d['result-type'], 'result-type').toLowerCase();
    byType.set(type, (byType.get(type) ?? 0) + countOf(d['failed-session-count'], 'failed-session-count'));
  }
  return {
    policyType: textOf(policy['policy-type'], 'policy-type').toLowerCase(),
    domain: domainOf(policy['policy-domain'], 'policy-domain'),
    successful: countOf(summary['total-successful-session-count'], 'total-successful-session-count'),
    failed: countOf(summary['total-failure-session-count'], 'total-failure-session-count'),
    failures: [...byType].map(([resultType, count]) => ({ resultType, count })),
  };
}
