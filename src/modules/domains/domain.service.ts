import { randomBytes } from 'node:crypto';
import type { Work } from '../../db/tables.js';
import { isUniqueViolation } from '../../db/dialect.js';
import type { Clock } from '../../lib/clock.js';
import { iso } from '../../lib/clock.js';
import type { DnsResolve } from '../../lib/dns.js';
import { conflict, forbidden, invalid, notFound, withFields, type DomainError } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import type { SecretBox } from '../../lib/secret-box.js';
import { hashToken } from '../../lib/secrets.js';
import type { EventsService } from '../events/events.service.js';
import { actorOf, isAdmin, type TenantContext } from '../tenancy/tenancy.types.js';
import { AUDIT_ACTIONS, type AuditAction } from '../audit/audit.actions.js';
import type { AuditLog } from '../audit/audit.service.js';
import { dkimRecord, generateDkimKeyPair } from './dkim-keys.js';
import {
  checkDkim,
  checkReturnPathMx,
  checkReturnPathSpf,
  checkSpf,
  checkVerification,
  lookupMx,
  lookupTxt,
  summarize,
  verifiedCheck,
  VERIFICATION_PREFIX,
  type DomainChecks,
  type RecordCheck,
} from './dns-checks.js';
import type { SendingDomainTable } from './domain.table.js';
import type { MailLookups } from '../mail/lookups.store.js';
import type { ServiceTokenStore } from '../transactional/service-token.store.js';
import type { DomainStore } from './domain.store.js';
import type { DnsRecordView, DomainDependents, DomainService, SendingDomainView } from './domain.types.js';

