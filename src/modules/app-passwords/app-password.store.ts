import type { AliasableExpression, Expression } from 'kysely';
import { deleteWorkspaceBatch } from '../../db/purge.js';
import { tablesOf, type Work } from '../../db/tables.js';
import type { AppPasswordTable, AppPasswordTables } from './app-password.table.js';

type Handle = Parameters<typeof tablesOf>[0];

/**
 * The tenancy store's parts, read in this store's own statements: the state of a workspace, and a user's role in it
 * (null when they are not a member), so a login and a liveness check are one read each.
 */
export interface TenancyParts {
  workspaceState: (handle: Handle, workspaceId: Expression<string>) => AliasableExpression<string | null>;
  membershipRole: (handle: Handle, workspaceId: Expression<string>, userId: Expression<string>) => AliasableExpression<string | null>;
}

/** An app password as a login reads it: with its workspace's state and whether its maker is still a member. */
export type LoginCandidate = AppPasswordTable & { workspace_state: string | null; member_role: string | null };

/** Ids checked per liveness query: well under either database's limit on bound parameters. */
const LIVE_CHECK_CHUNK = 500;

export function createAppPasswordStore(parts: TenancyParts) {
  const of = (work: Work) => tablesOf<AppPasswordTables>(work);
  return {
    insert: (work: Work, row: AppPasswordTable) => of(work).insertInto('app_passwords').values(row).execute(),
    /** The workspace's app passwords (of one maker when `userId` is given), newest first. */
    list: (work: Work, workspaceId: string, userId: string | null): Promise<AppPasswordTable[]> => {
      const rows = of(work).selectFrom('app_passwords').selectAll().where('workspace_id', '=', workspaceId);
      return (userId === null ? rows : rows.where('user_id', '=', userId)).orderBy('id', 'desc').execute();
    },
    find: (work: Work, workspaceId: string, id: string): Promise<AppPasswordTable | undefined> =>
      of(work).selectFrom('app_passwords').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst(),
    countOfMailbox: async (work: Work, workspaceId: string, mailboxId: string): Promise<number> =>
      Number(
        (
          await of(work)
            .selectFrom('app_passwords')
            .select((eb) => eb.fn.countAll<number | string>().as('n'))
            .where('workspace_id', '=', workspaceId)
            .where('mailbox_id', '=', mailboxId)
            .executeTakeFirstOrThrow()
        ).n,
      ),
    delete: async (work: Work, workspaceId: string, id: string): Promise<boolean> =>
      (await of(work).deleteFrom('app_passwords').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst()).numDeletedRows > 0n,
    /** A login's candidates: the mailbox's app passwords, newest first, with their workspace's state and maker's role. */
    loginCandidates: (work: Work, workspaceId: string, mailboxId: string): Promise<LoginCandidate[]> =>
      of(work)
        .selectFrom('app_passwords')
        .selectAll('app_passwords')
        .select((eb) => [
          parts.workspaceState(work, eb.ref('app_passwords.workspace_id')).as('workspace_state'),
          parts.membershipRole(work, eb.ref('app_passwords.workspace_id'), eb.ref('app_passwords.user_id')).as('member_role'),
        ])
        .where('app_passwords.workspace_id', '=', workspaceId)
        .where('app_passwords.mailbox_id', '=', mailboxId)
        .orderBy('app_passwords.id', 'desc')
        .execute(),
    /**
     * Which of `ids` still hold: the row exists (not revoked; its mailbox and maker not deleted), its workspace is
     * active and its maker is still a member.
     */
    live: async (work: Work, ids: readonly string[]): Promise<Set<string>> => {
      const held = new Set<string>();
      for (let i = 0; i < ids.length; i += LIVE_CHECK_CHUNK) {
        const rows = await of(work)
          .selectFrom('app_passwords')
          .select('app_passwords.id')
          .where('app_passwords.id', 'in', ids.slice(i, i + LIVE_CHECK_CHUNK))
          .where((eb) => eb(parts.workspaceState(work, eb.ref('app_passwords.workspace_id')), '=', 'active'))
          .where((eb) => eb(parts.membershipRole(work, eb.ref('app_passwords.workspace_id'), eb.ref('app_passwords.user_id')), 'is not', null))
          .execute();
        for (const row of rows) held.add(row.id);
      }
      return held;
    },
    touch: (work: Work, id: string, at: number) => of(work).updateTable('app_passwords').set({ last_used_at: at }).where('id', '=', id).execute(),
    purgeWorkspaceBatch: (work: Work, workspaceId: string, limit: number): Promise<number> => deleteWorkspaceBatch(of(work), 'app_passwords', 'id', workspaceId, limit),
  };
}

export type AppPasswordStore = ReturnType<typeof createAppPasswordStore>;
