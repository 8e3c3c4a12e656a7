export type DomainStatus = 'pending' | 'verified';

export interface SendingDomainTable {
  id: string;
  workspace_id: string;
  domain: string;
  status: DomainStatus;
  /** SHA-256 of the verification token; the token itself is shown once, at creation. */
  verification_hash: string;
  dkim_selector: string;
  /** PKCS#8 PEM. */
  dkim_private_key: string;
  /** Base64 SPKI DER, as published in the `p=` tag. */
  dkim_public_key: string;
  created_at: number;
  verified_at: number | null;
  /** The domain's own return-path host (`bounces.<domain>`): the envelope sender's domain once it is verified. */
  return_path_host: string | null;
  /** When the host's MX and SPF were last found right by a verify; cleared when the host changes or they break. */
  return_path_verified_at: number | null;
}

export interface ServiceKeyTable {
  name: string;
  selector: string;
  private_key: string;
  public_key: string;
  created_at: number;
}

/** The domains module's tables: sending domains and the DKIM keys (service keys) that sign for them. */
export interface DomainTables {
  sending_domains: SendingDomainTable;
  service_keys: ServiceKeyTable;
}
