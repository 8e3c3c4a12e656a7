import { createHash, randomInt } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { iso } from '../../lib/clock.js';
import { conflict, forbidden, invalid, isDomainError, notFound } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import { DUMMY_PASSWORD_HASH, hashPassword, verifyPassword } from '../../lib/secrets.js';
import { AUDIT_ACTIONS, type AuditAction } from '../audit/audit.actions.js';
import type { AuditLog } from '../audit/audit.service.js';
import type { MailStore } from '../mail/mail.store.js';
import { loginClientKey, TOUCH_INTERVAL_MS, type LoginThrottle } from '../tenancy/auth.service.js';
import { actorOf, isAdmin, type TenantContext } from '../tenancy/tenancy.types.js';
import { normalizeEmail } from '../tenancy/validation.js';
import { credentialVerdict } from '../tenancy/workspace-state.js';
import type { AppPasswordStore, LoginCandidate } from './app-password.store.js';
import type { AppPasswordTable } from './app-password.table.js';

export const MAX_APP_PASSWORD_NAME_LENGTH = 100;
/**
 * App passwords per mailbox: a login checks each of the mailbox's passwords (one scrypt each) until one matches, so
 * the number bounds a failed login's cost. Twenty is a client per device for a whole household.
 */
export const MAX_APP_PASSWORDS_PER_MAILBOX = 20;
/** The password: 4 groups of 4 characters from 31 that cannot be confused (no i, l, o, 0, 1): about 79 bits. */
const PASSWORD_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';
const PASSWORD_GROUPS = 4;
const PASSWORD_GROUP_LENGTH = 4;
/**
 * A right password is remembered (its SHA-256, per app password, in this process) this long, so a mail client that
 * opens a connection per folder does not cost a scrypt each time. A revoked password is no longer a candidate at all,
 * so the cache never lets it in.
 */
const VERIFIED_CACHE_MS = 10 * 60_000;
const VERIFIED_CACHE_MAX = 10_000;
/** The account name the login throttle counts a mailbox's failed logins under (users count under their email). */
export const throttleAccount = (address: string): string => `mailbox:${address}`;

export interface AppPasswordView {
  app_password_id: string;
  name: string;
  mailbox: string;
  created_at: string;
  last_used_at: string | null;
}

/** Create answers the password, that once. */
export interface AppPasswordWithSecret extends AppPasswordView {
  password: string;
}

/** Where mail clients connect (null = that listener is off), shown beside the app passwords. */
export interface MailClientServers {
  host: string;
  imap_port: number | null;
  imaps_port: number | null;
  submission_port: number | null;
  submissions_port: number | null;
}

/** A mail client's login: who it acts as, or why it is refused. */
export type AppPasswordLogin =
  | { ok: true; workspaceId: string; mailboxId: string; mailbox: string; appPasswordId: string; userId: string }
  /**
   * `invalid`: unknown address, wrong password, or a credential that no longer holds; `throttled`: too many failures
   * for this address (IMAP `NO [UNAVAILABLE]`, SMTP `454 4.7.0`); `suspended`: the workspace is suspended.
   */
  | { ok: false; reason: 'invalid' | 'throttled' | 'suspended'; detail: string; retryAfterSeconds?: number };

export interface AppPasswordService {
  list(tenant: TenantContext): Promise<{ app_passwords: AppPasswordView[]; servers: MailClientServers }>;
  create(tenant: TenantContext, input: { name: string; mailbox: string }): Promise<AppPasswordWithSecret>;
  revoke(tenant: TenantContext, id: string): Promise<void>;
  /** A mail client's login: the mailbox address as user name, an app password of that mailbox. */
  verify(address: string, password: string, remoteAddress: string): Promise<AppPasswordLogin>;
}

