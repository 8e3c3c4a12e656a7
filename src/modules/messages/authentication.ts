import { authenticate } from 'mailauth';
import type { DnsResolve } from '../../lib/dns.js';
import type { AuthSummary } from './message.types.js';

export interface AuthContext {
  /** The connecting client's IP address. */
  ip: string;
  helo: string;
  /** MAIL FROM, or '' for the null sender. */
  sender: string;
}

export interface AuthOutcome {
  summary: AuthSummary;
  /** `Authentication-Results` (and `Received-SPF`) header lines to put in front of the stored message. */
  headerLines: string;
  /** DMARC failed and the sender's domain asks for quarantine or reject, or the checks were cut short: file it as spam. */
  quarantine: boolean;
  /** Why the checks were not run to their end (the analysis budget, below), for the log; null when they were. */
  cutShort?: string | null;
}

/**
 * The analysis budget of one message. mailauth's cost grows faster than its input (a header
 * folded over many lines costs it far more than its size; bench/HISTORY.md), so a header block past these
 * bounds is not handed to it;
 * 100 KiB is Postfix's `header_size_limit`, and no real header block comes near 2,000 lines.
 */
export const MAX_AUTH_HEADER_BYTES = 100 * 1024;
export const MAX_AUTH_HEADER_LINES = 2000;
/** How long the checks of one message may wait (on DNS, mostly) before it is stored with `temperror`. */
export const AUTH_TIME_LIMIT_MS = 10_000;

/**
 * The outcome of checks not run (`none`: the header block is past the bounds) or not finished (`temperror`:
 * the time limit). Filed as spam: a sender could otherwise cause either on purpose to escape a DMARC policy.
 */
export function cutShortOutcome(result: 'none' | 'temperror', hostname: string, why: string): AuthOutcome {
  const comment = `(${why})`;
  return {
    summary: { spf: result, dkim: result, dmarc: result },
    headerLines: `Authentication-Results: ${hostname};\r\n dkim=${result} ${comment};\r\n spf=${result} ${comment};\r\n dmarc=${result} ${comment}\r\n`,
    quarantine: true,
    cutShort: why,
  };
}

/** Checks SPF, DKIM and DMARC of an incoming message. */
export interface MessageAuthenticator {
  check(raw: Buffer, context: AuthContext): Promise<AuthOutcome>;
}

const NO_AUTH: AuthSummary = { spf: 'none', dkim: 'none', dmarc: 'none' };

interface Status {
  status?: { result?: string; comment?: string | false };
}

/**
 * A DKIM row's result. A body hash mismatch is a PERMFAIL (RFC 6376 section 6.1.3), i.e. a failed
 * verification, which RFC 8601 section 2.7.1 reports as `fail`; mailauth, like Gmail, calls it `neutral`.
 */
const BODY_HASH_MISMATCH = 'body hash did not verify';

function dkimResult(row: Status): string | undefined {
  const result = row.status?.result;
  return result === 'neutral' && row.status?.comment === BODY_HASH_MISMATCH ? 'fail' : result;
}

/**
 * mailauth's Authentication-Results with the DKIM rows dkimResult reads as `fail` saying so, so that the stored
 * field agrees with the message's verdict. Such a row is `dkim=neutral (body hash did not verify)` at the start of
 * a result, which mailauth begins with `;` and a folded line (the authserv-id's too); the comment is its own.
 */
function agreeingHeaders(headers: string): string {
  return headers.replace(/;\r\n dkim=neutral(?= \(body hash did not verify\))/g, ';\r\n dkim=fail');
}

/** A header field that makes mailauth hash the body: a DKIM signature, or an ARC set (ARC-Message-Signature, ARC-Seal). */
const BODY_SIGNATURE = /(?:^|\n)(?:dkim-signature|arc-)/i;

/**
 * What `mailauth` needs to see of a message: the header block alone when no field in it signs the body.
 *
 * mailauth reads every message to its end, canonicalising the body line by line on the way, even when
 * no signature will ever use that body hash, a large share of the authentication's CPU for an unsigned
 * message (decision 186; figures in bench/HISTORY.md). Its verdict
 * (SPF, DKIM results, DMARC, the header lines) depends on the body only through signatures, so without
 * one the header block (up to and including the empty line that ends it, as mailauth's own parser
 * finds it) gives the same answer. Any doubt (a signature field, no end of header) passes the whole message.
 */
