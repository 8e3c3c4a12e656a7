import ipaddr from 'ipaddr.js';
import type { Work } from '../../db/tables.js';
import { isUniqueViolation } from '../../db/dialect.js';
import type { Clock } from '../../lib/clock.js';
import { iso } from '../../lib/clock.js';
import { conflict, invalid, notFound } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import { actorOf, type TenantContext } from '../tenancy/tenancy.types.js';
import { AUDIT_ACTIONS } from '../audit/audit.actions.js';
import type { AuditLog } from '../audit/audit.service.js';
import { normalizeEmail } from '../tenancy/validation.js';
import type { Candidates, ListStore } from './list.store.js';
import { LIST_DIRECTIONS, LIST_TYPES, type EntryKind, type ListDirection, type ListEntryTable, type ListType } from './list.table.js';

export const MAX_REASON_LENGTH = 500;

export interface ListEntryView {
  direction: ListDirection;
  list_type: ListType;
  entry: string;
  kind: EntryKind;
  reason: string | null;
  created_at: string;
}

/** What the lists say about one sender/recipient; `allowed`: an allow entry matched (it wins over content scoring too). */
export type ListVerdict = { decision: 'pass'; allowed?: true } | { decision: 'refuse'; reason: string };

const DOMAIN = /^(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9])?\.)+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

function toView(row: ListEntryTable): ListEntryView {
  return { direction: row.direction, list_type: row.list_type, entry: row.entry, kind: row.kind, reason: row.reason, created_at: iso(row.created_at) };
}

function parseDirection(value: string): ListDirection {
  const direction = LIST_DIRECTIONS.find((d) => d === value);
  if (!direction) throw invalid('invalid_direction', `direction must be ${LIST_DIRECTIONS.join(' or ')}`);
  return direction;
}

function parseListType(value: string): ListType {
  const listType = LIST_TYPES.find((t) => t === value);
  if (!listType) throw invalid('invalid_list_type', `list_type must be ${LIST_TYPES.join(' or ')}`);
  return listType;
}

/** Normalise an entry and tell what it is; IPs and CIDRs only for inbound lists. */
export function parseEntry(direction: ListDirection, raw: string): { entry: string; kind: EntryKind } {
  const value = raw.trim().toLowerCase();
  if (value.includes('@')) {
    const address = normalizeEmail(value);
    if (!address) throw invalid('invalid_entry', `'${raw}' is not a valid email address`);
    return { entry: address, kind: 'address' };
  }
  const isCidr = value.includes('/');
  if (isCidr ? ipaddr.isValidCIDR(value) : ipaddr.isValid(value)) {
    if (direction !== 'inbound') throw invalid('invalid_entry', 'IP addresses and CIDRs are for inbound lists only');
    if (isCidr) {
      const [address, bits] = ipaddr.parseCIDR(value);
      const network = address.kind() === 'ipv4' ? ipaddr.IPv4.networkAddressFromCIDR(value) : ipaddr.IPv6.networkAddressFromCIDR(value);
      return { entry: `${network.toString()}/${bits}`, kind: 'ip' };
    }
    return { entry: ipaddr.process(value).toString(), kind: 'ip' };
  }
  if (DOMAIN.test(value) && !/^[\d.]+$/.test(value)) return { entry: value, kind: 'domain' };
  throw invalid('invalid_entry', `'${raw}' is not an address, a domain${direction === 'inbound' ? ', an IP or a CIDR' : ''}`);
}

/** The address itself, its domain and each parent domain: the entries that would match it. */
export function matchKeys(address: string | null): string[] {
  if (!address) return [];
  const at = address.lastIndexOf('@');
  const domain = at === -1 ? address : address.slice(at + 1);
  const labels = domain.split('.');
  const keys = at === -1 ? [] : [address];
  for (let i = 0; i < labels.length; i += 1) keys.push(labels.slice(i).join('.'));
  return keys;
}

function ipMatches(entry: string, ip: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  try {
    if (entry.includes('/')) {
      const [range, bits] = ipaddr.parseCIDR(entry);
      return range.kind() === ip.kind() && ip.match(range, bits);
    }
    const single = ipaddr.parse(entry);
    return single.kind() === ip.kind() && single.toNormalizedString() === ip.toNormalizedString();
  } catch {
    return false;
  }
}

/** The rules of `ListService.evaluate` over the entries that could match (an allow match wins, a block refuses, a non-empty allow list refuses the rest). */
function decide(direction: ListDirection, entries: ReadonlyArray<Pick<ListEntryTable, 'list_type' | 'entry' | 'kind'>>, hasAllow: boolean, keys: readonly string[], ip: ipaddr.IPv4 | ipaddr.IPv6 | null): ListVerdict {
  const matching = entries.filter((e) => (e.kind === 'ip' ? ip !== null && ipMatches(e.entry, ip) : keys.includes(e.entry)));
  if (matching.some((e) => e.list_type === 'allow')) return { decision: 'pass', allowed: true };
  const blocked = matching.find((e) => e.list_type === 'block');
  if (blocked) return { decision: 'refuse', reason: `${blocked.entry} is on the ${direction} block list` };
  if (hasAllow) return { decision: 'refuse', reason: `not on the ${direction} allow list` };
  return { decision: 'pass' };
}

/**
 * `ListService.evaluate` for each of several addresses (no IP): the recipients of a send, judged from one read.
 * `keys` is what to read (`candidatesSelect` in list.store.ts), `judge` the verdicts, in the addresses' order.
 */
