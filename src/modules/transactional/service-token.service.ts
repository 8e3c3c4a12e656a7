import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { iso } from '../../lib/clock.js';
import { forbidden, invalid, notFound, unauthorized } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import { hashToken, newToken } from '../../lib/secrets.js';
import type { DomainStore } from '../domains/domain.store.js';
import type { MailStore } from '../mail/mail.store.js';
import { TOUCH_INTERVAL_MS } from '../tenancy/auth.service.js';
import { actorOf, isAdmin, type TenantContext } from '../tenancy/tenancy.types.js';
import { AUDIT_ACTIONS, type AuditAction } from '../audit/audit.actions.js';
import type { AuditLog } from '../audit/audit.service.js';
import { normalizeEmail } from '../tenancy/validation.js';
import { credentialVerdict, workspaceSuspended } from '../tenancy/workspace-state.js';
import type { ServiceTokenStore } from './service-token.store.js';
import { SERVICE_TOKEN_SCOPES, type ServiceTokenScope, type ServiceTokenTable } from './transactional.table.js';

/** A token with the address of its mailbox, as views and authentication need it. */
type ServiceTokenRow = ServiceTokenTable & { mailbox: string };

export const MAX_TOKEN_NAME_LENGTH = 100;

export interface ServiceTokenView {
  token_id: string;
  name: string;
  scope: ServiceTokenScope;
  domain_id: string;
  mailbox: string;
  created_at: string;
  last_used_at: string | null;
}

/** Create and rotate answer the plaintext credential, that once. */
export interface ServiceTokenWithSecret extends ServiceTokenView {
  token: string;
}

/** Who calls the transactional surface: one token, bound to one workspace, domain and mailbox. */
export interface ServiceTokenContext {
  tokenId: string;
  workspaceId: string;
  domainId: string;
  mailboxId: string;
  mailbox: string;
  scope: ServiceTokenScope;
}

export interface CreateServiceTokenInput {
  name?: string | undefined;
  domain_id: string;
  mailbox: string;
  scope?: string | undefined;
}

export interface ServiceTokenService {
  list(tenant: TenantContext): Promise<{ service_tokens: ServiceTokenView[] }>;
  get(tenant: TenantContext, tokenId: string): Promise<ServiceTokenView>;
  create(tenant: TenantContext, input: CreateServiceTokenInput): Promise<ServiceTokenWithSecret>;
  /** A new credential for the same token; the old one stops working at once, idempotency keys stay. */
  rotate(tenant: TenantContext, tokenId: string): Promise<ServiceTokenWithSecret>;
  delete(tenant: TenantContext, tokenId: string): Promise<void>;
  /** Resolve `Authorization: Bearer mst_…`; 401 for anything else. */
  authenticate(credential: string): Promise<ServiceTokenContext>;
}

function toView(row: ServiceTokenRow): ServiceTokenView {
  return {
    token_id: row.id,
    name: row.name,
    scope: row.scope,
    domain_id: row.domain_id,
    mailbox: row.mailbox,
    created_at: iso(row.created_at),
    last_used_at: row.last_used_at === null ? null : iso(row.last_used_at),
  };
}

function requireAdmin(tenant: TenantContext): void {
  if (!isAdmin(tenant.role)) throw forbidden('forbidden_role', 'service tokens need the owner or admin role');
}

export interface ServiceTokenDeps {
  work: Work;
  store: Pick<ServiceTokenStore, 'insert' | 'list' | 'find' | 'findByHash' | 'rotate' | 'touch' | 'delete'>;
  /** The token's sending domain, checked at create. */
  domains: Pick<DomainStore, 'find'>;
  /** A token points at a mailbox by id: its address is the mail store's. */
  mailboxes: Pick<MailStore, 'mailboxIdByAddress' | 'mailboxAddresses'>;
  clock: Clock;
  /** The operator's reason for a workspace's suspension, read only to word a refusal. */
  suspensionReason?: (workspaceId: string) => Promise<string | null>;
  /** Tokens created, rotated and revoked, in the audit log (never the token). */
  audit: Pick<AuditLog, 'record'>;
}

