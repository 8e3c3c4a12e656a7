import type { Expression, Insertable, Kysely } from 'kysely';
import type { DialectInfo } from '../../db/dialect.js';
import { preparedQuery } from '../../db/prepared.js';
import { deleteWorkspaceBatch } from '../../db/purge.js';
import { tablesOf, type Work } from '../../db/tables.js';
import type { ApiKeyTable, MembershipTable, Role, SessionTable, TenancyTables, UserTable, WorkspaceState, WorkspaceTable } from './tenancy.table.js';

// Asked by every authenticated request: compiled once (db/prepared.ts). The key's workspace state comes in the same
// read (a platform key has none), so a suspended workspace costs no extra query.
const apiKeyByHashQuery = preparedQuery((db: Kysely<TenancyTables>, p) =>
  db
    .selectFrom('api_keys')
    .leftJoin('workspaces', 'workspaces.id', 'api_keys.workspace_id')
    .select(['api_keys.id as id', 'api_keys.workspace_id as workspace_id', 'api_keys.last_used_at as last_used_at', 'workspaces.state as workspace_state', 'workspaces.state_reason as state_reason'])
    .where('api_keys.token_hash', '=', p<string>('tokenHash'))
    .where('api_keys.revoked_at', 'is', null),
);
const sessionByHashQuery = preparedQuery((db: Kysely<TenancyTables>, p) =>
  db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .leftJoin('memberships', (join) =>
      join
        .onRef('memberships.workspace_id', '=', 'sessions.active_workspace_id')
        .onRef('memberships.user_id', '=', 'sessions.user_id'),
    )
    .leftJoin('workspaces', 'workspaces.id', 'memberships.workspace_id')
    .select([
      'workspaces.state as workspace_state',
      'workspaces.state_reason as state_reason',
      'sessions.id as id',
      'sessions.user_id as user_id',
      'users.email as email',
      'sessions.active_workspace_id as active_workspace_id',
      'memberships.role as role',
      'sessions.last_seen_at as last_seen_at',
      'sessions.expires_at as expires_at',
    ])
    .where('sessions.token_hash', '=', p<string>('tokenHash'))
    .where('sessions.revoked_at', 'is', null),
);

