import type { DialectInfo } from '../../db/dialect.js';
import { preparedQuery } from '../../db/prepared.js';
import { deleteWorkspaceBatch } from '../../db/purge.js';
import { tablesOf, type Work } from '../../db/tables.js';
import { SEALED_PREFIX } from '../../lib/secret-box.js';
import type { DomainTables, SendingDomainTable, ServiceKeyTable } from './domain.table.js';

const verifiedByNameQuery = preparedQuery<{ workspaceId: string; domain: string }, SendingDomainTable, DomainTables>((db, p) =>
  db.selectFrom('sending_domains').selectAll().where('workspace_id', '=', p<string>('workspaceId')).where('domain', '=', p<string>('domain')).where('status', '=', 'verified'),
);

/** Sending domains and the service's DKIM keys; every domain operation filters by workspace. */
/**
 * A workspace's verified sending domains with their DKIM keys, as a part of another store's statement: a delivery
 * run's one read joins it to the sending mailbox (mail store), so the key costs no statement of its own.
 */
export function verifiedDomainsSelect(handle: Parameters<typeof tablesOf>[0], workspaceId: string) {
  return tablesOf<DomainTables>(handle)
    .selectFrom('sending_domains')
    .select(['id', 'domain', 'dkim_selector', 'dkim_private_key'])
    // The return-path host only once its records verified: the envelope sender's domain for mail from the domain.
    .select((eb) => eb.case().when('return_path_verified_at', 'is not', null).then(eb.ref('return_path_host')).else(null).end().as('return_path_host'))
    .where('workspace_id', '=', workspaceId)
    .where('status', '=', 'verified');
}

