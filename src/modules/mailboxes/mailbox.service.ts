import { isUniqueViolation } from '../../db/dialect.js';
import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { iso } from '../../lib/clock.js';
import { conflict, invalid, notFound } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import type { TenantContext } from '../tenancy/tenancy.types.js';
import { normalizeEmail } from '../tenancy/validation.js';
import type { MailboxRow, ReceivedMailStore } from '../mail/mail.store.js';
import type { MailboxTable } from '../mail/mailbox.table.js';
import { MAX_DESCRIPTION_LENGTH, type DomainPolicy, type MailboxView } from './mailbox.types.js';
import { isReservedLocalPart } from './reserved.js';
import { createComposeAids, type ComposeAids } from './compose-aids.js';

/** Mailboxes, with the composer's aids (signatures, address completion). */
export interface MailboxService extends ComposeAids {
  list(tenant: TenantContext): Promise<MailboxView[]>;
  /** Create a mailbox in a hosted or verified domain (any member of the workspace may); not a reserved address of a hosted domain. */
  create(tenant: TenantContext, input: MailboxInput): Promise<MailboxView>;
  /** The operator's create (`mailroom admin create-mailbox`): reserved addresses of hosted domains too. */
  createAsOperator(workspaceId: string, input: MailboxInput): Promise<MailboxView>;
  get(tenant: TenantContext, address: string): Promise<MailboxView>;
  /** Delete a mailbox and, through foreign keys, everything stored in it. */
  remove(tenant: TenantContext, address: string): Promise<void>;
}

export interface MailboxInput {
  address?: string | undefined;
  description?: string | undefined;
}

export function toMailboxView(row: MailboxRow): MailboxView {
  return {
    address: row.address,
    description: row.description,
    created_at: iso(row.created_at),
    message_count: Number(row.message_count),
    unread_count: Number(row.unread_count),
  };
}

export interface MailboxDeps {
  work: Work;
  clock: Clock;
  /** Which domains may hold mailboxes; `isAllowedDomain` reads (and with `hold`, holds) in the caller's transaction. */
  domains: Pick<DomainPolicy, 'isHostedDomain'> & { isAllowedDomain(workspaceId: string, domain: string, work: Work, hold: boolean): Promise<boolean> };
  store: Pick<ReceivedMailStore, 'createMailbox' | 'listMailboxes' | 'findMailbox' | 'deleteMailbox' | 'listSignatures' | 'setSignature' | 'recentCorrespondents'>;
  /** Whether a workspace exists (the operator names it by id). */
  workspaceExists: (workspaceId: string) => Promise<boolean>;
  /** The workspace's quota of mailboxes (`QuotaService.checkMailboxes`), checked in the creating transaction. */
  quota: { checkMailboxes(trx: Work, workspaceId: string): Promise<void> };
  /** Called after a mailbox is deleted (its app passwords went with it): the workspace's mail-client sessions are checked. */
  removed?: (workspaceId: string) => void;
}

export function createMailboxService({ work, clock, domains, store, workspaceExists, quota, removed }: MailboxDeps): MailboxService {
  async function find(tenant: TenantContext, addressInput: string): Promise<MailboxRow> {
    const address = normalizeEmail(addressInput);
    const row = address ? await store.findMailbox(work, tenant.workspaceId, address) : undefined;
    if (!row) throw notFound('mailbox_not_found', `no mailbox ${addressInput}`);
    return row;
  }

  async function insert(workspaceId: string, input: MailboxInput, operator: boolean): Promise<MailboxView> {
    if (input.address === undefined) throw invalid('invalid_request', 'address is required');
    const address = normalizeEmail(input.address);
    if (!address) throw invalid('invalid_address', `'${input.address}' is not a valid email address`);
    const description = (input.description ?? '').trim();
    if (description.length > MAX_DESCRIPTION_LENGTH) {
      throw invalid('invalid_request', `description must be at most ${MAX_DESCRIPTION_LENGTH} characters`);
    }
    const at = address.lastIndexOf('@');
    const domain = address.slice(at + 1);
    // In the workspace's own verified domain the role addresses are its own to create.
    if (!operator && domains.isHostedDomain(domain) && isReservedLocalPart(address.slice(0, at))) {
      throw invalid('address_reserved', `${address} is a reserved address of the hosted domain ${domain}; only the operator can create it`);
    }
    const now = clock.now();
    const row: MailboxTable = { id: newId('mbx'), workspace_id: workspaceId, address, description, created_at: now, updated_at: now };
    try {
      await work.transaction().execute(async (trx) => {
        // The domain is held until the mailbox is stored, so a sending domain's delete cannot pass it by.
        if (!(await domains.isAllowedDomain(workspaceId, domain, trx, true))) {
          throw invalid('domain_not_allowed', `${domain} is neither a hosted domain nor a verified sending domain of this workspace`);
        }
        // The operator, who sets the quotas, may create past them (a reserved address, a migration).
        if (!operator) await quota.checkMailboxes(trx, workspaceId);
        await store.createMailbox(trx, row);
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict('address_taken', `the address ${address} is already in use`);
      throw err;
    }
    return toMailboxView({ ...row, message_count: 0, unread_count: 0 });
  }

  return {
    ...createComposeAids({ work, clock, store }),

    async list(tenant) {
      return (await store.listMailboxes(work, tenant.workspaceId)).map(toMailboxView);
    },

    create: (tenant, input) => insert(tenant.workspaceId, input, false),

    async createAsOperator(workspaceId, input) {
      if (!(await workspaceExists(workspaceId))) throw notFound('workspace_not_found', `no workspace ${workspaceId}`);
      return insert(workspaceId, input, true);
    },

    async get(tenant, address) {
      return toMailboxView(await find(tenant, address));
    },

    async remove(tenant, address) {
      const row = await find(tenant, address);
      await store.deleteMailbox(work, tenant.workspaceId, row.id);
      removed?.(tenant.workspaceId);
    },
  };
}