/** The tenancy tables' operations. Every one takes the pool or the caller's transaction to run on. */
export function createTenancyStore({ dialect }: { dialect: Pick<DialectInfo, 'supportsRowLocks'> }) {
  const of = (work: Work) => tablesOf<TenancyTables>(work);
  return {
    insertWorkspace: (work: Work, row: Insertable<WorkspaceTable>) => of(work).insertInto('workspaces').values(row).execute(),
    findWorkspace: (work: Work, id: string) => of(work).selectFrom('workspaces').selectAll().where('id', '=', id).executeTakeFirst(),

    /**
     * Take the workspace's row lock (PostgreSQL) for a change of its memberships, so two changes that each leave one
     * owner cannot both commit; SQLite's write transactions are serial already (they begin IMMEDIATE).
     */
    lockWorkspace: async (work: Work, id: string): Promise<boolean> => {
      const query = of(work).selectFrom('workspaces').select('id').where('id', '=', id);
      return (await (dialect.supportsRowLocks ? query.forUpdate() : query).executeTakeFirst()) !== undefined;
    },

    insertUser: (work: Work, row: UserTable) => of(work).insertInto('users').values(row).execute(),
    findUserById: (work: Work, id: string) => of(work).selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst(),
    setPasswordHash: (work: Work, id: string, passwordHash: string) =>
      of(work).updateTable('users').set({ password_hash: passwordHash }).where('id', '=', id).execute(),
    findUserByEmail: (work: Work, email: string) =>
      of(work).selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst(),

    insertMembership: (work: Work, row: MembershipTable) => of(work).insertInto('memberships').values(row).execute(),
    findMembership: (work: Work, workspaceId: string, userId: string) =>
      of(work)
        .selectFrom('memberships')
        .selectAll()
        .where('workspace_id', '=', workspaceId)
        .where('user_id', '=', userId)
        .executeTakeFirst(),
    /** A workspace's members with their email, oldest membership first. */
    listMembers: (work: Work, workspaceId: string) =>
      of(work)
        .selectFrom('memberships')
        .innerJoin('users', 'users.id', 'memberships.user_id')
        .select(['memberships.user_id as user_id', 'users.email as email', 'memberships.role as role', 'memberships.created_at as created_at'])
        .where('memberships.workspace_id', '=', workspaceId)
        .orderBy('memberships.created_at')
        .orderBy('memberships.user_id')
        .execute(),
    findMember: (work: Work, workspaceId: string, userId: string) =>
      of(work)
        .selectFrom('memberships')
        .innerJoin('users', 'users.id', 'memberships.user_id')
        .select(['memberships.user_id as user_id', 'users.email as email', 'memberships.role as role', 'memberships.created_at as created_at'])
        .where('memberships.workspace_id', '=', workspaceId)
        .where('memberships.user_id', '=', userId)
        .executeTakeFirst(),
    countOwners: async (work: Work, workspaceId: string): Promise<number> => {
      const row = await of(work)
        .selectFrom('memberships')
        .select((eb) => eb.fn.countAll<number>().as('count'))
        .where('workspace_id', '=', workspaceId)
        .where('role', '=', 'owner')
        .executeTakeFirstOrThrow();
      return Number(row.count);
    },
    setRole: (work: Work, workspaceId: string, userId: string, role: Role) =>
      of(work).updateTable('memberships').set({ role }).where('workspace_id', '=', workspaceId).where('user_id', '=', userId).execute(),
    deleteMembership: (work: Work, workspaceId: string, userId: string) =>
      of(work).deleteFrom('memberships').where('workspace_id', '=', workspaceId).where('user_id', '=', userId).execute(),
    /** The user's workspaces, oldest membership first. */
    listMembershipsOfUser: (work: Work, userId: string) =>
      of(work)
        .selectFrom('memberships')
        .innerJoin('workspaces', 'workspaces.id', 'memberships.workspace_id')
        .select(['workspaces.id as workspace_id', 'workspaces.name as name', 'memberships.role as role', 'workspaces.state as state', 'workspaces.state_reason as state_reason'])
        .where('memberships.user_id', '=', userId)
        .orderBy('memberships.created_at')
        .orderBy('workspaces.id')
        .execute(),

    insertApiKey: (work: Work, row: ApiKeyTable) => of(work).insertInto('api_keys').values(row).execute(),
    /** Every API-key request asks this (prepared: see of(work)/prepared.ts). */
    findApiKeyByHash: async (work: Work, tokenHash: string) => (await apiKeyByHashQuery(of(work), { tokenHash }))[0],
    /** A workspace's keys, revoked ones included, newest first; never platform keys. */
    listApiKeys: (work: Work, workspaceId: string) =>
      of(work)
        .selectFrom('api_keys')
        .select(['id', 'name', 'created_at', 'last_used_at', 'revoked_at'])
        .where('workspace_id', '=', workspaceId)
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .execute(),
    findApiKey: (work: Work, workspaceId: string, id: string) =>
      of(work)
        .selectFrom('api_keys')
        .select(['id', 'name', 'created_at', 'last_used_at', 'revoked_at'])
        .where('workspace_id', '=', workspaceId)
        .where('id', '=', id)
        .executeTakeFirst(),
    countLiveApiKeys: async (work: Work, workspaceId: string): Promise<number> => {
      const row = await of(work)
        .selectFrom('api_keys')
        .select((eb) => eb.fn.countAll<number>().as('count'))
        .where('workspace_id', '=', workspaceId)
        .where('revoked_at', 'is', null)
        .executeTakeFirstOrThrow();
      return Number(row.count);
    },
    revokeApiKey: (work: Work, workspaceId: string, id: string, at: number) =>
      of(work).updateTable('api_keys').set({ revoked_at: at }).where('workspace_id', '=', workspaceId).where('id', '=', id).where('revoked_at', 'is', null).execute(),
    touchApiKey: (work: Work, id: string, at: number) =>
      of(work).updateTable('api_keys').set({ last_used_at: at }).where('id', '=', id).execute(),

    insertSession: (work: Work, row: SessionTable) => of(work).insertInto('sessions').values(row).execute(),
    /** A live (not revoked) session with its user and, when one is active, the user's role there. */
    /** Every session request asks this (prepared). */
    findSessionByHash: async (work: Work, tokenHash: string) => (await sessionByHashQuery(of(work), { tokenHash }))[0],
    /**
     * The memberships, among `workspaceIds`, of the users of those of `sessionIds` that are live at `now` (not revoked,
     * not past their expiry, used since `idleSince`): what open event streams are checked against.
     */
    liveSessionMemberships: (work: Work, sessionIds: readonly string[], workspaceIds: readonly string[], now: number, idleSince: number) =>
      of(work)
        .selectFrom('sessions')
        .innerJoin('memberships', 'memberships.user_id', 'sessions.user_id')
        // A suspended workspace's open streams end as its other requests are refused.
        .innerJoin('workspaces', (join) => join.onRef('workspaces.id', '=', 'memberships.workspace_id').on('workspaces.state', '=', 'active'))
        .select(['sessions.id as session_id', 'memberships.workspace_id as workspace_id', 'memberships.role as role'])
        .where('sessions.id', 'in', sessionIds)
        .where('memberships.workspace_id', 'in', workspaceIds)
        .where('sessions.revoked_at', 'is', null)
        .where('sessions.expires_at', '>', now)
        .where('sessions.last_seen_at', '>', idleSince)
        .execute(),
    touchSession: (work: Work, id: string, at: number) =>
      of(work).updateTable('sessions').set({ last_seen_at: at }).where('id', '=', id).execute(),
    revokeSession: (work: Work, id: string, at: number) =>
      of(work).updateTable('sessions').set({ revoked_at: at }).where('id', '=', id).where('revoked_at', 'is', null).execute(),
    /**
     * End every live session of a user but one (a password change keeps the session that made it); how many ended.
     * A session unused since `idleSince` or past its expiry has ended already and is left as it is.
     */
    revokeOtherSessions: async (work: Work, userId: string, keepId: string, at: number, idleSince: number): Promise<number> => {
      const result = await of(work)
        .updateTable('sessions')
        .set({ revoked_at: at })
        .where('user_id', '=', userId)
        .where('id', '<>', keepId)
        .where('revoked_at', 'is', null)
        .where('expires_at', '>', at)
        .where('last_seen_at', '>', idleSince)
        .executeTakeFirst();
      return Number(result.numUpdatedRows);
    },
    setActiveWorkspace: (work: Work, id: string, workspaceId: string) =>
      of(work).updateTable('sessions').set({ active_workspace_id: workspaceId }).where('id', '=', id).execute(),

    insertLoginFailure: (work: Work, id: string, email: string, client: string, at: number) =>
      of(work).insertInto('login_failures').values({ id, email, client, failed_at: at }).execute(),
    deleteLoginFailure: (work: Work, id: string) => of(work).deleteFrom('login_failures').where('id', '=', id).execute(),
    /** Failures for an email since a time, from `client` and from every address: how many, and the oldest of each. */
    loginFailuresSince: (work: Work, email: string, client: string, since: number) =>
      of(work)
        .selectFrom('login_failures')
        .select((eb) => [
          eb.fn.countAll<number>().as('count'),
          eb.fn.min('failed_at').as('oldest'),
          eb.fn.sum<number>(eb.case().when('client', '=', client).then(1).else(0).end()).as('clientCount'),
          eb.fn.min(eb.case().when('client', '=', client).then(eb.ref('failed_at')).else(null).end()).as('clientOldest'),
        ])
        .where('email', '=', email)
        .where('failed_at', '>', since)
        .executeTakeFirstOrThrow(),
    /**
     * Forget an email's failures up to a time after a successful login: those of the client that logged in, and those
     * of no known address. Other addresses' failures stay: a guesser elsewhere stays throttled.
     */
    clearLoginFailures: (work: Work, email: string, client: string, upTo: number) =>
      of(work).deleteFrom('login_failures').where('email', '=', email).where('client', 'in', [client, '']).where('failed_at', '<=', upTo).execute(),

    /**
     * Add requests to buckets' windows in one statement (so concurrent counts never lose one); each row's count so far.
     * The rows are distinct buckets or windows, in a fixed order, so two processes' statements lock them in one order.
     */
    addRequestCounts: async (work: Work, rows: ReadonlyArray<{ bucket: string; windowStart: number; hits: number }>): Promise<Array<{ bucket: string; windowStart: number; hits: number }>> => {
      const values = [...rows]
        .sort((a, b) => (a.bucket < b.bucket ? -1 : a.bucket > b.bucket ? 1 : a.windowStart - b.windowStart))
        .map((r) => ({ bucket: r.bucket, window_start: r.windowStart, hits: r.hits }));
      const out = await of(work)
        .insertInto('request_counts')
        .values(values)
        .onConflict((oc) => oc.columns(['bucket', 'window_start']).doUpdateSet((eb) => ({ hits: eb('request_counts.hits', '+', eb.ref('excluded.hits')) })))
        .returning(['bucket', 'window_start', 'hits'])
        .execute();
      return out.map((r) => ({ bucket: r.bucket, windowStart: Number(r.window_start), hits: Number(r.hits) }));
    },
    /**
     * Delete the sessions that ended (expired, idle or revoked) before `cutoff`: kept until then, so a late request
     * still gets "expired", not "unknown". How many went.
     */
    deleteSessionsEndedBefore: async (work: Work, cutoff: number, idleMs: number): Promise<number> => {
      const result = await of(work)
        .deleteFrom('sessions')
        .where((eb) => eb.or([eb('expires_at', '<', cutoff), eb('last_seen_at', '<', cutoff - idleMs), eb('revoked_at', '<', cutoff)]))
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },
    deleteLoginFailuresBefore: async (work: Work, before: number): Promise<number> =>
      Number((await of(work).deleteFrom('login_failures').where('failed_at', '<', before).executeTakeFirst()).numDeletedRows),
    deleteRequestCountsBefore: (work: Work, windowStart: number) => of(work).deleteFrom('request_counts').where('window_start', '<', windowStart).executeTakeFirst(),

    /**
     * Move a workspace to `state` from one of `from` (with the reason shown to its callers, or null); false when it
     * is in none of them (or does not exist).
     */
    setWorkspaceState: async (work: Work, id: string, change: { state: WorkspaceState; from: readonly WorkspaceState[]; reason: string | null; at: number }): Promise<boolean> => {
      const result = await of(work)
        .updateTable('workspaces')
        .set({ state: change.state, state_reason: change.reason, state_changed_at: change.at })
        .where('id', '=', id)
        .where('state', 'in', change.from)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },
    /** Workspaces in id order after `after`, `limit` at a time (the operator's listing). */
    listWorkspacesPage: (work: Work, after: string, limit: number) =>
      of(work).selectFrom('workspaces').selectAll().where('id', '>', after).orderBy('id').limit(limit).execute(),
    /** Ids of the workspaces being deleted (few: the partial index holds only workspaces that are not active). */
    deletingWorkspaceIds: async (work: Work): Promise<string[]> =>
      (await of(work).selectFrom('workspaces').select('id').where('state', '<>', 'active').where('state', '=', 'deleting').execute()).map((r) => r.id),
    /**
     * One batch of a deleted workspace's tenancy rows, API keys then memberships (each statement at most `limit`
     * rows); how many went, 0 once none is left. The workspace row itself goes last, with `deleteWorkspaceRow`.
     */
    purgeTenancyBatch: async (work: Work, workspaceId: string, limit: number): Promise<number> =>
      (await deleteWorkspaceBatch(of(work), 'api_keys', 'id', workspaceId, limit)) || deleteWorkspaceBatch(of(work), 'memberships', 'user_id', workspaceId, limit),
    /** The workspace row, once nothing else of it is left (sessions that had it active lose it: a foreign key). */
    deleteWorkspaceRow: async (work: Work, id: string): Promise<boolean> =>
      (await of(work).deleteFrom('workspaces').where('id', '=', id).where('state', '=', 'deleting').executeTakeFirst()).numDeletedRows > 0n,
  };
}

