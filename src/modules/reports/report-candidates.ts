/**
 * Which attachments of an inbound message are taken for DMARC or TLS reports: cheap checks of names and types made
 * when the message is stored, so that only those messages get a parse job.
 */

/** RFC 8460 section 5.3: the media types of a TLS report. */
const REPORT_TYPES = new Set(['application/tlsrpt+gzip', 'application/tlsrpt+json']);
/** RFC 7489 section 7.2.1.1 and RFC 8460 section 5.1: `receiver!policy-domain!begin!end[!id].ext`. */
const REPORT_NAME = /^[^!/\\]+![^!/\\]+!\d+!\d+(![^!/\\]*)?\.(xml|xml\.gz|zip|json|json\.gz|gz)$/i;
const REPORT_EXTENSION = /\.(xml|xml\.gz|zip|json|json\.gz|gz)$/i;
/** Both RFCs start a report's subject so. */
const REPORT_SUBJECT = /^\s*report domain:/i;

export interface AttachmentFacts {
  filename: string;
  contentType: string;
}

/** Whether an attachment of a message with this subject looks like an aggregate or TLS report. */
export function isReportAttachment(attachment: AttachmentFacts, subject: string): boolean {
  if (REPORT_TYPES.has(attachment.contentType.toLowerCase())) return true;
  if (REPORT_NAME.test(attachment.filename)) return true;
  return REPORT_SUBJECT.test(subject) && REPORT_EXTENSION.test(attachment.filename);
}