export function authenticationInput(raw: Buffer): Buffer {
  const end = headerBlockEnd(raw);
  if (end < 0) return raw;
  const header = raw.subarray(0, end);
  return BODY_SIGNATURE.test(header.toString('latin1')) ? raw : header;
}

/** Where the header block ends: just past the empty line that ends it (LF or CRLF), or -1 when there is none. */
function headerBlockEnd(raw: Buffer): number {
  const lf = raw.indexOf('\n\n');
  const crlf = raw.indexOf('\n\r\n');
  return lf >= 0 && (crlf < 0 || lf < crlf) ? lf + 2 : crlf >= 0 ? crlf + 3 : -1;
}

/** Why a message's header block is past the bounds mailauth is given, or null when it is within them. */
export function headerBlockTooLarge(raw: Buffer): string | null {
  const blockEnd = headerBlockEnd(raw);
  const end = blockEnd < 0 ? raw.length : blockEnd;
  if (end > MAX_AUTH_HEADER_BYTES) return `header block over ${MAX_AUTH_HEADER_BYTES} bytes`;
  let lines = 0;
  for (let at = raw.indexOf('\n'); at !== -1 && at < end; at = raw.indexOf('\n', at + 1)) {
    if (++lines > MAX_AUTH_HEADER_LINES) return `header block over ${MAX_AUTH_HEADER_LINES} lines`;
  }
  return null;
}

/** Resolves with 'late' after `ms`, without keeping the process alive; `cancel` stops the timer. */
function deadline(ms: number): { late: Promise<'late'>; cancel: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), ms);
    timer.unref();
  });
  return { late, cancel: () => clearTimeout(timer) };
}

/** SPF, DKIM and DMARC with `mailauth`, its DNS through the service's resolver, within the analysis budget above. */
export function createMailauthAuthenticator({ resolve, hostname, timeLimitMs = AUTH_TIME_LIMIT_MS }: { resolve: DnsResolve; hostname: string; timeLimitMs?: number }): MessageAuthenticator {
  return {
    async check(raw, context) {
      const tooLarge = headerBlockTooLarge(raw);
      if (tooLarge) return cutShortOutcome('none', hostname, `not checked: ${tooLarge}`);
      // The checks go on in the background past the limit (their DNS answers are cached for the next message).
      const limit = deadline(timeLimitMs);
      try {
        const checked = await Promise.race([check(raw, context), limit.late]);
        return checked === 'late' ? cutShortOutcome('temperror', hostname, `not finished within ${timeLimitMs} ms`) : checked;
      } finally {
        limit.cancel();
      }
    },
  };

  async function check(raw: Buffer, context: AuthContext): Promise<AuthOutcome> {
    try {
      const result = (await authenticate(authenticationInput(raw), {
        ip: context.ip,
        helo: context.helo,
        sender: context.sender,
        mta: hostname,
        // mailauth's resolver type is narrower than ours; the answers are dns.promises.resolve's.
        resolver: resolve as (name: string, rrtype: string) => Promise<string[] | string[][]>,
        disableArc: true,
        disableBimi: true,
      })) as { spf?: Status | false; dkim?: { results?: Status[] }; dmarc?: (Status & { policy?: string }) | false; headers?: string };
      const dkimResults = (result.dkim?.results ?? []).map(dkimResult);
      const dkim = dkimResults.find((r) => r === 'pass') ?? dkimResults[0] ?? 'none';
      return {
        summary: {
          spf: (result.spf && result.spf.status?.result) || 'none',
          dkim,
          dmarc: (result.dmarc && result.dmarc.status?.result) || 'none',
        },
        headerLines: agreeingHeaders(result.headers ?? ''),
        quarantine: result.dmarc !== false && result.dmarc?.status?.result === 'fail' && (result.dmarc.policy === 'reject' || result.dmarc.policy === 'quarantine'),
      };
    } catch {
      // Authentication is advice, never a reason to lose mail: record a temporary error.
      return { summary: { spf: 'temperror', dkim: 'temperror', dmarc: 'temperror' }, headerLines: '', quarantine: false };
    }
  }
}

/** For mail that did not come over SMTP from outside (our own outbound copies). */
export const notChecked: AuthSummary = NO_AUTH;