export function createServiceTokenService({ work, store, domains, mailboxes, clock, suspensionReason, audit }: ServiceTokenDeps): ServiceTokenService {
  const record = (trx: Work, tenant: TenantContext, action: AuditAction, tokenId: string, details?: Record<string, unknown>) =>
    audit.record(trx, { workspaceId: tenant.workspaceId, action, actor: actorOf(tenant), target: { kind: 'service_token', id: tokenId }, details });

  /** The rows with their mailbox's address; a token whose mailbox is gone is left out (it goes with its mailbox). */
  async function withMailbox(rows: readonly ServiceTokenTable[]): Promise<ServiceTokenRow[]> {
    const addresses = await mailboxes.mailboxAddresses(work, rows);
    return rows.flatMap((r) => {
      const mailbox = addresses.get(r.mailbox_id);
      return mailbox === undefined ? [] : [{ ...r, mailbox }];
    });
  }
  const one = async (row: ServiceTokenTable | undefined): Promise<ServiceTokenRow | undefined> => (row ? (await withMailbox([row]))[0] : undefined);

  async function find(tenant: TenantContext, tokenId: string): Promise<ServiceTokenRow> {
    const row = await one(await store.find(work, tenant.workspaceId, tokenId));
    if (!row) throw notFound('service_token_not_found', `no service token ${tokenId}`);
    return row;
  }

  return {
    async list(tenant) {
      requireAdmin(tenant);
      return { service_tokens: (await withMailbox(await store.list(work, tenant.workspaceId))).map(toView) };
    },

    async get(tenant, tokenId) {
      requireAdmin(tenant);
      return toView(await find(tenant, tokenId));
    },

    async create(tenant, input) {
      requireAdmin(tenant);
      const scope = input.scope ?? 'message:send';
      if (!(SERVICE_TOKEN_SCOPES as readonly string[]).includes(scope)) {
        throw invalid('invalid_scope', `scope '${scope}' is not supported; the only scope is message:send`);
      }
      const name = (input.name ?? '').trim();
      if (name.length > MAX_TOKEN_NAME_LENGTH) throw invalid('invalid_request', `name must be at most ${MAX_TOKEN_NAME_LENGTH} characters`);
      // A domain of another workspace is indistinguishable from none (another tenant's resources are never revealed), and both are a bad body.
      const domain = await domains.find(work, tenant.workspaceId, input.domain_id);
      if (!domain) throw invalid('domain_not_found', `no sending domain ${input.domain_id} in this workspace`);
      if (domain.status !== 'verified') throw invalid('domain_not_verified', `${domain.domain} is not verified yet; verify it before creating a token for it`);
      const address = normalizeEmail(input.mailbox);
      const mailbox = address ? await mailboxes.mailboxIdByAddress(work, tenant.workspaceId, address) : undefined;
      if (!mailbox || !address) throw invalid('mailbox_not_found', `no mailbox ${input.mailbox} in this workspace`);
      if (address.slice(address.lastIndexOf('@') + 1) !== domain.domain) {
        throw invalid('mailbox_not_in_domain', `mailbox ${address} is not in the domain ${domain.domain}`);
      }
      const token = newToken('mst');
      const row = {
        id: newId('tok'),
        workspace_id: tenant.workspaceId,
        name,
        scope: scope as ServiceTokenScope,
        domain_id: domain.id,
        mailbox_id: mailbox.id,
        token_hash: hashToken(token),
        created_at: clock.now(),
        rotated_at: null,
        last_used_at: null,
      };
      await work.transaction().execute(async (trx) => {
        await store.insert(trx, row);
        await record(trx, tenant, AUDIT_ACTIONS.serviceTokenCreated, row.id, { name, scope: row.scope, domain: domain.domain, mailbox: address });
      });
      return { ...toView({ ...row, mailbox: address }), token };
    },

    async rotate(tenant, tokenId) {
      requireAdmin(tenant);
      const row = await find(tenant, tokenId);
      const token = newToken('mst');
      await work.transaction().execute(async (trx) => {
        if (!(await store.rotate(trx, tenant.workspaceId, tokenId, hashToken(token), clock.now()))) {
          throw notFound('service_token_not_found', `no service token ${tokenId}`);
        }
        await record(trx, tenant, AUDIT_ACTIONS.serviceTokenRotated, tokenId, { name: row.name, mailbox: row.mailbox });
      });
      return { ...toView(row), token };
    },

    async delete(tenant, tokenId) {
      requireAdmin(tenant);
      await work.transaction().execute(async (trx) => {
        if (!(await store.delete(trx, tenant.workspaceId, tokenId))) throw notFound('service_token_not_found', `no service token ${tokenId}`);
        await record(trx, tenant, AUDIT_ACTIONS.serviceTokenRevoked, tokenId);
      });
    },

    async authenticate(credential) {
      if (!credential.startsWith('mst_')) throw unauthorized('invalid_credential', 'the transactional API takes a service token (mst_…)');
      const found = await store.findByHash(work, hashToken(credential));
      const verdict = credentialVerdict(found?.workspace_state ?? null);
      if (verdict === 'suspended') throw workspaceSuspended(found!.workspace_id, (await suspensionReason?.(found!.workspace_id)) ?? null);
      // A workspace being deleted is gone: its tokens are unknown from the moment it was marked.
      const row = verdict === 'gone' ? undefined : await one(found);
      if (!row) throw unauthorized('invalid_credential', 'the service token is not valid, or has been rotated or revoked');
      const now = clock.now();
      if (row.last_used_at === null || now - row.last_used_at > TOUCH_INTERVAL_MS) await store.touch(work, row.workspace_id, row.id, now);
      return { tokenId: row.id, workspaceId: row.workspace_id, domainId: row.domain_id, mailboxId: row.mailbox_id, mailbox: row.mailbox, scope: row.scope };
    },
  };
}
