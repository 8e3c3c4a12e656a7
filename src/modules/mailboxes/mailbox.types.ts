import type { Work } from '../../db/tables.js';

/** A mailbox as the API shows it (docs/api.md). */
export interface MailboxView {
  address: string;
  description: string;
  created_at: string;
  message_count: number;
  unread_count: number;
}

export const MAX_DESCRIPTION_LENGTH = 1000;

/**
 * Which domains a workspace may create mailboxes (and send) in: the operator's hosted domains,
 * plus the workspace's verified sending domains once that feature answers here.
 */
export interface DomainPolicy {
  /**
   * `conn`: the caller's transaction, when it has one open (SQLite has one connection: another query would wait on it).
   * `hold`: keep a sending domain from being deleted until that transaction ends (a mailbox is being made in it).
   */
  isAllowedDomain(workspaceId: string, domain: string, conn?: Work, hold?: boolean): Promise<boolean>;
  /** Whether the domain is one of the operator's hosted domains (its role addresses are the operator's). */
  isHostedDomain(domain: string): boolean;
}
