import { isIP } from 'node:net';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { Agent, request } from 'undici';
import { createAddressPolicy } from '../../lib/address-rules.js';
import type { DnsResolve } from '../../lib/dns.js';
import type { MtaStsFetch } from '../../modules/sending/mta-sts.policies.js';

/** The whole fetch, connection to last byte: a slow policy host delays only the deliveries waiting for that domain. */
export const MTA_STS_FETCH_TIMEOUT_MS = 10_000;
/** A policy is a few lines; a larger answer is not one (and is not read past this). */
export const MTA_STS_MAX_POLICY_BYTES = 64 * 1024;
/** The policy's well-known place (RFC 8461 section 3.2), on HTTPS's port unless a test says otherwise. */
const POLICY_PATH = '/.well-known/mta-sts.txt';

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** The first address of `host` the outbound address rules accept (through the service's DNS). */
async function policyAddress(resolve: DnsResolve, host: string, refusal: (address: string) => string | null): Promise<string> {
  const refused: string[] = [];
  for (const type of ['A', 'AAAA']) {
    let found: string[] = [];
    try {
      found = (await resolve(host, type)) as string[];
    } catch {
      continue; // no record of this type; a failure of both shows as no address below
    }
    for (const address of found) {
      const reason = refusal(address);
      if (reason === null) return address;
      refused.push(`${address}, ${reason}`);
    }
  }
  throw new Error(refused.length > 0 ? `${host} resolves to ${refused.join('; ')}` : `${host} has no address`);
}

/** Read at most MTA_STS_MAX_POLICY_BYTES of the body; more is an error. */
async function readPolicy(body: AsyncIterable<Buffer> & { destroy(): unknown }): Promise<string> {
  const chunks: Buffer[] = [];
  let read = 0;
  for await (const chunk of body) {
    read += chunk.length;
    if (read > MTA_STS_MAX_POLICY_BYTES) {
      body.destroy();
      throw new Error(`policy larger than ${MTA_STS_MAX_POLICY_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The MTA-STS policy fetch (undici): `https://mta-sts.<domain>/.well-known/mta-sts.txt`, its name resolved through the
 * service's DNS and held to the outbound address rules (a hostile domain must not point us at an internal service),
 * the certificate verified for that name, no redirect followed (RFC 8461 section 3.3), a 200 required, bounded in
 * time and size. `port` and `ca` are for tests (a loopback policy server under a test CA); a service uses 443 and
 * the system's CAs.
 */
export function createMtaStsFetcher({ resolve, allowCidrs = [], port = 443, ca }: { resolve: DnsResolve; allowCidrs?: readonly string[]; port?: number; ca?: string | string[] | undefined }): MtaStsFetch {
  const rules = createAddressPolicy(allowCidrs, 'MAILROOM_DELIVERY_ALLOW_CIDRS');
  return async (domain) => {
    const host = `mta-sts.${domain}`;
    const signal = AbortSignal.timeout(MTA_STS_FETCH_TIMEOUT_MS);
    const address = await policyAddress(resolve, host, (a) => rules.refusal(a));
    const family = isIP(address) === 6 ? 6 : 4;
    const lookup = (_hostname: string, options: LookupOptions, callback: LookupCallback) => {
      if (options.all === true) callback(null, [{ address, family }]);
      else callback(null, address, family);
    };
    // One connection per fetch: a policy is fetched once per max_age, not worth a pool.
    const agent = new Agent({ connect: { lookup, ...(ca === undefined ? {} : { ca }) } });
    try {
      const res = await request(`https://${host}:${port}${POLICY_PATH}`, { method: 'GET', dispatcher: agent, signal, headers: { accept: 'text/plain' } });
      // A body cut short (too large, wrong status) reports its abort as an error event, which the throw below reports.
      res.body.on('error', () => undefined);
      if (res.statusCode !== 200) {
        res.body.destroy();
        throw new Error(`${host} answered HTTP ${res.statusCode}`);
      }
      return await readPolicy(res.body);
    } finally {
      void agent.close().catch(() => undefined);
    }
  };
}
