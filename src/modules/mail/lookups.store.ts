import { tablesOf, type Work } from '../../db/tables.js';
import type { MailTables } from './mail.table.js';

/** A sent message as its sender's API shows it: the outbound copy's delivery state, the message and its mailbox. */
export interface SentMessageRow {
  status: MailTables['outbound']['status'];
  attempts_json: string;
  last_error: string | null;
  smtp_response: string | null;
  created_at: number;
  updated_at: number;
  subject: string;
  to_json: string;
  from_mailbox: string;
  delivery_notification: number;
}

/**
 * What other modules look up in the mail store: a mailbox's id or address (tokens, catch-alls and sending domains
 * point at mailboxes) and a sent message's state. Reads only; each one statement.
 */
export interface MailLookups {
  /** The addresses of these mailboxes (each named with its workspace), by id; a mailbox gone is left out. */
  mailboxAddresses(work: Work, refs: ReadonlyArray<{ workspace_id: string; mailbox_id: string }>): Promise<Map<string, string>>;
  /** The workspace's mailboxes in a domain (not in its subdomains): up to `limit` addresses in order, and how many in all. */
  mailboxesInDomain(work: Work, workspaceId: string, domain: string, limit: number): Promise<{ addresses: string[]; count: number }>;
  /** The workspace's sent message, with its delivery state and sender mailbox; undefined when it has none. */
  sentMessage(work: Work, workspaceId: string, messageId: string): Promise<SentMessageRow | undefined>;
}

export function createMailLookups(): MailLookups {
  const of = (work: Work) => tablesOf<MailTables>(work);
  return {
    async mailboxAddresses(work, refs) {
      if (refs.length === 0) return new Map();
      // Each mailbox is read within its own workspace, as every tenant read is.
      const rows = await of(work)
        .selectFrom('mailboxes')
        .select(['id', 'address'])
        .where((eb) => eb.or(refs.map((r) => eb.and([eb('workspace_id', '=', r.workspace_id), eb('id', '=', r.mailbox_id)]))))
        .execute();
      return new Map(rows.map((r) => [r.id, r.address]));
    },

    async mailboxesInDomain(work, workspaceId, domain, limit) {
      // Domain names hold no LIKE wildcards (letters, digits, hyphens and dots only), so the pattern is exact.
      const inDomain = of(work).selectFrom('mailboxes').where('workspace_id', '=', workspaceId).where('address', 'like', `%@${domain}`);
      const [rows, count] = await Promise.all([
        inDomain.select('address').orderBy('address').limit(limit).execute(),
        inDomain.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
      ]);
      return { addresses: rows.map((r) => r.address), count: Number(count.n) };
    },

    sentMessage: (work, workspaceId, messageId) =>
      of(work)
        .selectFrom('outbound as o')
        .innerJoin('messages as m', (join) => join.onRef('m.id', '=', 'o.message_id').onRef('m.workspace_id', '=', 'o.workspace_id'))
        .innerJoin('mailboxes as b', (join) => join.onRef('b.id', '=', 'm.mailbox_id').onRef('b.workspace_id', '=', 'm.workspace_id'))
        .select(['o.status', 'o.attempts_json', 'o.last_error', 'o.smtp_response', 'o.created_at', 'o.updated_at', 'o.delivery_notification', 'm.subject', 'm.to_json', 'b.address as from_mailbox'])
        .where('o.workspace_id', '=', workspaceId)
        .where('o.message_id', '=', messageId)
        .executeTakeFirst(),
  };
}
