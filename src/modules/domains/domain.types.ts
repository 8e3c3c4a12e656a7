import type { DomainPolicy } from '../mailboxes/mailbox.types.js';
import type { TenantContext } from '../tenancy/tenancy.types.js';
import type { DomainChecks } from './dns-checks.js';
import type { SendingDomainTable } from './domain.table.js';

export type { CheckStatus, DomainChecks, RecordCheck } from './dns-checks.js';

export interface DnsRecordView {
  record_name: string;
  record_type: 'TXT';
  record_value: string;
}

/** A record of the return-path host: its MX or its SPF. */
export interface ReturnPathRecordView {
  record_name: string;
  record_type: 'MX' | 'TXT';
  record_value: string;
}

export interface SendingDomainView {
  domain_id: string;
  domain: string;
  status: 'pending' | 'verified';
  dkim: DnsRecordView & { selector: string };
  /** Advice, never required: an SPF record for the domain that includes the return-path domain. */
  spf: DnsRecordView;
  created_at: string;
  verified_at: string | null;
  /** The envelope sender's domain for mail from this domain once its records verify; null: the hosted bounce domain. */
  return_path_host: string | null;
  return_path_verified_at: string | null;
  /** What to publish at the return-path host; null without one. */
  return_path_records: { mx: ReturnPathRecordView; spf: ReturnPathRecordView } | null;
}

/** The answers of create and of a records regeneration: the only ones with the verification token. */
export interface CreatedDomainView extends SendingDomainView {
  verification: DnsRecordView;
}

/** The answer of verify: each record as DNS has it now, and one sentence for the whole. */
export interface CheckedDomainView extends SendingDomainView {
  checks: DomainChecks;
  summary: string;
}

/** What still uses a domain that a delete was refused for (each list cut at MAX_LISTED_DEPENDENTS). */
export interface DomainDependents {
  mailbox_count: number;
  mailboxes: string[];
  service_token_count: number;
  service_tokens: { token_id: string; name: string }[];
}

/** What outbound mail of a domain is signed with. */
export interface SigningKey {
  domain: string;
  selector: string;
  privateKey: string;
}

export interface DomainService extends DomainPolicy {
  create(tenant: TenantContext, input: { domain: string; return_path_host?: string | null | undefined }): Promise<CreatedDomainView>;
  list(tenant: TenantContext): Promise<{ sending_domains: SendingDomainView[] }>;
  get(tenant: TenantContext, domainId: string): Promise<SendingDomainView>;
  /**
   * Look the domain's records up now and say, per record, what is wrong; verified (and `domain.verified` emitted
   * once) when the verification record matches. DKIM and SPF never block verification.
   */
  verify(tenant: TenantContext, domainId: string): Promise<CheckedDomainView>;
  /** Set or clear the domain's return-path host; a new host starts unverified (a verify checks its records). */
  update(tenant: TenantContext, domainId: string, input: { return_path_host: string | null }): Promise<SendingDomainView>;
  /** Whether a host is the verified return-path host of some verified sending domain (of any workspace): inbound bounces. */
  isReturnPathHost(host: string): Promise<boolean>;
  /** A pending domain's records with a new verification token (only its hash is kept); the earlier token stops verifying. */
  regenerateRecords(tenant: TenantContext, domainId: string): Promise<CreatedDomainView>;
  /** Delete a domain nothing uses any more; a mailbox in it is a 409 naming the dependents. */
  remove(tenant: TenantContext, domainId: string): Promise<{ domain_id: string; domain: string }>;
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
