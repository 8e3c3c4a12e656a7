import { randomBytes } from 'node:crypto';
import type { Db } from '../../db/database.js';
import { isUniqueViolation } from '../../db/dialect.js';
import type { Clock } from '../../lib/clock.js';
import { iso } from '../../lib/clock.js';
import type { DnsResolve } from '../../lib/dns.js';
import { conflict, forbidden, invalid, notFound } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import type { SecretBox } from '../../lib/secret-box.js';
import { hashToken } from '../../lib/secrets.js';
import type { EventsService } from '../events/events.service.js';
import type { DomainPolicy } from '../mailboxes/mailbox.types.js';
import { isAdmin, type TenantContext } from '../tenancy/tenancy.types.js';
import { dkimRecord, generateDkimKeyPair } from './dkim-keys.js';
import type { SendingDomainTable } from './domain.table.js';
import { domainRepository as repo } from './domain.repository.js';

export const VERIFICATION_PREFIX = 'mailroom-verification=';
const DOMAIN = /^(?=.{4,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/;
/** The key name of the service's own DKIM key (hosted domains). */
export const HOSTED_KEY_NAME = 'hosted-dkim';

export interface SendingDomainView {
  domain_id: string;
  domain: string;
  status: 'pending' | 'verified';
  dkim: { selector: string; record_name: string; record_type: 'TXT'; record_value: string };
  created_at: string;
  verified_at: string | null;
}

export interface CreatedDomainView extends SendingDomainView {
  verification: { record_name: string; record_type: 'TXT'; record_value: string };
}

/** What outbound mail of a domain is signed with. */
export interface SigningKey {
  domain: string;
  selector: string;
  privateKey: string;
}

export interface DomainService extends DomainPolicy {
  create(tenant: TenantContext, input: { domain: string }): Promise<CreatedDomainView>;
  list(tenant: TenantContext): Promise<{ sending_domains: SendingDomainView[] }>;
  get(tenant: TenantContext, domainId: string): Promise<SendingDomainView>;
  /** Look the verification TXT record up; verified (and `domain.verified` emitted once) when it matches. */
  verify(tenant: TenantContext, domainId: string): Promise<SendingDomainView>;
  /**
   * The DKIM key for mail from this domain: the domain's own when verified, the service key for hosted domains.
   * `own`: the sending workspace's verified sending domain of that name, or null when it has none. The delivery
   * worker reads it with the message it sends (one statement), so it is not looked up here.
   */
  signingKey(domain: string, own: Pick<SendingDomainTable, 'id' | 'dkim_selector' | 'dkim_private_key'> | null): Promise<SigningKey | null>;
  /** The service's DKIM key for hosted domains, created and stored at first use when the operator gave none. */
  hostedKey(): Promise<{ selector: string; privateKey: string; publicKey: string }>;
  /** Start-up: encrypt the private keys still stored in plaintext (from before encryption at rest); returns how many. */
  sealStoredKeys(): Promise<number>;
}

/** Where a private key is stored: its associated data, so a sealed key opens only in its own row. */
const domainKeyContext = (id: string) => `sending_domains.dkim_private_key:${id}`;
/** Opened domain keys kept per process, by row and stored value: opening one (AES-GCM over ~1.7 KB) costs more than a lookup. */
const MAX_OPENED_KEYS = 1000;
const serviceKeyContext = (name: string) => `service_keys.private_key:${name}`;

function toView(row: SendingDomainTable): SendingDomainView {
  return {
    domain_id: row.id,
    domain: row.domain,
    status: row.status,
    dkim: { selector: row.dkim_selector, ...dkimRecord(row.dkim_selector, row.domain, row.dkim_public_key) },
    created_at: iso(row.created_at),
    verified_at: iso(row.verified_at),
  };
}

function requireAdmin(tenant: TenantContext): void {
  if (!isAdmin(tenant.role)) throw forbidden('forbidden_role', 'sending domains need the owner or admin role');
}

/** TXT answers come as arrays of character-strings; a record is their concatenation (RFC 7208 §3.3). */
function txtValues(answer: unknown): string[] {
  if (!Array.isArray(answer)) return [];
  return answer.map((record: unknown) => (Array.isArray(record) ? record.join('') : String(record)));
}

export interface DomainDeps {
  db: Db;
  clock: Clock;
  events: EventsService;
  resolve: DnsResolve;
  hostedDomains: readonly string[];
  /** An operator-configured key for hosted domains (PEM) and its selector. */
  hostedKey?: { selector: string; privateKey: string; publicKey: string } | undefined;
  /** Selector of the key generated at first use when the operator configured none. */
  hostedSelector?: string;
  /** Seals private keys at rest (MAILROOM_SECRET_KEY); they are opened only to sign. */
  box: SecretBox;
}

export function createDomainService({ db, clock, events, resolve, hostedDomains, hostedKey, hostedSelector = 'mailroom', box }: DomainDeps): DomainService {
  const hosted = new Set(hostedDomains);
  let cachedHostedKey = hostedKey;
  const opened = new Map<string, string>();

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

  async function find(tenant: TenantContext, domainId: string): Promise<SendingDomainTable> {
    const row = await repo.find(db, tenant.workspaceId, domainId);
    if (!row) throw notFound('domain_not_found', `no sending domain ${domainId}`);
    return row;
  }

  const service: DomainService = {
    isHostedDomain: (domain) => hosted.has(domain),

    async isAllowedDomain(workspaceId, domain, conn = db) {
      return hosted.has(domain) || (await repo.findVerifiedByName(conn, workspaceId, domain)) !== undefined;
    },

    async create(tenant, input) {
      requireAdmin(tenant);
      const domain = input.domain.trim().toLowerCase().replace(/\.$/, '');
      if (!DOMAIN.test(domain)) throw invalid('invalid_domain', `'${input.domain}' is not a domain name`);
      if (hosted.has(domain)) throw invalid('invalid_domain', `${domain} is a hosted domain of this service; it needs no verification`);
      const token = randomBytes(24).toString('base64url');
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
      };
      try {
        await repo.insert(db, row);
      } catch (err) {
        if (isUniqueViolation(err)) throw conflict('domain_exists', `${domain} is already a sending domain of this workspace`);
        throw err;
      }
      return {
        ...toView(row),
        verification: { record_name: `_mailroom-verification.${domain}`, record_type: 'TXT', record_value: `${VERIFICATION_PREFIX}${token}` },
      };
    },

    async list(tenant) {
      requireAdmin(tenant);
      return { sending_domains: (await repo.list(db, tenant.workspaceId)).map(toView) };
    },

    async get(tenant, domainId) {
      requireAdmin(tenant);
      return toView(await find(tenant, domainId));
    },

    async verify(tenant, domainId) {
      requireAdmin(tenant);
      const row = await find(tenant, domainId);
      if (row.status === 'verified') return toView(row);
      let values: string[] = [];
      try {
        values = txtValues(await resolve(`_mailroom-verification.${row.domain}`, 'TXT'));
      } catch {
        values = []; // NXDOMAIN, no TXT, time-out: simply not verified yet
      }
      const matches = values.some((v) => v.startsWith(VERIFICATION_PREFIX) && hashToken(v.slice(VERIFICATION_PREFIX.length).trim()) === row.verification_hash);
      if (!matches) return toView(row);
      const now = clock.now();
      await db.transaction().execute(async (trx) => {
        if (await repo.markVerified(trx, tenant.workspaceId, row.id, now)) {
          await events.emit(trx, { workspaceId: tenant.workspaceId, type: 'domain.verified', data: { ...toView({ ...row, status: 'verified', verified_at: now }) } });
        }
      });
      return toView(await find(tenant, domainId));
    },

    async signingKey(domain, own) {
      if (own) return { domain, selector: own.dkim_selector, privateKey: openDomainKey(own) };
      if (!hosted.has(domain)) return null;
      const key = await service.hostedKey();
      return { domain, selector: key.selector, privateKey: key.privateKey };
    },

    async hostedKey() {
      if (cachedHostedKey) return cachedHostedKey;
      let row = await repo.findServiceKey(db, HOSTED_KEY_NAME);
      if (!row) {
        const keys = await generateDkimKeyPair();
        // Two processes starting at once may both generate; the first insert wins and both read it back.
        const sealed = box.seal(keys.privateKey, serviceKeyContext(HOSTED_KEY_NAME));
        await repo.insertServiceKey(db, { name: HOSTED_KEY_NAME, selector: hostedSelector, private_key: sealed, public_key: keys.publicKey, created_at: clock.now() });
        row = await repo.findServiceKey(db, HOSTED_KEY_NAME);
        if (!row) throw new Error('could not store the hosted DKIM key');
      }
      // Opened once per process and kept, as the operator's key from MAILROOM_DKIM_KEY is.
      cachedHostedKey = { selector: row.selector, privateKey: box.open(row.private_key, serviceKeyContext(row.name)), publicKey: row.public_key };
      return cachedHostedKey;
    },

    async sealStoredKeys() {
      let sealed = 0;
      for (const row of await repo.plaintextDomainKeys(db)) {
        sealed += await repo.replaceDomainKey(db, row.id, row.dkim_private_key, box.seal(row.dkim_private_key, domainKeyContext(row.id)));
      }
      for (const row of await repo.plaintextServiceKeys(db)) {
        sealed += await repo.replaceServiceKey(db, row.name, row.private_key, box.seal(row.private_key, serviceKeyContext(row.name)));
      }
      return sealed;
    },
  };
  return service;
}
