import type { Work } from '../../db/tables.js';
import { isUniqueViolation } from '../../db/dialect.js';
import type { Clock } from '../../lib/clock.js';
import { iso } from '../../lib/clock.js';
import { conflict, forbidden, invalid, notFound } from '../../lib/errors.js';
import type { MailStore } from '../mail/mail.store.js';
import type { MailboxTable } from '../mail/mailbox.table.js';
import { isAdmin, type TenantContext } from '../tenancy/tenancy.types.js';
import { normalizeEmail } from '../tenancy/validation.js';
import { normalizeName } from './dns-records.js';
import type { SandboxStore } from './sandbox.store.js';
import type { SandboxCatchAllTable } from './sandbox.table.js';

/** A catch-all with its mailbox's address. */
type CatchAllRow = SandboxCatchAllTable & { address: string };

export interface CatchAllView {
  domain: string;
  mailbox: string;
  created_at: string;
}

export interface SandboxCatchAllService {
  list(tenant: TenantContext): Promise<{ catch_alls: CatchAllView[] }>;
  /** Mail to an unknown address of the mailbox's domain goes to the mailbox; `created` is false when it replaced the domain's. */
  set(tenant: TenantContext, input: { mailbox: string }): Promise<{ catchAll: CatchAllView; created: boolean }>;
  remove(tenant: TenantContext, domain: string): Promise<{ ok: true }>;
  /** Inbound routing: the mailbox an address with no mailbox of its own goes to, in whichever workspace. */
  find: (address: string) => Promise<Pick<MailboxTable, 'id' | 'workspace_id' | 'address'> | undefined>;
}

const toView = (row: CatchAllRow): CatchAllView => ({ domain: row.domain, mailbox: row.address, created_at: iso(row.created_at) });

function requireAdmin(tenant: TenantContext): void {
  if (!isAdmin(tenant.role)) throw forbidden('forbidden_role', 'catch-all mailboxes need the owner or admin role');
}

/**
 * Catch-all mailboxes (sandbox mode only): one per domain, service-wide, since mail to an unknown address needs one
 * place to go. The domain is the mailbox's, so it is a hosted domain or a verified sending domain of the workspace.
 */
export interface CatchAllDeps {
  work: Work;
  store: Pick<SandboxStore, 'findCatchAll' | 'listCatchAlls' | 'updateCatchAll' | 'insertCatchAll' | 'deleteCatchAll'>;
  /** A catch-all points at a mailbox by id: its id by address and its address are the mail store's. */
  mailboxes: Pick<MailStore, 'mailboxIdByAddress' | 'mailboxAddresses'>;
  clock: Clock;
}

export function createSandboxCatchAllService({ work, store, mailboxes, clock }: CatchAllDeps): SandboxCatchAllService {
  /** The rows with their mailbox's address; one whose mailbox is gone is left out (it goes with its mailbox). */
  async function withAddress(rows: readonly SandboxCatchAllTable[]): Promise<CatchAllRow[]> {
    const addresses = await mailboxes.mailboxAddresses(work, rows);
    return rows.flatMap((r) => {
      const address = addresses.get(r.mailbox_id);
      return address === undefined ? [] : [{ ...r, address }];
    });
  }
  const findCatchAll = async (domain: string): Promise<CatchAllRow | undefined> => {
    const row = await store.findCatchAll(work, domain);
    return row ? (await withAddress([row]))[0] : undefined;
  };

  async function current(tenant: TenantContext, domain: string): Promise<CatchAllView> {
    const row = await findCatchAll(domain);
    if (!row || row.workspace_id !== tenant.workspaceId) throw notFound('catch_all_not_found', `no catch-all for ${domain} in this workspace`);
    return toView(row);
  }

  return {
    async list(tenant) {
      requireAdmin(tenant);
      return { catch_alls: (await withAddress(await store.listCatchAlls(work, tenant.workspaceId))).map(toView) };
    },

    async set(tenant, input) {
      requireAdmin(tenant);
      const address = normalizeEmail(input.mailbox);
      if (!address) throw invalid('invalid_email', `mailbox: '${input.mailbox.slice(0, 300)}' is not a valid email address`);
      const mailbox = await mailboxes.mailboxIdByAddress(work, tenant.workspaceId, address);
      if (!mailbox) throw notFound('mailbox_not_found', `mailbox: no mailbox ${address} in this workspace`);
      const domain = address.slice(address.lastIndexOf('@') + 1);
      const taken = () => conflict('catch_all_taken', `${domain} already has a catch-all mailbox in another workspace`);
      const existing = await store.findCatchAll(work, domain);
      if (existing && existing.workspace_id !== tenant.workspaceId) throw taken();
      if (existing) {
        await store.updateCatchAll(work, tenant.workspaceId, domain, mailbox.id);
        return { catchAll: await current(tenant, domain), created: false };
      }
      try {
        await store.insertCatchAll(work, { domain, workspace_id: tenant.workspaceId, mailbox_id: mailbox.id, created_at: clock.now() });
      } catch (err) {
        // Another workspace set one at the same moment.
        if (isUniqueViolation(err)) throw taken();
        throw err;
      }
      return { catchAll: await current(tenant, domain), created: true };
    },

    async remove(tenant, rawDomain) {
      requireAdmin(tenant);
      const domain = normalizeName(rawDomain, 'domain');
      if (!(await store.deleteCatchAll(work, tenant.workspaceId, domain))) throw notFound('catch_all_not_found', `no catch-all for ${domain} in this workspace`);
      return { ok: true };
    },

    async find(address) {
      const at = address.lastIndexOf('@');
      if (at < 0) return undefined;
      const row = await findCatchAll(address.slice(at + 1).toLowerCase());
      return row ? { id: row.mailbox_id, workspace_id: row.workspace_id, address: row.address } : undefined;
    },
  };
}
