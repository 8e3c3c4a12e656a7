import type { Db } from '../../db/database.js';
import { preparedQuery } from '../../db/prepared.js';
import { SEALED_PREFIX } from '../../lib/secret-box.js';
import type { SendingDomainTable, ServiceKeyTable } from './domain.table.js';

const verifiedByNameQuery = preparedQuery<{ workspaceId: string; domain: string }, SendingDomainTable>((db, p) =>
  db.selectFrom('sending_domains').selectAll().where('workspace_id', '=', p<string>('workspaceId')).where('domain', '=', p<string>('domain')).where('status', '=', 'verified'),
);

/** Sending-domain queries; every one filters by workspace. */
export const domainRepository = {
  insert: (db: Db, row: SendingDomainTable) => db.insertInto('sending_domains').values(row).execute(),
  list: (db: Db, workspaceId: string) =>
    db.selectFrom('sending_domains').selectAll().where('workspace_id', '=', workspaceId).orderBy('created_at', 'desc').orderBy('id', 'desc').execute(),
  find: (db: Db, workspaceId: string, id: string) =>
    db.selectFrom('sending_domains').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst(),
  /** Asked for every message sent (its DKIM key), so prepared (see db/prepared.ts). */
  findVerifiedByName: async (db: Db, workspaceId: string, domain: string) => (await verifiedByNameQuery(db, { workspaceId, domain }))[0],
  /**
   * Whether the workspace has the domain verified, holding its row (PostgreSQL `FOR KEY SHARE`) until `db`'s
   * transaction ends, so that a delete waits for a mailbox being made in it (and then sees the mailbox).
   */
  holdVerifiedByName: async (db: Db, workspaceId: string, domain: string, rowLocks: boolean): Promise<boolean> => {
    const query = db.selectFrom('sending_domains').select('id').where('workspace_id', '=', workspaceId).where('domain', '=', domain).where('status', '=', 'verified');
    return (await (rowLocks ? query.forKeyShare() : query).executeTakeFirst()) !== undefined;
  },
  /** The row, locked against mailboxes being made in it (PostgreSQL `FOR UPDATE`), for a delete. */
  lockForDelete: (db: Db, workspaceId: string, id: string, rowLocks: boolean) => {
    const query = db.selectFrom('sending_domains').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id);
    return (rowLocks ? query.forUpdate() : query).executeTakeFirst();
  },
  /** The workspace's mailboxes in the domain (not in its subdomains) and the service tokens bound to it, up to `limit` each. */
  dependents: async (db: Db, workspaceId: string, id: string, domain: string, limit: number) => {
    // Domain names hold no LIKE wildcards (letters, digits, hyphens and dots only), so the pattern is exact.
    const inDomain = db.selectFrom('mailboxes').where('workspace_id', '=', workspaceId).where('address', 'like', `%@${domain}`);
    const tokens = db.selectFrom('service_tokens').where('workspace_id', '=', workspaceId).where('domain_id', '=', id);
    const [mailboxes, mailboxCount, serviceTokens, tokenCount] = await Promise.all([
      inDomain.select('address').orderBy('address').limit(limit).execute(),
      inDomain.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
      tokens.select(['id', 'name']).orderBy('created_at').orderBy('id').limit(limit).execute(),
      tokens.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
    ]);
    return { mailboxes: mailboxes.map((m) => m.address), mailboxCount: Number(mailboxCount.n), serviceTokens, tokenCount: Number(tokenCount.n) };
  },
  /** Service tokens bound to the domain go with it (their foreign key cascades). */
  delete: (db: Db, workspaceId: string, id: string) => db.deleteFrom('sending_domains').where('workspace_id', '=', workspaceId).where('id', '=', id).execute(),
  /** A pending domain's new verification token; false when it is verified (or gone). */
  replaceVerificationHash: async (db: Db, workspaceId: string, id: string, hash: string) =>
    (
      await db
        .updateTable('sending_domains')
        .set({ verification_hash: hash })
        .where('workspace_id', '=', workspaceId)
        .where('id', '=', id)
        .where('status', '=', 'pending')
        .executeTakeFirst()
    ).numUpdatedRows > 0n,
  /** pending → verified; false when it already was (so the event is emitted once). */
  markVerified: async (db: Db, workspaceId: string, id: string, at: number) =>
    (
      await db
        .updateTable('sending_domains')
        .set({ status: 'verified', verified_at: at })
        .where('workspace_id', '=', workspaceId)
        .where('id', '=', id)
        .where('status', '=', 'pending')
        .executeTakeFirst()
    ).numUpdatedRows > 0n,
  findServiceKey: (db: Db, name: string) => db.selectFrom('service_keys').selectAll().where('name', '=', name).executeTakeFirst(),
  insertServiceKey: (db: Db, row: ServiceKeyTable) =>
    db.insertInto('service_keys').values(row).onConflict((oc) => oc.column('name').doNothing()).execute(),
  /**
   * Start-up, across workspaces: keys stored before encryption at rest (a sealed one starts `v1:`).
   * The replacements keep the plaintext as a condition, so a process doing the same at once changes nothing twice.
   */
  plaintextDomainKeys: (db: Db) => db.selectFrom('sending_domains').select(['id', 'dkim_private_key']).where('dkim_private_key', 'not like', `${SEALED_PREFIX}%`).execute(),
  replaceDomainKey: async (db: Db, id: string, plaintext: string, sealed: string): Promise<number> =>
    Number((await db.updateTable('sending_domains').set({ dkim_private_key: sealed }).where('id', '=', id).where('dkim_private_key', '=', plaintext).executeTakeFirst()).numUpdatedRows),
  plaintextServiceKeys: (db: Db) => db.selectFrom('service_keys').select(['name', 'private_key']).where('private_key', 'not like', `${SEALED_PREFIX}%`).execute(),
  replaceServiceKey: async (db: Db, name: string, plaintext: string, sealed: string): Promise<number> =>
    Number((await db.updateTable('service_keys').set({ private_key: sealed }).where('name', '=', name).where('private_key', '=', plaintext).executeTakeFirst()).numUpdatedRows),
} as const;
