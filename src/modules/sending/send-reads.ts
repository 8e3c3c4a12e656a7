/**
 * What a send's checks read before it writes: the sender's mailbox with the outbound list entries its recipients could
 * match, whether its domain may send, and which recipients the workspace suppresses. A single send reads them for
 * itself; a batch reads them once for all its messages (`batchReads`): a hundred messages from one mailbox are three
 * statements instead of three hundred, and each message is still judged on its own recipients.
 */
import type { Work } from '../../db/tables.js';
import { chunksOf } from '../../lib/size-chunks.js';
import { candidatesOf } from '../lists/candidates.js';
import { addressVerdicts, matchKeys } from '../lists/list.service.js';
import type { SenderRow, SendingMailStore } from '../mail/sending-mail.store.js';
import type { SendingDomains } from './sending.deps.js';

/** The sending mailbox, and the outbound lists' verdict on each recipient (in the order given). */
export type SenderRead = { mailbox: { id: string; address: string } | undefined; judged: ReturnType<ReturnType<typeof addressVerdicts>['judge']> };

export interface SendReads {
  /** The mailbox of `fromAddress` (undefined: not the workspace's) and the verdicts on `all`. */
  sender(fromAddress: string, all: readonly string[]): Promise<SenderRead>;
  /** Whether the workspace may send from `domain` (hosted, or a verified sending domain). */
  domainAllowed(domain: string): Promise<boolean>;
  /** Which of `all` the workspace suppresses. */
  suppressed(all: readonly string[]): Promise<Set<string>>;
}

export type SendReadStore = Pick<SendingMailStore, 'readSender' | 'suppressedAmong'>;

/**
 * Addresses (or list keys) a shared read takes at once: no more than one send's own read may (50 recipients and their
 * domains), so a batch adds no statement shape of its own (db/prepared.ts keeps one per list length).
 */
const READ_CHUNK = 50;

/** Items in chunks of READ_CHUNK; no items read as one empty chunk (the sender is read even with no recipient). */
function chunks<T>(items: readonly T[]): T[][] {
  const out = chunksOf(items, READ_CHUNK);
  return out.length > 0 ? out : [[]];
}

/** A send's own reads, on `conn` (the pool, or the caller's transaction). */
export function ownReads(mail: SendReadStore, domains: SendingDomains, workspaceId: string, conn: Work): SendReads {
  return {
    async sender(fromAddress, all) {
      const verdicts = addressVerdicts('outbound', all);
      const rows = await mail.readSender(conn, { workspaceId, address: fromAddress, keys: verdicts.keys });
      return { mailbox: mailboxOf(rows), judged: verdicts.judge(candidatesOf(rows)) };
    },
    domainAllowed: (domain) => domains.isAllowedDomain(workspaceId, domain, conn),
    suppressed: (all) => mail.suppressedAmong(conn, workspaceId, all),
  };
}

/**
 * One read of each kind for a batch, on the pool: `recipients` are every message's recipients by its (normalised)
 * sender address. A message's own checks then look up what they need in what was read; a sender or domain no
 * message names is never read.
 */
export function batchReads(mail: SendReadStore, domains: SendingDomains, workspaceId: string, conn: Work, recipients: ReadonlyMap<string, ReadonlySet<string>>): SendReads {
  const senders = new Map<string, Promise<SenderRow[]>>();
  const allowed = new Map<string, Promise<boolean>>();
  let suppressed: Promise<Set<string>> | undefined;
  const readSender = async (fromAddress: string) => {
    const keys = [...new Set([...(recipients.get(fromAddress) ?? [])].flatMap((a) => matchKeys(a.toLowerCase())))];
    // Each chunk's rows carry the mailbox and "is there an allow list"; together they hold every entry that could match.
    const parts = await Promise.all(chunks(keys).map((part) => mail.readSender(conn, { workspaceId, address: fromAddress, keys: part })));
    return parts.flat();
  };
  const readSuppressed = async () => {
    const everyone = [...new Set([...recipients.values()].flatMap((set) => [...set]))];
    const parts = await Promise.all(chunks(everyone).map((part) => mail.suppressedAmong(conn, workspaceId, part)));
    return new Set(parts.flatMap((set) => [...set]));
  };
  return {
    async sender(fromAddress, all) {
      let read = senders.get(fromAddress);
      if (!read) senders.set(fromAddress, (read = readSender(fromAddress)));
      const rows = await read;
      return { mailbox: mailboxOf(rows), judged: addressVerdicts('outbound', all).judge(candidatesOf(rows)) };
    },
    domainAllowed(domain) {
      let read = allowed.get(domain);
      if (!read) allowed.set(domain, (read = domains.isAllowedDomain(workspaceId, domain, conn)));
      return read;
    },
    async suppressed(all) {
      const found = await (suppressed ??= readSuppressed());
      return new Set(all.filter((a) => found.has(a)));
    },
  };
}

function mailboxOf(rows: ReadonlyArray<{ mailbox_id: string | null; mailbox_address: string | null }>): { id: string; address: string } | undefined {
  const found = rows[0];
  return found?.mailbox_id == null || found.mailbox_address == null ? undefined : { id: found.mailbox_id, address: found.mailbox_address };
}
