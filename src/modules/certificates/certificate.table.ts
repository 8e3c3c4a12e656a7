import type { ColumnType } from 'kysely';

/** PostgreSQL returns a bigint as a string. */
type Millis = ColumnType<number | string, number, number>;

/** A certificate of the service's listeners obtained with ACME (one row, `acme`), and the lease of its ordering. */
export interface TlsCertificateTable {
  name: string;
  /** The names it is for, a comma list in the order they were asked for ('' before the first). */
  domains: ColumnType<string, string | undefined, string>;
  cert_pem: string | null;
  /** The private key, sealed (lib/secret-box.ts) under MAILROOM_SECRET_KEY. */
  key_sealed: string | null;
  not_after: ColumnType<number | string | null, number | null | undefined, number | null>;
  /** Raised with every new certificate: each process compares it with the one it serves. */
  version: ColumnType<number, number | undefined, number>;
  lease_holder: string | null;
  /** Until when the holder orders (or, after a failure, when the next try may start); 0 = free. */
  lease_until: ColumnType<number | string, number | undefined, number>;
  last_error: string | null;
  updated_at: Millis;
}

/** The account key for one ACME directory, sealed. */
export interface AcmeAccountTable {
  directory_url: string;
  key_sealed: string;
  created_at: Millis;
}

/** An HTTP-01 answer the CA may ask any api process for. */
export interface AcmeChallengeTable {
  token: string;
  key_authorization: string;
  created_at: Millis;
}

/** The certificates module's tables. */
export interface CertificateTables {
  tls_certificates: TlsCertificateTable;
  acme_accounts: AcmeAccountTable;
  acme_challenges: AcmeChallengeTable;
}