export function addressVerdicts(direction: ListDirection, addresses: readonly string[]): { keys: string[]; judge(candidates: Candidates): ListVerdict[] } {
  const keysOf = addresses.map((address) => matchKeys(address.toLowerCase()));
  return {
    keys: [...new Set(keysOf.flat())],
    judge: ({ entries, hasAllow }) => keysOf.map((keys) => decide(direction, entries, hasAllow, keys, null)),
  };
}

/**
 * `ListService.evaluate` split in two: `keys` is what to read (`candidatesSelect`), `judge` the verdict from what was
 * read. A RCPT's check reads the candidates in the statement that finds the recipient's mailbox.
 */
export function subjectVerdict(direction: ListDirection, subject: { address?: string | null; ip?: string | null }): { keys: string[]; judge(candidates: Candidates): ListVerdict } {
  const keys = matchKeys(subject.address?.toLowerCase() ?? null);
  const ip = subject.ip && ipaddr.isValid(subject.ip) ? ipaddr.process(subject.ip) : null;
  return { keys, judge: ({ entries, hasAllow }) => decide(direction, entries, hasAllow, keys, ip) };
}

export interface ListService {
  list(tenant: TenantContext, direction: string, listType: string, page: { limit: number; offset: number }): Promise<{ entries: ListEntryView[]; total: number; limit: number; offset: number }>;
  add(tenant: TenantContext, direction: string, listType: string, input: { entry: string; reason?: string | undefined }): Promise<ListEntryView>;
  get(tenant: TenantContext, direction: string, listType: string, entry: string): Promise<ListEntryView>;
  /** Remove an entry; returns it as stored (normalised). */
  remove(tenant: TenantContext, direction: string, listType: string, entry: string): Promise<ListEntryView>;
  /**
   * Judge a peer against a workspace's lists: an allow match wins over a block match; a block match
   * refuses; a non-empty allow list refuses everything it does not match.
   */
  evaluate(work: Work, workspaceId: string, direction: ListDirection, subject: { address?: string | null; ip?: string | null }): Promise<ListVerdict>;
}

export function createListService({ work, store, clock, audit }: { work: Work; store: Pick<ListStore, 'find' | 'list' | 'count' | 'insert' | 'delete' | 'candidates'>; clock: Clock; audit: Pick<AuditLog, 'record'> }): ListService {
  const record = (trx: Work, tenant: TenantContext, action: (typeof AUDIT_ACTIONS)['listEntryAdded' | 'listEntryRemoved'], row: ListEntryTable) =>
    audit.record(trx, {
      workspaceId: tenant.workspaceId,
      action,
      actor: actorOf(tenant),
      target: { kind: 'list_entry', id: row.id },
      details: { direction: row.direction, list_type: row.list_type, entry: row.entry, kind: row.kind, reason: row.reason },
    });

  async function findOrThrow(tenant: TenantContext, direction: string, listType: string, rawEntry: string): Promise<ListEntryTable> {
    const d = parseDirection(direction);
    const t = parseListType(listType);
    let entry: string;
    try {
      entry = parseEntry(d, rawEntry).entry;
    } catch {
      throw notFound('entry_not_found', `no ${d} ${t} entry '${rawEntry}'`);
    }
    const row = await store.find(work, tenant.workspaceId, d, t, entry);
    if (!row) throw notFound('entry_not_found', `no ${d} ${t} entry '${rawEntry}'`);
    return row;
  }

  return {
    async list(tenant, direction, listType, page) {
      const d = parseDirection(direction);
      const t = parseListType(listType);
      const [rows, total] = await Promise.all([store.list(work, tenant.workspaceId, d, t, page.limit, page.offset), store.count(work, tenant.workspaceId, d, t)]);
      return { entries: rows.map(toView), total, limit: page.limit, offset: page.offset };
    },

    async add(tenant, direction, listType, input) {
      const d = parseDirection(direction);
      const t = parseListType(listType);
      const { entry, kind } = parseEntry(d, input.entry);
      const reason = input.reason?.trim() || null;
      if (reason && reason.length > MAX_REASON_LENGTH) throw invalid('invalid_request', `reason must be at most ${MAX_REASON_LENGTH} characters`);
      const row: ListEntryTable = { id: newId('lst'), workspace_id: tenant.workspaceId, direction: d, list_type: t, entry, kind, reason, created_at: clock.now() };
      try {
        await work.transaction().execute(async (trx) => {
          await store.insert(trx, row);
          await record(trx, tenant, AUDIT_ACTIONS.listEntryAdded, row);
        });
      } catch (err) {
        if (isUniqueViolation(err)) throw conflict('entry_exists', `'${entry}' is already on the ${d} ${t} list`);
        throw err;
      }
      return toView(row);
    },

    async get(tenant, direction, listType, entry) {
      return toView(await findOrThrow(tenant, direction, listType, entry));
    },

    async remove(tenant, direction, listType, entry) {
      const row = await findOrThrow(tenant, direction, listType, entry);
      await work.transaction().execute(async (trx) => {
        await store.delete(trx, tenant.workspaceId, row.id);
        await record(trx, tenant, AUDIT_ACTIONS.listEntryRemoved, row);
      });
      return toView(row);
    },

    async evaluate(conn, workspaceId, direction, subject) {
      const verdict = subjectVerdict(direction, subject);
      return verdict.judge(await store.candidates(conn, workspaceId, direction, verdict.keys));
    },
  };
}
