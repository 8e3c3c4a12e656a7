import { isIPv4, isIPv6 } from 'node:net';
import { createAddressPolicy } from '../../lib/address-rules.js';
import type { DnsResolve } from '../../lib/dns.js';

/** Longest webhook URL accepted (browsers' and proxies' practical limit). */
export const MAX_URL_LENGTH = 2048;

/** A webhook URL the address rules refused; `message` says why and names the refused address. */
export class WebhookUrlRefused extends Error {
  constructor(
    message: string,
    /** The refused address, when an address (not the URL's form) was the problem. */
    readonly address: string | null = null,
  ) {
    super(message);
    this.name = 'WebhookUrlRefused';
  }
}

/** A URL that passed the rules, with the addresses it may be reached at (each one checked). */
export interface CheckedUrl {
  url: URL;
  /** Host name for TLS and the Host header; an IP literal without brackets when the URL names one. */
  host: string;
  addresses: Array<{ address: string; family: 4 | 6 }>;
}

export interface AddressRules {
  /** Check a URL's form and every address its host has now (DNS through MAILROOM_DNS_SERVERS, no cache). */
  check(rawUrl: string, signal?: AbortSignal): Promise<CheckedUrl>;
}

/** `localhost` and names under it are loopback by definition (RFC 6761 section 6.3), whatever DNS says. */
const isLocalhostName = (host: string) => host === 'localhost' || host.endsWith('.localhost');

/** The form rules: an absolute http(s) URL without credentials, within the length limit. */
export function parseWebhookUrl(raw: string): URL {
  if (raw.length > MAX_URL_LENGTH) throw new WebhookUrlRefused(`the URL is longer than ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new WebhookUrlRefused(`'${raw}' is not an absolute URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new WebhookUrlRefused(`the scheme must be http or https, not ${url.protocol.replace(/:$/, '')}`);
  if (url.username !== '' || url.password !== '') throw new WebhookUrlRefused('the URL must not carry credentials (user:password@)');
  if (url.hostname === '') throw new WebhookUrlRefused('the URL has no host');
  return url;
}

const DNS_ERRORS_MEANING_NO_RECORDS = new Set(['ENODATA', 'ENOTFOUND', 'NOTFOUND', 'ENONAME']);

/**
 * The webhook address rules: http(s) only, no credentials, and every address the
 * host has — each DNS answer, A and AAAA, or the IP literal — must be global unicast (lib/address-rules.ts),
 * unless MAILROOM_WEBHOOK_ALLOW_CIDRS exempts it. The URL parser (WHATWG) has already turned decimal, octal
 * and hexadecimal IPv4 forms (`http://2130706433/`, `http://0x7f.1/`) into dotted quads.
 */
export function createAddressRules({ resolve, allowCidrs }: { resolve: DnsResolve; allowCidrs: readonly string[] }): AddressRules {
  const policy = createAddressPolicy(allowCidrs, 'MAILROOM_WEBHOOK_ALLOW_CIDRS');

  function judge(host: string, address: string, viaDns: boolean): void {
    const reason = policy.refusal(address);
    if (reason === null) return;
    throw new WebhookUrlRefused(viaDns ? `${host} resolves to ${address}, ${reason}` : `${address} is ${reason}`, address);
  }

  /**
   * `localhost`'s addresses are fixed (RFC 6761), not an answer someone else controls: those the rules allow are kept
   * (`127.0.0.0/8` alone allows 127.0.0.1), and it is refused only when none is (decision 265).
   */
  function localhostAddresses(host: string): Array<{ address: string; family: 4 | 6 }> {
    const loopback = [{ address: '127.0.0.1', family: 4 as const }, { address: '::1', family: 6 as const }];
    const allowed = loopback.filter(({ address }) => policy.refusal(address) === null);
    if (allowed.length === 0) judge(host, loopback[0]!.address, true);
    return allowed;
  }

  async function lookup(host: string, signal: AbortSignal | undefined): Promise<Array<{ address: string; family: 4 | 6 }>> {
    const name = host.replace(/\.$/, '');
    const one = async (rrtype: 'A' | 'AAAA'): Promise<string[]> => {
      try {
        const answer = await resolve(name, rrtype);
        return Array.isArray(answer) ? answer.filter((a): a is string => typeof a === 'string') : [];
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        if (typeof code === 'string' && DNS_ERRORS_MEANING_NO_RECORDS.has(code)) return [];
        throw new WebhookUrlRefused(`the DNS lookup of ${name} failed (${typeof code === 'string' ? code : String(err)})`);
      }
    };
    const lookups = Promise.all([one('A'), one('AAAA')]);
    const [a, aaaa] = signal ? await raceAbort(lookups, signal) : await lookups;
    return [...a.map((address) => ({ address, family: 4 as const })), ...aaaa.map((address) => ({ address, family: 6 as const }))];
  }

  return {
    async check(rawUrl, signal) {
      const url = parseWebhookUrl(rawUrl);
      const hostname = url.hostname;
      const literal = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
      if (isIPv4(literal) || isIPv6(literal)) {
        judge(literal, literal, false);
        return { url, host: literal, addresses: [{ address: literal, family: isIPv4(literal) ? 4 : 6 }] };
      }
      if (isLocalhostName(hostname)) return { url, host: hostname, addresses: localhostAddresses(hostname) };
      const addresses = await lookup(hostname, signal);
      if (addresses.length === 0) throw new WebhookUrlRefused(`${hostname} does not resolve to any address`);
      // Every answer must pass: a client may connect to any of them, and an attacker controls which.
      for (const { address } of addresses) judge(hostname, address, true);
      return { url, host: hostname, addresses };
    },
  };
}

/** `promise`, or a rejection with the signal's reason once it aborts. */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: Error) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