export interface AppPasswordDeps {
  work: Work;
  store: Pick<AppPasswordStore, 'insert' | 'list' | 'find' | 'countOfMailbox' | 'delete' | 'loginCandidates' | 'touch'>;
  mailboxes: Pick<MailStore, 'mailboxIdByAddress' | 'mailboxAddresses' | 'mailboxForRecipient'>;
  clock: Clock;
  audit: Pick<AuditLog, 'record'>;
  /** The login throttle HTTP logins use (counted in the shared database). */
  throttle: LoginThrottle;
  servers: MailClientServers;
  /** Called after a revocation commits: the workspace's open mail-client sessions are checked. */
  ended?: (workspaceId: string) => void;
}

/** A new password, grouped for typing: `abcd-efgh-jkmn-pqrs`. */
export function newAppPassword(): string {
  const groups: string[] = [];
  for (let g = 0; g < PASSWORD_GROUPS; g += 1) {
    let group = '';
    for (let i = 0; i < PASSWORD_GROUP_LENGTH; i += 1) group += PASSWORD_ALPHABET[randomInt(PASSWORD_ALPHABET.length)];
    groups.push(group);
  }
  return groups.join('-');
}

/** What is hashed and compared: the characters alone, as a client may keep the dashes, spaces or capitals. */
export function normalizeAppPassword(password: string): string {
  return password.replace(/[\s-]+/g, '').toLowerCase();
}

function toView(row: AppPasswordTable, mailbox: string): AppPasswordView {
  return { app_password_id: row.id, name: row.name, mailbox, created_at: iso(row.created_at), last_used_at: row.last_used_at === null ? null : iso(Number(row.last_used_at)) };
}

/** Members see and revoke the app passwords they made; owners and admins see and revoke all of the workspace's. */
const seesAll = (tenant: TenantContext): boolean => isAdmin(tenant.role);

function requireUser(tenant: TenantContext): string {
  if (tenant.userId === null) throw forbidden('user_required', 'app passwords belong to a user: use a session');
  return tenant.userId;
}

