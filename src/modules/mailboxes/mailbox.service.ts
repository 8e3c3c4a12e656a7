import type { Db } from '../../db/database.js';
import { isUniqueViolation } from '../../db/dialect.js';
import type { Clock } from '../../lib/clock.js';
import { iso } from '../../lib/clock.js';
import { conflict, invalid, notFound } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import type { TenantContext } from '../tenancy/tenancy.types.js';
import { asWork } from '../../db/tables.js';
import type { TenancyStore } from '../tenancy/tenancy.store.js';
import { normalizeEmail } from '../tenancy/validation.js';
import type { MailboxTable } from './mailbox.table.js';
import { mailboxRepository as repo, type MailboxRow } from './mailbox.repository.js';
import { MAX_DESCRIPTION_LENGTH, type DomainPolicy, type MailboxView } from './mailbox.types.js';
import { isReservedLocalPart } from './reserved.js';

export interface MailboxService {
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

export function createMailboxService({ db, clock, domains, tenancy }: { db: Db; clock: Clock; domains: DomainPolicy; tenancy: Pick<TenancyStore, 'findWorkspace'> }): MailboxService {
  async function find(tenant: TenantContext, addressInput: string): Promise<MailboxRow> {
    const address = normalizeEmail(addressInput);
    const row = address ? await repo.findByAddress(db, tenant.workspaceId, address) : undefined;
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
      await db.transaction().execute(async (trx) => {
        // The domain is held until the mailbox is stored, so a sending domain's delete cannot pass it by.
        if (!(await domains.isAllowedDomain(workspaceId, domain, asWork(trx), true))) {
          throw invalid('domain_not_allowed', `${domain} is neither a hosted domain nor a verified sending domain of this workspace`);
        }
        await repo.insert(trx, row);
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict('address_taken', `the address ${address} is already in use`);
      throw err;
    }
    return toMailboxView({ ...row, message_count: 0, unread_count: 0 });
  }

  return {
    async list(tenant) {
      return (await repo.list(db, tenant.workspaceId)).map(toMailboxView);
    },

    create: (tenant, input) => insert(tenant.workspaceId, input, false),

    async createAsOperator(workspaceId, input) {
      if (!(await tenancy.findWorkspace(asWork(db), workspaceId))) throw notFound('workspace_not_found', `no workspace ${workspaceId}`);
      return insert(workspaceId, input, true);
    },

    async get(tenant, address) {
      return toMailboxView(await find(tenant, address));
    },

    async remove(tenant, address) {
      const row = await find(tenant, address);
      await repo.delete(db, tenant.workspaceId, row.id);
    },
  };
}
