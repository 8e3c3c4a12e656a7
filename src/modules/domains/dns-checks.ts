import type { DnsResolve } from '../../lib/dns.js';
import { hashToken } from '../../lib/secrets.js';

/**
 * The per-record checks of a sending domain's DNS (verify's answer): what was found, what is expected, and
 * in words why the two differ. Pure functions over a TXT (or MX) lookup, so each status has a small unit test.
 */

export const VERIFICATION_PREFIX = 'mailroom-verification=';

export type CheckStatus = 'ok' | 'missing' | 'mismatch' | 'error';

export interface RecordCheck {
  record_name: string;
  record_type: 'TXT' | 'MX';
  /** The value to publish (the verification token is not stored, so its value is described, not given). */
  expected: string;
  /** The relevant values DNS returned now (an MX as `<preference> <host>`); null when it returned none or was not asked. */
  found: string[] | null;
  status: CheckStatus;
  reason: string;
}

export interface DomainChecks {
  verification: RecordCheck;
  dkim: RecordCheck;
  spf: RecordCheck;
  /** The return-path host's records, when the domain has one (return_path_host). */
  return_path_mx?: RecordCheck;
  return_path_spf?: RecordCheck;
}

/** A TXT lookup's outcome: the values, none (NXDOMAIN, no TXT), or a DNS failure with its code. */
export type TxtLookup = { kind: 'values'; values: string[] } | { kind: 'none' } | { kind: 'failed'; code: string };

const NO_RECORDS = new Set(['ENOTFOUND', 'ENODATA', 'NXDOMAIN', 'ENONAME']);

/** A lookup's values, none (NXDOMAIN, no record of the type), or the DNS failure's code. */
async function lookup(resolve: DnsResolve, name: string, rrtype: string, read: (answer: unknown) => string[]): Promise<TxtLookup> {
  try {
    const values = read(await resolve(name, rrtype));
    return values.length > 0 ? { kind: 'values', values } : { kind: 'none' };
  } catch (err) {
    const code = typeof err === 'object' && err !== null && typeof (err as { code?: unknown }).code === 'string' ? (err as { code: string }).code : 'EUNKNOWN';
    return NO_RECORDS.has(code) ? { kind: 'none' } : { kind: 'failed', code };
  }
}

/** TXT answers come as arrays of character-strings; a record is their concatenation (RFC 7208 section 3.3). */
function txtValues(answer: unknown): string[] {
  if (!Array.isArray(answer)) return [];
  return answer.map((record: unknown) => (Array.isArray(record) ? record.join('') : String(record)));
}

/** Look a name's TXT records up now (never cached: a record just published must count). */
export const lookupTxt = (resolve: DnsResolve, name: string): Promise<TxtLookup> => lookup(resolve, name, 'TXT', txtValues);

/** MX answers as `<preference> <exchange>`, the exchange lower-cased without its final dot, most preferred first. */
function mxValues(answer: unknown): string[] {
  if (!Array.isArray(answer)) return [];
  return (answer as Array<{ priority?: unknown; exchange?: unknown }>)
    .filter((mx) => typeof mx.exchange === 'string')
    .sort((a, b) => Number(a.priority) - Number(b.priority))
    .map((mx) => `${Number(mx.priority)} ${String(mx.exchange).toLowerCase().replace(/\.$/, '')}`);
}

/** Look a name's MX records up now. */
export const lookupMx = (resolve: DnsResolve, name: string): Promise<TxtLookup> => lookup(resolve, name, 'MX', mxValues);

const failedReason = (name: string, code: string) => `DNS did not answer for ${name} (${code}); try again later`;

/** Whether a TXT value is `mailroom-verification=<token>` for the token whose hash is kept. */
export const holdsToken = (value: string, hash: string): boolean =>
  value.startsWith(VERIFICATION_PREFIX) && hashToken(value.slice(VERIFICATION_PREFIX.length).trim()) === hash;

/** The verification record of a pending domain. */
export function checkVerification(domain: string, hash: string, lookup: TxtLookup): RecordCheck {
  const record_name = `_mailroom-verification.${domain}`;
  const base = { record_name, record_type: 'TXT' as const, expected: `${VERIFICATION_PREFIX}<the token shown at creation or by the last records regeneration>` };
  if (lookup.kind === 'failed') return { ...base, found: null, status: 'error', reason: failedReason(record_name, lookup.code) };
  if (lookup.kind === 'none') {
    return { ...base, found: null, status: 'missing', reason: `no TXT record at ${record_name} yet: publish it (a new record can take a while to show in DNS)` };
  }
  if (lookup.values.some((v) => holdsToken(v, hash))) return { ...base, found: lookup.values, status: 'ok', reason: "the record holds this domain's token" };
  const ours = lookup.values.some((v) => v.startsWith(VERIFICATION_PREFIX));
  const reason = ours
    ? `the TXT record at ${record_name} holds another token: publish the value from creation, or from the last records regeneration (a regeneration makes every earlier token stop working)`
    : `the TXT records at ${record_name} hold no ${VERIFICATION_PREFIX} value`;
  return { ...base, found: lookup.values, status: 'mismatch', reason };
}

