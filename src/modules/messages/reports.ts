import type { ParsedMessage } from './mime.js';

/** One recipient's line of a delivery status notification (RFC 3464 section 2.3). */
export interface DsnRecipient {
  /** Final-Recipient, else Original-Recipient. */
  recipient: string;
  /** Original-Recipient (the address as the sender gave it, before any forwarding), when the report has one. */
  originalRecipient: string | null;
  action: string;
  status: string;
  diagnostic: string | null;
}

export interface FeedbackReport {
  feedbackType: string;
  recipient: string | null;
  userAgent: string | null;
}

/** Header-like field blocks (RFC 3464 section 2.1 / RFC 5965 section 3.1): "Name: value" lines, blocks split by blank lines. */
function fieldBlocks(text: string): Array<Map<string, string>> {
  const blocks: Array<Map<string, string>> = [];
  for (const block of text.replace(/\r\n/g, '\n').split(/\n\s*\n/)) {
    const fields = new Map<string, string>();
    for (const line of block.replace(/\n[ \t]+/g, ' ').split('\n')) {
      const colon = line.indexOf(':');
      if (colon > 0) fields.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    if (fields.size > 0) blocks.push(fields);
  }
  return blocks;
}

/** `rfc822; someone@example.com` → `someone@example.com` */
const addressOf = (value: string | undefined): string | null => {
  if (!value) return null;
  const address = value.includes(';') ? value.slice(value.indexOf(';') + 1) : value;
  return address.trim().replace(/^<|>$/g, '').toLowerCase() || null;
};

/** The failed recipients of a DSN (multipart/report; report-type=delivery-status), or null if it is none. */
export function parseDsn(parsed: ParsedMessage): DsnRecipient[] | null {
  const part = parsed.attachments.find((a) => a.contentType === 'message/delivery-status' || a.contentType === 'message/global-delivery-status');
  if (!part) return null;
  const blocks = fieldBlocks(part.content.toString('utf8'));
  const out: DsnRecipient[] = [];
  for (const fields of blocks.slice(1)) {
    const originalRecipient = addressOf(fields.get('original-recipient'));
    const recipient = addressOf(fields.get('final-recipient')) ?? originalRecipient;
    if (!recipient) continue;
    out.push({ recipient, originalRecipient, action: (fields.get('action') ?? '').toLowerCase(), status: fields.get('status') ?? '', diagnostic: fields.get('diagnostic-code') ?? null });
  }
  return out;
}

/** An abuse/feedback report (RFC 5965, multipart/report; report-type=feedback-report), or null. */
export function parseFeedbackReport(parsed: ParsedMessage): FeedbackReport | null {
  const part = parsed.attachments.find((a) => a.contentType === 'message/feedback-report');
  if (!part) return null;
  const fields = fieldBlocks(part.content.toString('utf8'))[0] ?? new Map<string, string>();
  return {
    feedbackType: (fields.get('feedback-type') ?? 'abuse').toLowerCase(),
    recipient: addressOf(fields.get('original-rcpt-to')),
    userAgent: fields.get('user-agent') ?? null,
  };
}
