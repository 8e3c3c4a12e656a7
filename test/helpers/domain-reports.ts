import { readFileSync } from 'node:fs';
import { crc32, deflateRawSync, gzipSync } from 'node:zlib';

/** Report documents as receivers mail them (test/fixtures/reports). */
export const DMARC_XML = readFileSync(new URL('../fixtures/reports/dmarc-aggregate.xml', import.meta.url));
export const TLS_JSON = readFileSync(new URL('../fixtures/reports/tls-rpt.json', import.meta.url));

/** A zip archive (APPNOTE 4.3) of one deflated file, as DMARC reporters send it. */
export function zipOf(name: string, content: Buffer): Buffer {
  const data = deflateRawSync(content);
  const fileName = Buffer.from(name);
  const crc = crc32(content);
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  local.writeUInt16LE(8, 8);
  local.writeUInt32LE(crc, 14);
  local.writeUInt32LE(data.length, 18);
  local.writeUInt32LE(content.length, 22);
  local.writeUInt16LE(fileName.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE(20, 4);
  central.writeUInt16LE(20, 6);
  central.writeUInt16LE(8, 10);
  central.writeUInt32LE(crc, 16);
  central.writeUInt32LE(data.length, 20);
  central.writeUInt32LE(content.length, 24);
  central.writeUInt16LE(fileName.length, 28);
  central.writeUInt32LE(0, 42);
  const localPart = Buffer.concat([local, fileName, data]);
  const centralPart = Buffer.concat([central, fileName]);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(centralPart.length, 12);
  end.writeUInt32LE(localPart.length, 16);
  return Buffer.concat([localPart, centralPart, end]);
}

export const gzipOf = (content: Buffer): Buffer => gzipSync(content);

/** A report mail: a short text and the report as a base64 attachment. */
export function reportMail(opts: { to: string; domain: string; filename: string; contentType: string; attachment: Buffer }): string {
  const body = opts.attachment.toString('base64').replace(/.{76}/g, '$&\r\n');
  return [
    'From: noreply-dmarc-support@google.com',
    `To: ${opts.to}`,
    `Subject: Report domain: ${opts.domain} Submitter: google.com Report-ID: <${opts.filename}>`,
    'Date: Sun, 29 Nov 2026 12:00:00 +0000',
    'Message-ID: <report-' + Math.random().toString(36).slice(2) + '@google.com>',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="rpt"',
    '',
    '--rpt',
    'Content-Type: text/plain; charset=utf-8',
    '',
    `This is an aggregate report for ${opts.domain}.`,
    '--rpt',
    `Content-Type: ${opts.contentType}; name="${opts.filename}"`,
    `Content-Disposition: attachment; filename="${opts.filename}"`,
    'Content-Transfer-Encoding: base64',
    '',
    body,
    '--rpt--',
    '',
  ].join('\r\n');
}

/**
 * A DSN reporting delivery (RFC 3464 Action: delivered), as a receiver sends it for NOTIFY=SUCCESS; `envelopeId` is
 * the ENVID the sender gave, reported back as Original-Envelope-Id.
 */
export const deliveredDsn = (verp: string, recipient: string, envelopeId?: string): string =>
  [
    'From: Mail Delivery System <mailer-daemon@peer.test>',
    `To: ${verp}`,
    'Subject: Successful Mail Delivery Report',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="d1"',
    '',
    '--d1',
    'Content-Type: text/plain',
    '',
    'Your message was delivered.',
    '--d1',
    'Content-Type: message/delivery-status',
    '',
    ...(envelopeId === undefined ? [] : [`Original-Envelope-Id: ${envelopeId}`]),
    'Reporting-MTA: dns; mx1.peer.test',
    '',
    `Final-Recipient: rfc822; ${recipient}`,
    'Action: delivered',
    'Status: 2.0.0',
    'Diagnostic-Code: smtp; 250 2.0.0 Ok: queued',
    '',
    '--d1--',
    '',
  ].join('\r\n');