/** A verified domain's verification record is not looked up any more: it has done its work. */
export function verifiedCheck(domain: string, verifiedAt: string): RecordCheck {
  return {
    record_name: `_mailroom-verification.${domain}`,
    record_type: 'TXT',
    expected: `${VERIFICATION_PREFIX}<token>`,
    found: null,
    status: 'ok',
    reason: `verified ${verifiedAt}; the record is not looked up any more and may be removed`,
  };
}

/** RFC 6376 section 3.2 tag=value list; FWS inside a value (the base64 of `p=`) is dropped. */
export function dkimTags(value: string): Map<string, string> {
  const tags = new Map<string, string>();
  for (const part of value.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    tags.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).replace(/\s+/g, ''));
  }
  return tags;
}

/** Why one DKIM record is not the key this domain signs with, or null when it is. */
function dkimProblem(value: string, publicKey: string): string | null {
  const tags = dkimTags(value);
  const p = tags.get('p');
  if (p === undefined) return 'it has no p= tag (no public key)';
  if (p === '') return 'its p= is empty, which means a revoked key (RFC 6376 §3.6.1)';
  if ((tags.get('k') ?? 'rsa').toLowerCase() !== 'rsa') return `its key type k=${tags.get('k')} is not rsa`;
  return p === publicKey ? null : "its p= is another public key than this domain's (an older selector's or another provider's?)";
}

/** The DKIM record of the domain's selector: the key its mail is signed with. */
export function checkDkim(record: { record_name: string; record_value: string }, domain: string, publicKey: string, lookup: TxtLookup): RecordCheck {
  const { record_name } = record;
  const base = { record_name, record_type: 'TXT' as const, expected: record.record_value };
  if (lookup.kind === 'failed') return { ...base, found: null, status: 'error', reason: failedReason(record_name, lookup.code) };
  if (lookup.kind === 'none') {
    return {
      ...base,
      found: null,
      status: 'missing',
      reason: `no TXT record at ${record_name}: mail from ${domain} is signed with this key all the same, and receivers cannot check the signature (so it cannot pass DMARC) until the record is published`,
    };
  }
  const problems = lookup.values.map((v) => dkimProblem(v, publicKey));
  if (problems.includes(null)) return { ...base, found: lookup.values, status: 'ok', reason: 'the published key is the one mail from this domain is signed with' };
  return { ...base, found: lookup.values, status: 'mismatch', reason: `the TXT record at ${record_name} is not this domain's key: ${problems[0]}; publish the expected value instead` };
}

/** The SPF records among a TXT lookup's values (`v=spf1`); none when there was no answer. */
const spfRecords = (lookup: TxtLookup) => (lookup.kind === 'values' ? lookup.values.filter((v) => /^v=spf1(\s|$)/i.test(v.trim())) : []);
/** Whether an SPF record authorizes what the return-path domain's does: it includes it or redirects to it. */
function authorizes(spf: string, returnPathDomain: string): boolean {
  const terms = spf.trim().toLowerCase().split(/\s+/);
  return terms.includes(`include:${returnPathDomain}`) || terms.includes(`redirect=${returnPathDomain}`);
}

/**
 * SPF only at the domain itself; it is advice (the envelope sender is in the return-path domain, or at the
 * domain's own return-path host, which has its own check).
 */
export function checkSpf(domain: string, returnPathDomain: string, lookup: TxtLookup, returnPathHost: string | null = null): RecordCheck {
  const base = { record_name: domain, record_type: 'TXT' as const, expected: `v=spf1 include:${returnPathDomain} ~all` };
  const why = returnPathHost
    ? `Not required: mail from ${domain} has its envelope sender at its return-path host ${returnPathHost} once that is verified (bounces+…@${returnPathDomain} until then), so receivers check SPF there, and DMARC for ${domain} passes through the DKIM signature`
    : `Not required: Mailroom's envelope sender is bounces+…@${returnPathDomain}, so receivers check SPF there, and DMARC for ${domain} passes through the DKIM signature (for SPF to align with ${domain} too, set a return_path_host under it)`;
  if (lookup.kind === 'failed') return { ...base, found: null, status: 'error', reason: failedReason(domain, lookup.code) };
  const spf = spfRecords(lookup);
  if (spf.length === 0) {
    return { ...base, found: null, status: 'missing', reason: `no SPF record at ${domain}. ${why}; publish the expected record if nothing else sends mail as ${domain}` };
  }
  if (spf.length > 1) {
    return { ...base, found: spf, status: 'error', reason: `${domain} has ${spf.length} SPF records, and receivers treat that as a permanent error (RFC 7208 §4.5): merge them into one` };
  }
  if (authorizes(spf[0]!, returnPathDomain)) {
    return { ...base, found: spf, status: 'ok', reason: `the SPF record of ${domain} includes ${returnPathDomain}` };
  }
  return { ...base, found: spf, status: 'mismatch', reason: `the SPF record of ${domain} does not include ${returnPathDomain}. ${why}; add include:${returnPathDomain} before its all to cover tools that check the From domain's SPF` };
}

