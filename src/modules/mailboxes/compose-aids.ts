import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { iso } from '../../lib/clock.js';
import { invalid, notFound } from '../../lib/errors.js';
import type { ReceivedMailStore } from '../mail/mail.store.js';
import type { TenantContext } from '../tenancy/tenancy.types.js';
import { normalizeEmail } from '../tenancy/validation.js';

/** What the web app's composer asks of the mailboxes: their signatures and the addresses the workspace mails with. */
export interface ComposeAids {
  signatures(tenant: TenantContext): Promise<SignatureView[]>;
  /** Set a mailbox's signature; `""` removes it. */
  setSignature(tenant: TenantContext, address: string, html: string): Promise<SignatureView>;
  contacts(tenant: TenantContext, query: string, limit: number): Promise<ContactView[]>;
}

export interface SignatureView {
  mailbox: string;
  html: string;
  updated_at: string;
}

export interface ContactView {
  address: string;
  name: string | null;
}

export const MAX_SIGNATURE_LENGTH = 10_000;
/** How many of the newest messages completion looks through (decision 724). */
export const CONTACT_WINDOW = 1000;

export interface ComposeAidsDeps {
  work: Work;
  clock: Clock;
  store: Pick<ReceivedMailStore, 'listSignatures' | 'setSignature' | 'recentCorrespondents' | 'listMailboxes'>;
}

interface Party {
  name?: string | null;
  address?: string | null;
}

function parties(json: string): Party[] {
  try {
    // The columns hold what the mail store wrote: an address object (from) or a list of them (to, cc).
    const value = JSON.parse(json) as Party | Party[] | null;
    if (Array.isArray(value)) return value;
    return value !== null && typeof value === 'object' ? [value] : [];
  } catch {
    return [];
  }
}

/** Whether `prefix` starts the address, its local part's words or a word of the name. */
function matches(contact: ContactView, prefix: string): boolean {
  if (contact.address.startsWith(prefix)) return true;
  const words = `${contact.name ?? ''} ${contact.address.split('@')[0] ?? ''}`.toLowerCase().split(/[\s._+-]+/);
  return words.some((w) => w.startsWith(prefix));
}

export function createComposeAids({ work, clock, store }: ComposeAidsDeps): ComposeAids {
  return {
    async signatures(tenant) {
      const rows = await store.listSignatures(work, tenant.workspaceId);
      return rows.map((r) => ({ mailbox: r.address, html: r.signature_html ?? '', updated_at: iso(r.updated_at) }));
    },

    async setSignature(tenant, addressInput, html) {
      if (html.length > MAX_SIGNATURE_LENGTH) throw invalid('invalid_request', `html must be at most ${MAX_SIGNATURE_LENGTH} characters`);
      const address = normalizeEmail(addressInput);
      const now = clock.now();
      const kept = html.trim() === '' ? null : html;
      if (!address || !(await store.setSignature(work, tenant.workspaceId, address, kept, now))) {
        throw notFound('mailbox_not_found', `no mailbox ${addressInput} in this workspace`);
      }
      return { mailbox: address, html: kept ?? '', updated_at: iso(now) };
    },

    async contacts(tenant, query, limit) {
      const prefix = query.trim().toLowerCase();
      const own = new Set((await store.listMailboxes(work, tenant.workspaceId)).map((m) => m.address));
      const found = new Map<string, ContactView>();
      for (const row of await store.recentCorrespondents(work, tenant.workspaceId, CONTACT_WINDOW)) {
        for (const party of [...parties(row.from_json), ...parties(row.to_json), ...parties(row.cc_json)]) {
          const address = party.address?.toLowerCase();
          if (!address || own.has(address) || found.has(address)) continue;
          const contact = { address, name: party.name?.trim() || null };
          if (matches(contact, prefix)) found.set(address, contact);
          if (found.size >= limit) return [...found.values()];
        }
      }
      return [...found.values()];
    },
  };
}
