import type { ReturnPaths } from '../../src/lib/verp.js';

/** Failure reports as receiving MTAs and feedback loops send them to an outbound message's VERP return path. */

export const dsn = (verp: string, recipient: string, status = '5.1.1', diagnostic = 'smtp; 550 5.1.1 mailbox unavailable') =>
  [
    'From: Mail Delivery System <mailer-daemon@peer.test>',
    `To: ${verp}`,
    'Subject: Undelivered Mail Returned to Sender',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="b1"',
    '',
    '--b1',
    'Content-Type: text/plain',
    '',
    'Your message could not be delivered.',
    '--b1',
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; mx1.peer.test',
    '',
    `Final-Recipient: rfc822; ${recipient}`,
    'Action: failed',
    `Status: ${status}`,
    `Diagnostic-Code: ${diagnostic}`,
    '',
    '--b1',
    'Content-Type: text/rfc822-headers',
    '',
    'Subject: Hi',
    '--b1--',
    '',
  ].join('\r\n');

export const arf = (verp: string, recipient: string) =>
  [
    'From: feedback@isp.test',
    `To: ${verp}`,
    'Subject: Abuse report',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=feedback-report; boundary="b2"',
    '',
    '--b2',
    'Content-Type: text/plain',
    '',
    'A user marked this as spam.',
    '--b2',
    'Content-Type: message/feedback-report',
    '',
    'Feedback-Type: abuse',
    'User-Agent: ISP-FBL/1.0',
    'Version: 1',
    `Original-Rcpt-To: ${recipient}`,
    '',
    '--b2',
    'Content-Type: message/rfc822',
    '',
    'Subject: Hi',
    '',
    'original',
    '--b2--',
    '',
  ].join('\r\n');

/** The outbound message an envelope sender is a return path of (each recipient has its own), or null. */
export const messageOfReturnPath = (h: { services: { returnPaths: ReturnPaths } }, mailFrom: string): string | null => {
  const verdict = h.services.returnPaths.parse(mailFrom);
  return verdict.kind === 'valid' ? verdict.messageId : null;
};