/** The return-path host's MX: bounces and reports to bounces+…@<host> must reach Mailroom's inbound listener. */
export function checkReturnPathMx(host: string, inboundHost: string, lookup: TxtLookup): RecordCheck {
  const base = { record_name: host, record_type: 'MX' as const, expected: `10 ${inboundHost}` };
  const until = 'until it is, mail from the domain keeps the hosted return path';
  if (lookup.kind === 'failed') return { ...base, found: null, status: 'error', reason: failedReason(host, lookup.code) };
  if (lookup.kind === 'none') return { ...base, found: null, status: 'missing', reason: `no MX record at ${host}: bounces sent there would not reach Mailroom; publish MX 10 ${inboundHost} (${until})` };
  const others = lookup.values.filter((v) => v.slice(v.indexOf(' ') + 1) !== inboundHost);
  if (others.length === 0) return { ...base, found: lookup.values, status: 'ok', reason: `the MX of ${host} is Mailroom's inbound host ${inboundHost}` };
  const what = others.length < lookup.values.length ? `${host} also has MX ${others.join(', ')}` : `the MX of ${host} is not ${inboundHost}`;
  return { ...base, found: lookup.values, status: 'mismatch', reason: `${what}: bounces could reach a host that is not Mailroom's; publish only MX 10 ${inboundHost} (${until})` };
}

/** The return-path host's SPF: receivers check the envelope sender's domain, which is the host once it is verified. */
export function checkReturnPathSpf(host: string, returnPathDomain: string, lookup: TxtLookup): RecordCheck {
  const base = { record_name: host, record_type: 'TXT' as const, expected: `v=spf1 include:${returnPathDomain} ~all` };
  if (lookup.kind === 'failed') return { ...base, found: null, status: 'error', reason: failedReason(host, lookup.code) };
  const spf = spfRecords(lookup);
  if (spf.length === 0) {
    return { ...base, found: null, status: 'missing', reason: `no SPF record at ${host}: mail with its envelope sender there would fail SPF; publish the expected record (until then mail keeps the hosted return path)` };
  }
  if (spf.length > 1) {
    return { ...base, found: spf, status: 'mismatch', reason: `${host} has ${spf.length} SPF records, and receivers treat that as a permanent error (RFC 7208 §4.5): keep only the expected one` };
  }
  if (authorizes(spf[0]!, returnPathDomain)) return { ...base, found: spf, status: 'ok', reason: `the SPF record of ${host} includes ${returnPathDomain}, which authorizes Mailroom's sending` };
  return { ...base, found: spf, status: 'mismatch', reason: `the SPF record of ${host} does not include ${returnPathDomain}, so mail with its envelope sender there would fail SPF: add include:${returnPathDomain} before its all` };
}

/** One sentence for the whole answer: what blocks, or what still lacks once nothing does. */
export function summarize(domain: string, verified: boolean, checks: DomainChecks, returnPathVerified = false): string {
  if (!verified) {
    const v = checks.verification;
    const what = v.status === 'missing' ? 'the verification record is not published yet' : v.status === 'mismatch' ? "the verification record does not hold this domain's token" : 'DNS did not answer for the verification record';
    const dkim = checks.dkim.status === 'ok' ? '' : `; DKIM: ${checks.dkim.status}`;
    return `${domain} is pending: ${what}${dkim}`;
  }
  const { return_path_mx: mx, return_path_spf: spf } = checks;
  const returnPath = !mx || !spf ? '' : returnPathVerified ? `; its return path ${mx.record_name} is verified` : `; its return path ${mx.record_name} is not verified (MX: ${mx.status}, SPF: ${spf.status}), so mail keeps the hosted one`;
  if (checks.dkim.status === 'ok') return `${domain} is verified and its DKIM record is published${returnPath}`;
  return `${domain} is verified, but its DKIM record is ${checks.dkim.status === 'error' ? 'not answered by DNS' : checks.dkim.status}: mail from it is signed, and receivers cannot check the signature until ${checks.dkim.record_name} holds the expected value${returnPath}`;
}
