import { tablesOf, type Work } from '../../db/tables.js';
import type { CertificateTables } from './certificate.table.js';

/** A stored certificate as the service reads it (bigints as numbers). */
export interface StoredCertificate {
  domains: string;
  certPem: string | null;
  keySealed: string | null;
  notAfter: number | null;
  version: number;
  leaseHolder: string | null;
  leaseUntil: number;
  lastError: string | null;
}

/** The new certificate a lease holder stores. */
export interface NewCertificate {
  domains: string;
  certPem: string;
  keySealed: string;
  notAfter: number;
}

/** The ACME certificate, account keys and pending challenges: the only reader and writer of their tables. */
export function createCertificateStore() {
  const of = (work: Work) => tablesOf<CertificateTables>(work);
  return {
    async find(work: Work, name: string): Promise<StoredCertificate | undefined> {
      const row = await of(work).selectFrom('tls_certificates').selectAll().where('name', '=', name).executeTakeFirst();
      if (!row) return undefined;
      return {
        domains: row.domains,
        certPem: row.cert_pem,
        keySealed: row.key_sealed,
        notAfter: row.not_after === null ? null : Number(row.not_after),
        version: Number(row.version),
        leaseHolder: row.lease_holder,
        leaseUntil: Number(row.lease_until),
        lastError: row.last_error,
      };
    },
    /** The row a lease is taken on, made once (of two processes the first wins). */
    ensure: (work: Work, name: string, at: number) =>
      of(work).insertInto('tls_certificates').values({ name, updated_at: at }).onConflict((oc) => oc.column('name').doNothing()).execute(),
    /** Take the ordering lease if it is free (one conditional UPDATE, so of many processes exactly one gets it). */
    async claimLease(work: Work, name: string, holder: string, now: number, until: number): Promise<boolean> {
      const result = await of(work)
        .updateTable('tls_certificates')
        .set({ lease_holder: holder, lease_until: until, updated_at: now })
        .where('name', '=', name)
        .where('lease_until', '<=', now)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) > 0;
    },
    /** Store the holder's new certificate, raise the version and free the lease. */
    async saveCertificate(work: Work, name: string, holder: string, cert: NewCertificate, at: number): Promise<boolean> {
      const result = await of(work)
        .updateTable('tls_certificates')
        .set((eb) => ({
          domains: cert.domains,
          cert_pem: cert.certPem,
          key_sealed: cert.keySealed,
          not_after: cert.notAfter,
          version: eb('version', '+', 1),
          lease_holder: null,
          lease_until: 0,
          last_error: null,
          updated_at: at,
        }))
        .where('name', '=', name)
        .where('lease_holder', '=', holder)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) > 0;
    },
    /** A failed order: keep the lease until `retryAt`, so no process tries again before then. */
    failLease: (work: Work, name: string, holder: string, error: string, retryAt: number, at: number) =>
      of(work)
        .updateTable('tls_certificates')
        .set({ last_error: error, lease_until: retryAt, updated_at: at })
        .where('name', '=', name)
        .where('lease_holder', '=', holder)
        .execute(),

    accountKey: async (work: Work, directoryUrl: string): Promise<string | undefined> =>
      (await of(work).selectFrom('acme_accounts').select('key_sealed').where('directory_url', '=', directoryUrl).executeTakeFirst())?.key_sealed,
    insertAccount: (work: Work, directoryUrl: string, keySealed: string, at: number) =>
      of(work)
        .insertInto('acme_accounts')
        .values({ directory_url: directoryUrl, key_sealed: keySealed, created_at: at })
        .onConflict((oc) => oc.column('directory_url').doNothing())
        .execute(),

    putChallenge: (work: Work, token: string, keyAuthorization: string, at: number) =>
      of(work)
        .insertInto('acme_challenges')
        .values({ token, key_authorization: keyAuthorization, created_at: at })
        .onConflict((oc) => oc.column('token').doUpdateSet({ key_authorization: keyAuthorization, created_at: at }))
        .execute(),
    challenge: async (work: Work, token: string): Promise<string | undefined> =>
      (await of(work).selectFrom('acme_challenges').select('key_authorization').where('token', '=', token).executeTakeFirst())?.key_authorization,
    removeChallenge: (work: Work, token: string) => of(work).deleteFrom('acme_challenges').where('token', '=', token).execute(),
    /** Challenges an interrupted order left behind. */
    removeChallengesBefore: (work: Work, before: number) => of(work).deleteFrom('acme_challenges').where('created_at', '<', before).execute(),
  };
}

export type CertificateStore = ReturnType<typeof createCertificateStore>;
