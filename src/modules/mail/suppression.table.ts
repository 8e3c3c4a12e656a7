export const SUPPRESSION_REASONS = ['hard_bounce', 'complaint', 'manual', 'unsubscribed'] as const;
export type SuppressionReason = (typeof SUPPRESSION_REASONS)[number];

/** An address a workspace no longer sends to: one row per workspace and address. */
export interface SuppressionTable {
  workspace_id: string;
  /** Lower case, as sends compare it. */
  address: string;
  reason: SuppressionReason;
  /** The DSN's diagnostic, the SMTP reply, the feedback type, the note of a manual entry, or how one unsubscribed (`one-click`, `mailto`). */
  detail: string | null;
  /** The DSN status (5.1.1) or the SMTP reply's enhanced code (else its basic code); null for complaints and manual entries. */
  status_code: string | null;
  /** The outbound message that caused it; null for manual entries. */
  message_id: string | null;
  created_at: number;
}