const DOMAIN = /^(?=.{4,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/;
/** The key name of the service's own DKIM key (hosted domains). */
export const HOSTED_KEY_NAME = 'hosted-dkim';
/** How many mailboxes and service tokens a refused delete names (the counts are exact). */
export const MAX_LISTED_DEPENDENTS = 100;
/** The verification token's random bytes (192 bits), shown once as base64url; only its SHA-256 is kept. */
const VERIFICATION_TOKEN_BYTES = 24;

export { VERIFICATION_PREFIX } from './dns-checks.js';
export type { CheckedDomainView, CreatedDomainView, DomainService, SendingDomainView, SigningKey } from './domain.types.js';

/** Where a private key is stored: its associated data, so a sealed key opens only in its own row. */
const domainKeyContext = (id: string) => `sending_domains.dkim_private_key:${id}`;
/** Opened domain keys kept per process, by row and stored value: opening one (AES-GCM over ~1.7 KB) costs more than a lookup. */
const MAX_OPENED_KEYS = 1000;
const serviceKeyContext = (name: string) => `service_keys.private_key:${name}`;

/** Where the service's own envelope senders are, and the inbound host a return-path host's MX points at. */
interface ReturnPathSetup {
  returnPathDomain: string;
  inboundHost: string;
}

function toView(row: SendingDomainTable, { returnPathDomain, inboundHost }: ReturnPathSetup): SendingDomainView {
  const host = row.return_path_host;
  return {
    domain_id: row.id,
    domain: row.domain,
    status: row.status,
    dkim: { selector: row.dkim_selector, ...dkimRecord(row.dkim_selector, row.domain, row.dkim_public_key) },
    spf: { record_name: row.domain, record_type: 'TXT', record_value: `v=spf1 include:${returnPathDomain} ~all` },
    created_at: iso(row.created_at),
    verified_at: iso(row.verified_at),
    return_path_host: host,
    return_path_verified_at: iso(row.return_path_verified_at),
    return_path_records: host
      ? {
          mx: { record_name: host, record_type: 'MX', record_value: `10 ${inboundHost}` },
          spf: { record_name: host, record_type: 'TXT', record_value: `v=spf1 include:${returnPathDomain} ~all` },
        }
      : null,
  };
}

/**
 * A return-path host as given (null clears it): a subdomain of the sending domain, so that SPF at it aligns with
 * the domain (DMARC's relaxed alignment) and only the domain's owner can point it at us.
 */
function returnPathHostOf(domain: string, given: string | null | undefined, hosted: ReadonlySet<string>): string | null {
  if (given === null || given === undefined) return null;
  const host = given.trim().toLowerCase().replace(/\.$/, '');
  if (!DOMAIN.test(host)) throw invalid('invalid_return_path_host', `'${given}' is not a host name`);
  if (!host.endsWith(`.${domain}`)) throw invalid('invalid_return_path_host', `return_path_host must be a subdomain of ${domain}, such as bounces.${domain}`);
  if (hosted.has(host)) throw invalid('invalid_return_path_host', `${host} is a hosted domain of this service`);
  return host;
}

function requireAdmin(tenant: TenantContext): void {
  if (!isAdmin(tenant.role)) throw forbidden('forbidden_role', 'sending domains need the owner or admin role');
}

/** The verification record with a token, as create and a regeneration show it (this once). */
const verificationRecord = (domain: string, token: string): DnsRecordView => ({
  record_name: `_mailroom-verification.${domain}`,
  record_type: 'TXT',
  record_value: `${VERIFICATION_PREFIX}${token}`,
});

/** The return-path host's MX and SPF as DNS answers them now; none without a host. */
async function checkReturnPath(resolve: DnsResolve, host: string | null, setup: ReturnPathSetup): Promise<Pick<DomainChecks, 'return_path_mx' | 'return_path_spf'>> {
  if (!host) return {};
  const [mx, spf] = await Promise.all([lookupMx(resolve, host), lookupTxt(resolve, host)]);
  return { return_path_mx: checkReturnPathMx(host, setup.inboundHost, mx), return_path_spf: checkReturnPathSpf(host, setup.returnPathDomain, spf) };
}

/** Each record as DNS answers it now; the lookups run at once. */
async function checkRecords(resolve: DnsResolve, row: SendingDomainTable, view: SendingDomainView, setup: ReturnPathSetup): Promise<DomainChecks> {
  const [verification, dkim, spf, returnPath] = await Promise.all([
    row.status === 'verified' ? null : lookupTxt(resolve, `_mailroom-verification.${row.domain}`),
    lookupTxt(resolve, view.dkim.record_name),
    lookupTxt(resolve, row.domain),
    checkReturnPath(resolve, row.return_path_host, setup),
  ]);
  return {
    verification: verification ? checkVerification(row.domain, row.verification_hash, verification) : verifiedCheck(row.domain, view.verified_at ?? ''),
    dkim: checkDkim(view.dkim, row.domain, row.dkim_public_key, dkim),
    spf: checkSpf(row.domain, setup.returnPathDomain, spf, row.return_path_host),
    ...returnPath,
  };
}

/**
 * The return-path host's verified state after a verify: set when both records are right on a verified domain,
 * cleared when one is missing or wrong; a DNS failure changes nothing (it says nothing about the records).
 */
function returnPathVerdict(row: SendingDomainTable, checks: DomainChecks, now: number): number | null {
  const found = [checks.return_path_mx, checks.return_path_spf].filter((c): c is RecordCheck => c !== undefined);
  if (found.length === 0 || found.some((c) => c.status === 'error')) return row.return_path_verified_at;
  if (row.status === 'verified' && found.every((c) => c.status === 'ok')) return row.return_path_verified_at ?? now;
  return null;
}

/** A 409 naming what still uses the domain, so the caller knows what to delete first. */
function inUse(domain: string, d: DomainDependents): DomainError {
  const parts = [
    d.mailbox_count > 0 ? `${d.mailbox_count} mailbox${d.mailbox_count === 1 ? '' : 'es'} (${d.mailboxes.slice(0, 3).join(', ')}${d.mailbox_count > 3 ? ', …' : ''})` : '',
    d.service_token_count > 0 ? `${d.service_token_count} service token${d.service_token_count === 1 ? '' : 's'}` : '',
  ].filter((p) => p !== '');
  const error = conflict('domain_in_use', `${domain} still has ${parts.join(' and ')}; delete the mailboxes first (their service tokens go with them)`);
  return withFields(error, { dependents: d });
}

export interface DomainDeps {
  work: Work;
  store: Pick<
    DomainStore,
    | 'find'
    | 'findVerifiedByName'
    | 'holdVerifiedByName'
    | 'insert'
    | 'list'
    | 'replaceVerificationHash'
    | 'lockForDelete'
    | 'delete'
    | 'markVerified'
    | 'setReturnPathHost'
    | 'markReturnPath'
    | 'isReturnPathHost'
    | 'findServiceKey'
    | 'insertServiceKey'
    | 'plaintextDomainKeys'
    | 'replaceDomainKey'
    | 'plaintextServiceKeys'
    | 'replaceServiceKey'
  >;
  /** What still uses a domain being deleted: its mailboxes (the mail store) and service tokens (transactional). */
  mailboxes: Pick<MailLookups, 'mailboxesInDomain'>;
  tokens: Pick<ServiceTokenStore, 'boundToDomain'>;
  clock: Clock;
  events: EventsService;
  resolve: DnsResolve;
  hostedDomains: readonly string[];
  /** Where every message's envelope sender is (`bounces+…@`) but for domains with a verified return-path host: named in the SPF advice. */
  returnPathDomain: string;
  /** The inbound SMTP listener's host name (MAILROOM_SMTP_HOSTNAME): where a return-path host's MX points. */
  inboundHost: string;
  /** An operator-configured key for hosted domains (PEM) and its selector. */
  hostedKey?: { selector: string; privateKey: string; publicKey: string } | undefined;
  /** Selector of the key generated at first use when the operator configured none. */
  hostedSelector?: string;
  /** Seals private keys at rest (MAILROOM_SECRET_KEY); they are opened only to sign. */
  box: SecretBox;
  /** Domains created, verified, deleted and their records rotated, in the audit log. */
  audit: Pick<AuditLog, 'record'>;
}

export function createDomainService(deps: DomainDeps): DomainService {
  const { work, store, clock, events, resolve, hostedDomains, hostedKey, hostedSelector = 'mailroom', box, returnPathDomain } = deps;
  const hosted = new Set(hostedDomains);
  let cachedHostedKey = hostedKey;
  const opened = new Map<string, string>();
  const setup: ReturnPathSetup = { returnPathDomain, inboundHost: deps.inboundHost.toLowerCase() };
  const view = (row: SendingDomainTable) => toView(row, setup);
  /** Never the keys or the verification token: the domain's name and selector say which it is. */
  const record = (trx: Work, tenant: TenantContext, action: AuditAction, row: Pick<SendingDomainTable, 'id' | 'domain'>, details: Record<string, unknown> = {}) =>
    deps.audit.record(trx, { workspaceId: tenant.workspaceId, action, actor: actorOf(tenant), target: { kind: 'domain', id: row.id }, details: { domain: row.domain, ...details } });

  /** A domain's private key in PEM; the signing threads cache parsed keys by it, as the hosted key is kept. */
  function openDomainKey(own: Pick<SendingDomainTable, 'id' | 'dkim_private_key'>): string {
    // By row and value: a value copied into another row must still fail to open there.
    const cacheKey = `${own.id} ${own.dkim_private_key}`;
    let pem = opened.get(cacheKey);
    if (pem === undefined) {
      pem = box.open(own.dkim_private_key, domainKeyContext(own.id));
      if (opened.size >= MAX_OPENED_KEYS) opened.delete(opened.keys().next().value!);
      opened.set(cacheKey, pem);
    }
    return pem;
  }

  async function find(tenant: TenantContext, domainId: string, conn: Work = work): Promise<SendingDomainTable> {
    const row = await store.find(conn, tenant.workspaceId, domainId);
    if (!row) throw notFound('domain_not_found', `no sending domain ${domainId}`);
    return row;
  }

  /** pending → verified in one transaction with its event, emitted once however many verify at once. */
  async function markVerified(tenant: TenantContext, row: SendingDomainTable): Promise<SendingDomainTable> {
    const now = clock.now();
    await work.transaction().execute(async (trx) => {
      if (await store.markVerified(trx, tenant.workspaceId, row.id, now)) {
        await record(trx, tenant, AUDIT_ACTIONS.domainVerified, row);
        await events.emit(trx, { workspaceId: tenant.workspaceId, type: 'domain.verified', data: { ...view({ ...row, status: 'verified', verified_at: now }) } });
      }
    });
    return find(tenant, row.id);
  }

  const service: DomainService = {
    isHostedDomain: (domain) => hosted.has(domain),

    async isAllowedDomain(workspaceId, domain, conn = work, hold = false) {
      if (hosted.has(domain)) return true;
      if (hold) return store.holdVerifiedByName(conn, workspaceId, domain);
      return (await store.findVerifiedByName(conn, workspaceId, domain)) !== undefined;
    },

    async create(tenant, input) {
      requireAdmin(tenant);
      const domain = input.domain.trim().toLowerCase().replace(/\.$/, '');
      if (!DOMAIN.test(domain)) throw invalid('invalid_domain', `'${input.domain}' is not a domain name`);
      if (hosted.has(domain)) throw invalid('invalid_domain', `${domain} is a hosted domain of this service; it needs no verification`);
      const returnPathHost = returnPathHostOf(domain, input.return_path_host, hosted);
      const token = randomBytes(VERIFICATION_TOKEN_BYTES).toString('base64url');
      const keys = await generateDkimKeyPair();
      const now = clock.now();
      const selector = `mr${new Date(now).toISOString().slice(0, 7).replace('-', '')}`;
      const id = newId('dom');
      const row: SendingDomainTable = {
        id,
        workspace_id: tenant.workspaceId,
        domain,
        status: 'pending',
        verification_hash: hashToken(token),
        dkim_selector: selector,
        dkim_private_key: box.seal(keys.privateKey, domainKeyContext(id)),
        dkim_public_key: keys.publicKey,
        created_at: now,
        verified_at: null,
        return_path_host: returnPathHost,
        return_path_verified_at: null,
      };
      try {
        await work.transaction().execute(async (trx) => {
          await store.insert(trx, row);
          await record(trx, tenant, AUDIT_ACTIONS.domainCreated, row, { dkim_selector: selector });
        });
      } catch (err) {
        if (isUniqueViolation(err)) throw conflict('domain_exists', `${domain} is already a sending domain of this workspace`);
        throw err;
      }
      return { ...view(row), verification: verificationRecord(domain, token) };
    },

    async list(tenant) {
      requireAdmin(tenant);
      return { sending_domains: (await store.list(work, tenant.workspaceId)).map(view) };
    },

    async get(tenant, domainId) {
      requireAdmin(tenant);
      return view(await find(tenant, domainId));
    },

    async verify(tenant, domainId) {
      requireAdmin(tenant);
      let row = await find(tenant, domainId);
      const checks = await checkRecords(resolve, row, view(row), setup);
      if (row.status === 'pending' && checks.verification.status === 'ok') {
        row = await markVerified(tenant, row);
        checks.verification.reason = "the record holds this domain's token: the domain is verified";
      }
      const returnPathAt = returnPathVerdict(row, checks, clock.now());
      if (row.return_path_host && returnPathAt !== row.return_path_verified_at) {
        await store.markReturnPath(work, tenant.workspaceId, row.id, row.return_path_host, returnPathAt);
        row = await find(tenant, domainId);
      }
      return { ...view(row), checks, summary: summarize(row.domain, row.status === 'verified', checks, row.return_path_verified_at !== null) };
    },

    async update(tenant, domainId, input) {
      requireAdmin(tenant);
      const row = await find(tenant, domainId);
      const host = returnPathHostOf(row.domain, input.return_path_host, hosted);
      if (host === row.return_path_host) return view(row);
      await work.transaction().execute(async (trx) => {
        if (!(await store.setReturnPathHost(trx, tenant.workspaceId, row.id, host))) throw notFound('domain_not_found', `no sending domain ${domainId}`);
        await record(trx, tenant, AUDIT_ACTIONS.domainUpdated, row, { before: { return_path_host: row.return_path_host }, after: { return_path_host: host } });
      });
      return view(await find(tenant, domainId));
    },

    isReturnPathHost: (host) => store.isReturnPathHost(work, host.toLowerCase()),

    async regenerateRecords(tenant, domainId) {
      requireAdmin(tenant);
      const row = await find(tenant, domainId);
      const token = randomBytes(VERIFICATION_TOKEN_BYTES).toString('base64url');
      const replaced = await work.transaction().execute(async (trx) => {
        if (!(await store.replaceVerificationHash(trx, tenant.workspaceId, row.id, hashToken(token)))) return false;
        await record(trx, tenant, AUDIT_ACTIONS.domainRecordsRotated, row);
        return true;
      });
      if (!replaced) {
        // Verified meanwhile (or deleted: find answers the 404).
        const now = await find(tenant, domainId);
        throw conflict('domain_verified', `${now.domain} is verified: it needs no verification record any more (GET it for its DKIM record)`);
      }
      return { ...view(row), verification: verificationRecord(row.domain, token) };
    },

    async remove(tenant, domainId) {
      requireAdmin(tenant);
      return work.transaction().execute(async (trx) => {
        // Locked before the dependents are read: a mailbox being made in the domain holds it until it is stored.
        const row = await store.lockForDelete(trx, tenant.workspaceId, domainId);
        if (!row) throw notFound('domain_not_found', `no sending domain ${domainId}`);
        const [mailboxes, bound] = await Promise.all([
          deps.mailboxes.mailboxesInDomain(trx, tenant.workspaceId, row.domain, MAX_LISTED_DEPENDENTS),
          deps.tokens.boundToDomain(trx, tenant.workspaceId, row.id, MAX_LISTED_DEPENDENTS),
        ]);
        if (mailboxes.count > 0 || bound.count > 0) {
          const tokens = bound.tokens.map((t) => ({ token_id: t.id, name: t.name }));
          throw inUse(row.domain, { mailbox_count: mailboxes.count, mailboxes: mailboxes.addresses, service_token_count: bound.count, service_tokens: tokens });
        }
        await store.delete(trx, tenant.workspaceId, row.id);
        await record(trx, tenant, AUDIT_ACTIONS.domainDeleted, row, { status: row.status });
        return { domain_id: row.id, domain: row.domain };
      });
    },

    async signingKey(domain, own) {
      if (own) return { domain, selector: own.dkim_selector, privateKey: openDomainKey(own) };
      if (!hosted.has(domain)) return null;
      const key = await service.hostedKey();
      return { domain, selector: key.selector, privateKey: key.privateKey };
    },

    async hostedKey() {
      if (cachedHostedKey) return cachedHostedKey;
      let row = await store.findServiceKey(work, HOSTED_KEY_NAME);
      if (!row) {
        const keys = await generateDkimKeyPair();
        // Two processes starting at once may both generate; the first insert wins and both read it back.
        const sealed = box.seal(keys.privateKey, serviceKeyContext(HOSTED_KEY_NAME));
        await store.insertServiceKey(work, { name: HOSTED_KEY_NAME, selector: hostedSelector, private_key: sealed, public_key: keys.publicKey, created_at: clock.now() });
        row = await store.findServiceKey(work, HOSTED_KEY_NAME);
        if (!row) throw new Error('could not store the hosted DKIM key');
      }
      // Opened once per process and kept, as the operator's key from MAILROOM_DKIM_KEY is.
      cachedHostedKey = { selector: row.selector, privateKey: box.open(row.private_key, serviceKeyContext(row.name)), publicKey: row.public_key };
      return cachedHostedKey;
    },

    async sealStoredKeys() {
      let sealed = 0;
      for (const row of await store.plaintextDomainKeys(work)) {
        sealed += await store.replaceDomainKey(work, row.id, row.dkim_private_key, box.seal(row.dkim_private_key, domainKeyContext(row.id)));
      }
      for (const row of await store.plaintextServiceKeys(work)) {
        sealed += await store.replaceServiceKey(work, row.name, row.private_key, box.seal(row.private_key, serviceKeyContext(row.name)));
      }
      return sealed;
    },
  };
  return service;
}
