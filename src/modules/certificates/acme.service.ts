import acme from 'acme-client';
import { generateKeyPair, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { readFileSync } from 'node:fs';
import { Agent } from 'node:https';
import { rootCertificates } from 'node:tls';
import type { AcmeConfig } from '../../config/config.js';
import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import type { SecretBox } from '../../lib/secret-box.js';
import { parseCertificatePair, type CertificateSource } from '../../lib/tls-certificates.js';
import type { CertificateStore } from './certificate.store.js';

/** The one certificate ACME keeps (a row name, so a second one could follow without a new table). */
const CERTIFICATE = 'acme';
/** Longest an order may take before another process may start one (a crashed holder's lease runs out). */
export const ORDER_LEASE_MS = 10 * 60_000;
/** After a failed order, no process tries again for this long (CAs limit failed validations per hour). */
export const ORDER_RETRY_MS = 15 * 60_000;
/** Challenges older than this are left over from an interrupted order. */
const CHALLENGE_MAX_AGE_MS = 24 * 60 * 60_000;
/** An ACME token is base64url (RFC 8555 section 8.1); anything else is answered 404 without a lookup. */
const TOKEN = /^[A-Za-z0-9_-]{1,256}$/;
const DAY_MS = 86_400_000;

/** RSA: acme-client's node-forge CSR takes no other key type. */
const CERTIFICATE_KEY_BITS = 2048;

/** A new certificate key, PKCS#1 PEM (what node-forge reads), made off the main thread. */
async function certificateKey(): Promise<string> {
  const { privateKey } = await promisify(generateKeyPair)('rsa', {
    modulusLength: CERTIFICATE_KEY_BITS,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });
  return privateKey;
}

const keyContext = (name: string) => `tls_certificates:${name}`;
const accountContext = (directoryUrl: string) => `acme_accounts:${directoryUrl}`;

export interface AcmeService {
  /** The key authorization for an HTTP-01 token, or null when no order is waiting on it (404). */
  challengeAnswer(token: string): Promise<string | null>;
  /**
   * Serve the stored certificate (resolved once it is, so listeners start with it), then look every `checkMs`:
   * a newer stored certificate is taken, a due renewal ordered.
   */
  start(): Promise<void>;
  stop(): void;
  /** One look (tests call it instead of waiting for the timer). */
  check(): Promise<void>;
}

export interface AcmeServiceDeps {
  work: Work;
  store: CertificateStore;
  box: SecretBox;
  clock: Clock;
  logger: Logger;
  config: AcmeConfig;
  /** Where every listener of this process takes its certificate from; offered each new one. */
  holder: CertificateSource;
  checkMs: number;
}

/**
 * Obtains and renews the listeners' certificate with ACME HTTP-01, for every process sharing the database: each
 * process serves what the database holds and looks again every `checkMs`; whichever process finds a renewal due
 * and takes the lease orders, storing challenges in the database so that any api process answers the CA.
 */
export function createAcmeService(deps: AcmeServiceDeps): AcmeService {
  const { work, store, clock, logger, config } = deps;
  const holder = `${process.pid}-${randomBytes(4).toString('hex')}`;
  const domains = config.domains.join(',');
  let served = -1;
  let running: Promise<void> | null = null;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  if (config.caFile) acme.axios.defaults.httpsAgent = new Agent({ ca: [...rootCertificates, readFileSync(config.caFile, 'utf8')] });

  /** Take the stored certificate when it is newer than the one served. */
  function serveStored(row: { certPem: string | null; keySealed: string | null; version: number }): void {
    if (row.version === served || row.certPem === null || row.keySealed === null) return;
    const key = deps.box.open(row.keySealed, keyContext(CERTIFICATE));
    if (deps.holder.offer({ key, cert: row.certPem }, 'acme')) served = row.version;
  }

  function due(row: { domains: string; notAfter: number | null; leaseUntil: number }, now: number): boolean {
    if (row.leaseUntil > now) return false;
    if (row.domains !== domains || row.notAfter === null) return true;
    return row.notAfter - now < config.renewBeforeDays * DAY_MS;
  }

  async function accountKey(): Promise<string> {
    const sealed = await store.accountKey(work, config.directoryUrl);
    if (sealed !== undefined) return deps.box.open(sealed, accountContext(config.directoryUrl));
    const key = (await acme.crypto.createPrivateEcdsaKey()).toString();
    await store.insertAccount(work, config.directoryUrl, deps.box.seal(key, accountContext(config.directoryUrl)), clock.now());
    const stored = await store.accountKey(work, config.directoryUrl);
    if (stored === undefined) throw new Error('the ACME account key vanished after it was stored');
    return deps.box.open(stored, accountContext(config.directoryUrl));
  }

  /** Answer one name's HTTP-01 challenge through the database, and wait until the CA has checked it. */
  async function authorize(client: acme.Client, authz: acme.Authorization): Promise<void> {
    if (authz.status === 'valid') return; // the CA still trusts an earlier validation of this name
    const challenge = authz.challenges.find((c) => c.type === 'http-01');
    if (!challenge) throw new Error(`the CA offers no http-01 challenge for ${authz.identifier.value}`);
    const keyAuthorization = await client.getChallengeKeyAuthorization(challenge);
    await store.putChallenge(work, challenge.token, keyAuthorization, clock.now());
    try {
      await client.completeChallenge(challenge);
      await client.waitForValidStatus(challenge);
    } finally {
      await store.removeChallenge(work, challenge.token);
    }
  }

  /**
   * Order a certificate for the configured names; the lease is held. The steps of acme-client's `auto` without
   * its CSR parsing, and with the CSR made by its node-forge half: its `crypto.createCsr` and `readCsrDomains`
   * fail with the @peculiar/asn1-schema versions installed beside mailauth's.
   */
  async function order(): Promise<void> {
    logger.info({ domains: config.domains, directory: config.directoryUrl }, 'ordering a TLS certificate with ACME');
    const client = new acme.Client({ directoryUrl: config.directoryUrl, accountKey: await accountKey() });
    await client.createAccount({ termsOfServiceAgreed: true, ...(config.email ? { contact: [`mailto:${config.email}`] } : {}) });
    const placed = await client.createOrder({ identifiers: config.domains.map((value) => ({ type: 'dns', value })) });
    // One name at a time: a failure stops the order before more challenges are asked for.
    for (const authz of await client.getAuthorizations(placed)) await authorize(client, authz);
    const key = await certificateKey();
    const [, csr] = await acme.forge.createCsr({ commonName: config.domains[0], altNames: [...config.domains] }, key);
    const cert = await client.getCertificate(await client.finalizeOrder(placed, csr));
    const loaded = parseCertificatePair({ key, cert }, 'acme');
    const saved = await store.saveCertificate(
      work,
      CERTIFICATE,
      holder,
      { domains, certPem: cert, keySealed: deps.box.seal(key, keyContext(CERTIFICATE)), notAfter: loaded.notAfter.getTime() },
      clock.now(),
    );
    if (!saved) logger.warn('the ACME lease ran out during the order; the certificate obtained is not stored');
    const lifetimeDays = (loaded.notAfter.getTime() - loaded.notBefore.getTime()) / DAY_MS;
    if (lifetimeDays <= config.renewBeforeDays) {
      logger.warn({ lifetime_days: Math.floor(lifetimeDays) }, 'MAILROOM_ACME_RENEW_DAYS is longer than the certificates this CA issues: every check orders a new one');
    }
  }

  async function look(): Promise<void> {
    const now = clock.now();
    await store.ensure(work, CERTIFICATE, now);
    const row = await store.find(work, CERTIFICATE);
    if (!row) return;
    serveStored(row);
    if (!due(row, now) || !(await store.claimLease(work, CERTIFICATE, holder, now, now + ORDER_LEASE_MS))) return;
    try {
      await store.removeChallengesBefore(work, now - CHALLENGE_MAX_AGE_MS);
      await order();
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (!stopped) logger.error({ err: message, retry_in_ms: ORDER_RETRY_MS }, 'ACME order failed; the current certificate stays in use');
      await store.failLease(work, CERTIFICATE, holder, message.slice(0, 1000), clock.now() + ORDER_RETRY_MS, clock.now());
      return;
    }
    const after = await store.find(work, CERTIFICATE);
    if (after) serveStored(after);
  }

  function check(): Promise<void> {
    running ??= look()
      .catch((err: unknown) => {
        if (!stopped) logger.error({ err }, 'ACME certificate check failed');
      })
      .finally(() => {
        running = null;
      });
    return running;
  }

  return {
    async challengeAnswer(token) {
      if (!TOKEN.test(token)) return null;
      return (await store.challenge(work, token)) ?? null;
    },
    async start() {
      try {
        const row = await store.find(work, CERTIFICATE);
        if (row) serveStored(row);
      } catch (err) {
        logger.error({ err }, 'the stored ACME certificate could not be read');
      }
      void check();
      timer = setInterval(() => void check(), deps.checkMs);
      timer.unref();
    },
    stop() {
      stopped = true;
      clearInterval(timer);
    },
    check,
  };
}