/**
 * The ids of the workspaces that are not active, as a part of another owner's statement (a job claim leaves their
 * jobs where they are). It takes any handle and names only `workspaces`; the partial index serves it.
 */
export function heldWorkspacesSelect(handle: Parameters<typeof tablesOf>[0]) {
  return tablesOf<TenancyTables>(handle).selectFrom('workspaces').select('workspaces.id').where('workspaces.state', '<>', 'active');
}

/**
 * The state of the workspace whose id is `workspaceId` (a column of the caller's row), as a part of another owner's
 * statement: a credential lookup reads its workspace's state in the same read.
 */
export function workspaceStateSelect(handle: Parameters<typeof tablesOf>[0], workspaceId: Expression<string>) {
  return tablesOf<TenancyTables>(handle).selectFrom('workspaces').select('workspaces.state').where('workspaces.id', '=', workspaceId).$asScalar();
}

/**
 * The role of the user `userId` in the workspace `workspaceId` (columns of the caller's row; null when not a member),
 * as a part of another owner's statement: a credential a member made ends when they leave.
 */
export function membershipRoleSelect(handle: Parameters<typeof tablesOf>[0], workspaceId: Expression<string>, userId: Expression<string>) {
  return tablesOf<TenancyTables>(handle)
    .selectFrom('memberships')
    .select('memberships.role')
    .where('memberships.workspace_id', '=', workspaceId)
    .where('memberships.user_id', '=', userId)
    .$asScalar();
}

export type TenancyStore = ReturnType<typeof createTenancyStore>;
