/**
 * What a bounce or complaint arriving at a return path reads and writes: the outbound copy it is about (its
 * recipients and return path), and the suppressions it files, in the transaction that stores the report's events.
 */
import type { Work } from '../../db/tables.js';
import { mailDb } from './message.store.js';

/** An outbound message as a report to its return path needs it. */
export interface SentMessage {
  workspace_id: string;
  /** The return path it was sent with (that of its first recipient). */
  mail_from: string;
  /** JSON list of its recipients (`{ address }`), in the order their return paths number them. */
  recipients_json: string;
}

export function createBounceStore() {
  return {
    /** The outbound message a return path names, in whichever workspace (a report arrives for its return path alone). */
    bounceTarget: (work: Work, messageId: string): Promise<SentMessage | undefined> =>
      mailDb(work).selectFrom('outbound').select(['workspace_id', 'mail_from', 'recipients_json']).where('message_id', '=', messageId).executeTakeFirst(),

    /** Every recipient of an outbound message, lower-case: whom a whole-message return path's report may name. */
    async sentRecipients(work: Work, workspaceId: string, messageId: string): Promise<Set<string>> {
      const outbound = await mailDb(work).selectFrom('outbound').select('recipients_json').where('workspace_id', '=', workspaceId).where('message_id', '=', messageId).executeTakeFirst();
      return new Set(outbound ? (JSON.parse(outbound.recipients_json) as Array<{ address: string }>).map((r) => r.address.toLowerCase()) : []);
    },

    /**
     * Suppress addresses; one already suppressed keeps its first row (its first cause). Safe to run again, as the
     * group-committed units that call it must be.
     */
  };
}
