import type { Db } from '../../db/database.js';
import { isUniqueViolation } from '../../db/dialect.js';
import type { Clock } from '../../lib/clock.js';
import { iso } from '../../lib/clock.js';
import { conflict, invalid, notFound } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import type { TenantContext } from '../tenancy/tenancy.types.js';
import { normalizeEmail } from '../tenancy/validation.js';
import type { MailboxTable } from './mailbox.table.js';
import { mailboxRepository as repo, type MailboxRow } from './mailbox.repository.js';
import { MAX_DESCRIPTION_LENGTH, type DomainPolicy, type MailboxView } from './mailbox.types.js';

export interface MailboxService {
  list(tenant: TenantContext): Promise<MailboxView[]>;
  /** Create a mailbox in a hosted or verified domain (any member of the workspace may). */
  create(tenant: TenantContext, input: { address?: string | undefined; description?: string | undefined }): Promise<MailboxView>;
  get(tenant: TenantContext, address: string): Promise<MailboxView>;
  /** Delete a mailbox and, through foreign keys, everything stored in it. */
  remove(tenant: TenantContext, address: string): Promise<void>;
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

export function createMailboxService({ db, clock, domains }: { db: Db; clock: Clock; domains: DomainPolicy }): MailboxService {
  async function find(tenant: TenantContext, addressInput: string): Promise<MailboxRow> {
    const address = normalizeEmail(addressInput);
    const row = address ? await repo.findByAddress(db, tenant.workspaceId, address) : undefined;
    if (!row) throw notFound('mailbox_not_found', `no mailbox ${addressInput}`);
    return row;
  }

  return {
    async list(tenant) {
      return (await repo.list(db, tenant.workspaceId)).map(toMailboxView);
    },

    async create(tenant, input) {
      if (input.address === undefined) throw invalid('invalid_request', 'address is required');
      const address = normalizeEmail(input.address);
      if (!address) throw invalid('invalid_address', `'${input.address}' is not a valid email address`);
      const description = (input.description ?? '').trim();
      if (description.length > MAX_DESCRIPTION_LENGTH) {
        throw invalid('invalid_request', `description must be at most ${MAX_DESCRIPTION_LENGTH} characters`);
      }
      const domain = address.slice(address.lastIndexOf('@') + 1);
      if (!(await domains.isAllowedDomain(tenant.workspaceId, domain))) {
        throw invalid('domain_not_allowed', `${domain} is neither a hosted domain nor a verified sending domain of this workspace`);
      }
      const now = clock.now();
      const row: MailboxTable = {
        id: newId('mbx'),
        workspace_id: tenant.workspaceId,
        address,
        description,
        created_at: now,
        updated_at: now,
      };
      try {
        await repo.insert(db, row);
      } catch (err) {
        if (isUniqueViolation(err)) throw conflict('address_taken', `the address ${address} is already in use`);
        throw err;
      }
      return toMailboxView({ ...row, message_count: 0, unread_count: 0 });
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
