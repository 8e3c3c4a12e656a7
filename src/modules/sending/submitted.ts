import { rfc5322Date } from './schedule.js';

/**
 * A message a mail client submitted (SMTP submission), made ready to send: kept as the client wrote it but for its
 * header block, where every `Bcc:` field goes (the blind recipients are in the envelope alone, RFC 5322 section
 * 3.6.3: a copy that showed them would tell every recipient) and a missing `Message-ID` or `Date` is added (RFC 6409
 * section 8: a submission server may complete a message). The body, attachments included, is copied untouched.
 */
export function prepareSubmitted(raw: Buffer, fill: { messageId: string; date: number }): { raw: Buffer; messageId: string | null } {
  const { headEnd, newline } = headerBlock(raw);
  let head = raw.subarray(0, headEnd).toString('latin1');
  // A field with its folded continuation lines (RFC 5322 section 2.2.3), at the start of a line.
  const field = (name: string) => new RegExp(`^${name}:[^\\r\\n]*(?:\\r?\\n[ \\t][^\\r\\n]*)*(?:\\r?\\n|$)`, 'gim');
  head = head.replace(field('Bcc'), '');
  const existing = field('Message-ID').exec(head)?.[0];
  const added: string[] = [];
  if (!existing) added.push(`Message-ID: <${fill.messageId}>`);
  if (!field('Date').test(head)) added.push(`Date: ${rfc5322Date(fill.date)}`);
  // New fields go on top, as a trace field would: the client's own order is left as it was.
  const prefix = added.length > 0 ? added.join(newline) + newline : '';
  const messageId = existing ? angleAddress(existing) : fill.messageId;
  return { raw: Buffer.concat([Buffer.from(prefix + head, 'latin1'), raw.subarray(headEnd)]), messageId };
}

/** Where the header block ends (its last line's line break included), and the line break the client used. */
function headerBlock(raw: Buffer): { headEnd: number; newline: string } {
  const crlf = raw.indexOf('\r\n\r\n');
  const lf = raw.indexOf('\n\n');
  if (crlf >= 0 && (lf < 0 || crlf < lf)) return { headEnd: crlf + 2, newline: '\r\n' };
  if (lf >= 0) return { headEnd: lf + 1, newline: '\n' };
  // Headers alone, no body.
  return { headEnd: raw.length, newline: raw.includes('\r\n') ? '\r\n' : '\n' };
}

/** The text between the first `<` and the next `>` of a field (its message id), null when there is none. */
function angleAddress(field: string): string | null {
  const start = field.indexOf('<');
  const end = start < 0 ? -1 : field.indexOf('>', start + 1);
  return end < 0 ? null : field.slice(start + 1, end);
}
