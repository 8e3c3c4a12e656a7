import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { iso } from '../../lib/clock.js';
import { conflict, forbidden, invalid, notFound } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import { isAdmin, type TenantContext } from '../tenancy/tenancy.types.js';
import { normalizeName, normalizeType, parseRecord, toAnswer, type DnsAnswer, type DnsRecordInput } from './dns-records.js';
import type { SandboxStore } from './sandbox.store.js';
import type { SandboxDnsRecordTable } from './sandbox.table.js';

/** Records a workspace may publish in all (a zone for a few test domains, not a DNS host). */
export const MAX_DNS_RECORDS = 1000;
/** Records in one publish request. */
export const MAX_RECORDS_PER_PUBLISH = 100;
/** CNAMEs followed inside the sandbox's records before the answer stops (a loop ends here too). */
const MAX_CNAME_HOPS = 8;

export interface DnsRecordView {
  name: string;
  type: string;
  value: string;
  created_at: string;
}

/**
 * What the DNS server answers a question with: the published records of the name (`answers` may be empty: the name
 * has records of other types), no such name, or a name the sandbox knows nothing of, for the upstream servers.
 */
export type DnsLookup = { kind: 'published'; answers: DnsAnswer[] } | { kind: 'nxdomain' } | { kind: 'elsewhere' };

/**
 * Names that exist nowhere (RFC 2606, RFC 6761): an unpublished one is answered "no such name" here rather than asked
 * upstream, which would only say the same, slowly or not at all on a machine off line.
 */
const SPECIAL_USE = /(^|\.)(test|example|invalid|localhost)$/;

export interface SandboxDnsService {
  list(tenant: TenantContext): Promise<{ dns_records: DnsRecordView[] }>;
  /** Publish records: each name and type given replaces the workspace's records of that name and type. */
  publish(tenant: TenantContext, input: { records: Array<{ name: string; type: string; value: string }> }): Promise<{ dns_records: DnsRecordView[] }>;
  /** Delete the workspace's records of a name (of one type when given). */
  remove(tenant: TenantContext, name: string, type: string | undefined): Promise<{ ok: true; deleted: number }>;
  /** The DNS server's question: every workspace's records of the name, CNAMEs followed. */
  lookup: (name: string, type: string) => Promise<DnsLookup>;
}

const toView = (row: SandboxDnsRecordTable): DnsRecordView => ({ name: row.name, type: row.type, value: row.value, created_at: iso(row.created_at) });

function requireAdmin(tenant: TenantContext): void {
  if (!isAdmin(tenant.role)) throw forbidden('forbidden_role', 'sandbox DNS records need the owner or admin role');
}

/** The records given, grouped by name and type, each value once, in the order given. */
function groupSets(records: readonly DnsRecordInput[]): Map<string, DnsRecordInput[]> {
  const sets = new Map<string, DnsRecordInput[]>();
  for (const record of records) {
    const key = `${record.name} ${record.type}`;
    const set = sets.get(key) ?? [];
    if (!set.some((r) => r.value === record.value)) set.push(record);
    sets.set(key, set);
  }
  return sets;
}

/** The sandbox's DNS zone: records workspaces publish, and the answers its DNS server gives from them. */
export function createSandboxDnsService({ work, store, clock }: { work: Work; store: Pick<SandboxStore, 'recordsNamed' | 'listRecords' | 'replaceSet' | 'countRecords' | 'deleteRecords'>; clock: Clock }): SandboxDnsService {
  async function follow(name: string, type: string, hops: number): Promise<DnsLookup> {
    const rows = await store.recordsNamed(work, name);
    if (rows.length === 0) return SPECIAL_USE.test(name) ? { kind: 'nxdomain' } : { kind: 'elsewhere' };
    const cname = rows.find((r) => r.type === 'CNAME');
    if (!cname || type === 'CNAME') return { kind: 'published', answers: rows.filter((r) => r.type === type).map(toAnswer) };
    // A target outside the sandbox's records is left to the resolver, which gets the CNAME alone.
    const next = hops < MAX_CNAME_HOPS ? await follow(cname.value, type, hops + 1) : null;
    return { kind: 'published', answers: [toAnswer(cname), ...(next?.kind === 'published' ? next.answers : [])] };
  }

  return {
    async list(tenant) {
      requireAdmin(tenant);
      return { dns_records: (await store.listRecords(work, tenant.workspaceId)).map(toView) };
    },

    async publish(tenant, input) {
      requireAdmin(tenant);
      if (input.records.length === 0) throw invalid('invalid_dns_record', 'records: give at least one record');
      const sets = groupSets(input.records.map(parseRecord));
      const now = clock.now();
      const written: SandboxDnsRecordTable[] = [];
      await work.transaction().execute(async (trx) => {
        for (const set of sets.values()) {
          const { name, type } = set[0]!;
          const rows = set.map((r) => ({ id: newId('dns'), workspace_id: tenant.workspaceId, name, type, value: r.value, created_at: now }));
          await store.replaceSet(trx, tenant.workspaceId, name, type, rows);
          written.push(...rows);
        }
        // Counted after the writes, in their transaction: a refusal leaves the zone as it was.
        if ((await store.countRecords(trx, tenant.workspaceId)) > MAX_DNS_RECORDS) {
          throw conflict('too_many_dns_records', `a workspace publishes at most ${MAX_DNS_RECORDS} sandbox DNS records`);
        }
      });
      return { dns_records: written.map(toView) };
    },

    async remove(tenant, rawName, rawType) {
      requireAdmin(tenant);
      const name = normalizeName(rawName);
      const type = rawType === undefined ? null : normalizeType(rawType);
      const deleted = await store.deleteRecords(work, tenant.workspaceId, name, type);
      if (deleted === 0) throw notFound('dns_record_not_found', `no sandbox DNS record ${name}${type ? ` ${type}` : ''} in this workspace`);
      return { ok: true, deleted };
    },

    lookup: (name, type) => follow(name.toLowerCase().replace(/\.$/, ''), type, 0),
  };
}