export function createDomainStore({ dialect }: { dialect: Pick<DialectInfo, 'supportsRowLocks'> }) {
  const of = (work: Work) => tablesOf<DomainTables>(work);
  return {
    insert: (work: Work, row: SendingDomainTable) => of(work).insertInto('sending_domains').values(row).execute(),
    list: (work: Work, workspaceId: string) =>
      of(work).selectFrom('sending_domains').selectAll().where('workspace_id', '=', workspaceId).orderBy('created_at', 'desc').orderBy('id', 'desc').execute(),
    find: (work: Work, workspaceId: string, id: string) =>
      of(work).selectFrom('sending_domains').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst(),
    /** Asked for every message sent (its DKIM key), so prepared (see of(work)/prepared.ts). */
    findVerifiedByName: async (work: Work, workspaceId: string, domain: string) => (await verifiedByNameQuery(of(work), { workspaceId, domain }))[0],
    /**
     * Whether the workspace has the domain verified, holding its row (PostgreSQL `FOR KEY SHARE`) until `of(work)`'s
     * transaction ends, so that a delete waits for a mailbox being made in it (and then sees the mailbox).
     */
    holdVerifiedByName: async (work: Work, workspaceId: string, domain: string): Promise<boolean> => {
      const query = of(work).selectFrom('sending_domains').select('id').where('workspace_id', '=', workspaceId).where('domain', '=', domain).where('status', '=', 'verified');
      return (await (dialect.supportsRowLocks ? query.forKeyShare() : query).executeTakeFirst()) !== undefined;
    },
    /** The row, locked against mailboxes being made in it (PostgreSQL `FOR UPDATE`), for a delete. */
    lockForDelete: (work: Work, workspaceId: string, id: string) => {
      const query = of(work).selectFrom('sending_domains').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id);
      return (dialect.supportsRowLocks ? query.forUpdate() : query).executeTakeFirst();
    },
    /** Service tokens bound to the domain go with it (their foreign key cascades). */
    delete: (work: Work, workspaceId: string, id: string) => of(work).deleteFrom('sending_domains').where('workspace_id', '=', workspaceId).where('id', '=', id).execute(),
    /** A pending domain's new verification token; false when it is verified (or gone). */
    replaceVerificationHash: async (work: Work, workspaceId: string, id: string, hash: string) =>
      (
        await of(work)
          .updateTable('sending_domains')
          .set({ verification_hash: hash })
          .where('workspace_id', '=', workspaceId)
          .where('id', '=', id)
          .where('status', '=', 'pending')
          .executeTakeFirst()
      ).numUpdatedRows > 0n,
    /** pending → verified; false when it already was (so the event is emitted once). */
    markVerified: async (work: Work, workspaceId: string, id: string, at: number) =>
      (
        await of(work)
          .updateTable('sending_domains')
          .set({ status: 'verified', verified_at: at })
          .where('workspace_id', '=', workspaceId)
          .where('id', '=', id)
          .where('status', '=', 'pending')
          .executeTakeFirst()
      ).numUpdatedRows > 0n,
    /** A new return-path host (or none), unverified: false when the domain is gone. */
    setReturnPathHost: async (work: Work, workspaceId: string, id: string, host: string | null) =>
      (
        await of(work)
          .updateTable('sending_domains')
          .set({ return_path_host: host, return_path_verified_at: null })
          .where('workspace_id', '=', workspaceId)
          .where('id', '=', id)
          .executeTakeFirst()
      ).numUpdatedRows > 0n,
    /** The host's records verified (a time) or broken (null); only while the host is still the one checked. */
    markReturnPath: (work: Work, workspaceId: string, id: string, host: string, at: number | null) =>
      of(work)
        .updateTable('sending_domains')
        .set({ return_path_verified_at: at })
        .where('workspace_id', '=', workspaceId)
        .where('id', '=', id)
        .where('return_path_host', '=', host)
        .execute(),
    /**
     * Across workspaces, as inbound mail is (a bounce names its message, whose workspace it is): whether the host is
     * a verified domain's verified return-path host.
     */
    isReturnPathHost: async (work: Work, host: string) =>
      (await of(work)
        .selectFrom('sending_domains')
        .select('id')
        .where('return_path_host', '=', host)
        .where('return_path_verified_at', 'is not', null)
        .where('status', '=', 'verified')
        .limit(1)
        .executeTakeFirst()) !== undefined,
    findServiceKey: (work: Work, name: string) => of(work).selectFrom('service_keys').selectAll().where('name', '=', name).executeTakeFirst(),
    insertServiceKey: (work: Work, row: ServiceKeyTable) =>
      of(work).insertInto('service_keys').values(row).onConflict((oc) => oc.column('name').doNothing()).execute(),
    /**
     * Start-up, across workspaces: keys stored before encryption at rest (a sealed one starts `v1:`).
     * The replacements keep the plaintext as a condition, so a process doing the same at once changes nothing twice.
     */
    plaintextDomainKeys: (work: Work) => of(work).selectFrom('sending_domains').select(['id', 'dkim_private_key']).where('dkim_private_key', 'not like', `${SEALED_PREFIX}%`).execute(),
    replaceDomainKey: async (work: Work, id: string, plaintext: string, sealed: string): Promise<number> =>
      Number((await of(work).updateTable('sending_domains').set({ dkim_private_key: sealed }).where('id', '=', id).where('dkim_private_key', '=', plaintext).executeTakeFirst()).numUpdatedRows),
    plaintextServiceKeys: (work: Work) => of(work).selectFrom('service_keys').select(['name', 'private_key']).where('private_key', 'not like', `${SEALED_PREFIX}%`).execute(),
    replaceServiceKey: async (work: Work, name: string, plaintext: string, sealed: string): Promise<number> =>
      Number((await of(work).updateTable('service_keys').set({ private_key: sealed }).where('name', '=', name).where('private_key', '=', plaintext).executeTakeFirst()).numUpdatedRows),
    /** One batch of a deleted workspace's sending domains (at most `limit`); 0 once none is left. */
    purgeWorkspaceBatch: (work: Work, workspaceId: string, limit: number) => deleteWorkspaceBatch(of(work), 'sending_domains', 'id', workspaceId, limit),
  };
}

export type DomainStore = ReturnType<typeof createDomainStore>;