export function createAppPasswordService(deps: AppPasswordDeps): AppPasswordService {
  const { work, store, mailboxes, clock, audit, throttle } = deps;
  const verified = new Map<string, number>();
  const record = (trx: Work, tenant: TenantContext, action: AuditAction, id: string, details: Record<string, unknown>) =>
    audit.record(trx, { workspaceId: tenant.workspaceId, action, actor: actorOf(tenant), target: { kind: 'app_password', id }, details });

  async function withMailbox(rows: readonly AppPasswordTable[]): Promise<AppPasswordView[]> {
    const addresses = await mailboxes.mailboxAddresses(work, rows);
    return rows.flatMap((r) => {
      const mailbox = addresses.get(r.mailbox_id);
      return mailbox === undefined ? [] : [toView(r, mailbox)];
    });
  }

  /** The candidate whose hash the password matches (each costs one scrypt unless remembered), if any. */
  async function match(candidates: readonly LoginCandidate[], password: string): Promise<LoginCandidate | undefined> {
    const digest = createHash('sha256').update(password).digest('base64url');
    const now = performance.now();
    const known = candidates.find((c) => (verified.get(`${c.id} ${digest}`) ?? 0) > now);
    if (known) return known;
    if (candidates.length === 0) await verifyPassword(password, DUMMY_PASSWORD_HASH);
    for (const c of candidates) {
      if (!(await verifyPassword(password, c.password_hash))) continue;
      if (verified.size >= VERIFIED_CACHE_MAX) verified.clear();
      verified.set(`${c.id} ${digest}`, now + VERIFIED_CACHE_MS);
      return c;
    }
    return undefined;
  }

  return {
    async list(tenant) {
      const userId = requireUser(tenant);
      const rows = await store.list(work, tenant.workspaceId, seesAll(tenant) ? null : userId);
      return { app_passwords: await withMailbox(rows), servers: deps.servers };
    },

    async create(tenant, input) {
      const userId = requireUser(tenant);
      const name = input.name.trim();
      if (name.length === 0 || name.length > MAX_APP_PASSWORD_NAME_LENGTH) {
        throw invalid('invalid_request', `name must be 1 to ${MAX_APP_PASSWORD_NAME_LENGTH} characters (what the password is for: "Phone")`);
      }
      const address = normalizeEmail(input.mailbox);
      const mailbox = address ? await mailboxes.mailboxIdByAddress(work, tenant.workspaceId, address) : undefined;
      if (!mailbox || !address) throw invalid('mailbox_not_found', `no mailbox ${input.mailbox} in this workspace`);
      const password = newAppPassword();
      // scrypt before the transaction: nothing is held while it runs.
      const row: AppPasswordTable = {
        id: newId('app'),
        workspace_id: tenant.workspaceId,
        mailbox_id: mailbox.id,
        user_id: userId,
        name,
        password_hash: await hashPassword(normalizeAppPassword(password)),
        created_at: clock.now(),
        last_used_at: null,
      };
      await work.transaction().execute(async (trx) => {
        if ((await store.countOfMailbox(trx, tenant.workspaceId, mailbox.id)) >= MAX_APP_PASSWORDS_PER_MAILBOX) {
          throw conflict('too_many_app_passwords', `${address} already has ${MAX_APP_PASSWORDS_PER_MAILBOX} app passwords; revoke one first`);
        }
        await store.insert(trx, row);
        await record(trx, tenant, AUDIT_ACTIONS.appPasswordCreated, row.id, { name, mailbox: address });
      });
      return { ...toView(row, address), password };
    },

    async revoke(tenant, id) {
      const userId = requireUser(tenant);
      const gone = () => notFound('app_password_not_found', `no app password ${id}`);
      await work.transaction().execute(async (trx) => {
        const row = await store.find(trx, tenant.workspaceId, id);
        // Another member's password is as unknown to a member as another workspace's.
        if (!row || (!seesAll(tenant) && row.user_id !== userId)) throw gone();
        if (!(await store.delete(trx, tenant.workspaceId, id))) throw gone();
        const mailbox = (await mailboxes.mailboxAddresses(trx, [row])).get(row.mailbox_id) ?? null;
        await record(trx, tenant, AUDIT_ACTIONS.appPasswordRevoked, id, { name: row.name, mailbox, made_by: row.user_id });
      });
      deps.ended?.(tenant.workspaceId);
    },

    async verify(user, password, remoteAddress) {
      const address = normalizeEmail(user) ?? user.trim().toLowerCase().slice(0, 320);
      const client = loginClientKey(remoteAddress);
      try {
        await throttle.count(throttleAccount(address), client);
      } catch (err) {
        if (isDomainError(err) && err.kind === 'rate_limited') return { ok: false, reason: 'throttled', detail: err.detail, retryAfterSeconds: err.retryAfterSeconds };
        throw err;
      }
      const mailbox = normalizeEmail(user) ? await mailboxes.mailboxForRecipient(work, address) : undefined;
      const candidates = mailbox ? await store.loginCandidates(work, mailbox.workspace_id, mailbox.id) : [];
      const found = await match(candidates, normalizeAppPassword(password));
      const verdict = credentialVerdict(found?.workspace_state ?? null);
      // A maker who left the workspace, or a workspace being deleted: the password no longer exists.
      if (!mailbox || !found || verdict === 'gone' || found.member_role === null) return { ok: false, reason: 'invalid', detail: 'the address or the app password is wrong' };
      await throttle.clear(throttleAccount(address), client);
      if (verdict === 'suspended') return { ok: false, reason: 'suspended', detail: `workspace ${found.workspace_id} is suspended by the operator` };
      const now = clock.now();
      if (found.last_used_at === null || now - Number(found.last_used_at) > TOUCH_INTERVAL_MS) await store.touch(work, found.id, now);
      return { ok: true, workspaceId: found.workspace_id, mailboxId: mailbox.id, mailbox: mailbox.address, appPasswordId: found.id, userId: found.user_id };
    },
  };
}
