import { describe, expect, it } from 'vitest';
import { isReportAttachment } from './report-candidates.js';
import { ReportFormatError } from './report-extract.js';
import { MAX_DMARC_RECORDS, parseReportDocument } from './report-parse.js';

const dmarc = (records: string, domain = 'example.com') =>
  Buffer.from(
    `<?xml version="1.0"?><feedback><report_metadata><org_name>AT&amp;T</org_name><report_id>r1</report_id><date_range><begin>1</begin><end>2</end></date_range></report_metadata>` +
      `<policy_published><domain>${domain}</domain><p>none</p></policy_published>${records}</feedback>`,
  );
const record = (ip = '192.0.2.1', disposition = 'none') =>
  `<record><row><source_ip>${ip}</source_ip><count>2</count><policy_evaluated><disposition>${disposition}</disposition><dkim>pass</dkim><spf>fail</spf></policy_evaluated></row>` +
  `<identifiers><header_from>example.com</header_from></identifiers><auth_results><dkim><domain>example.com</domain><result>pass</result></dkim><spf><domain>example.com</domain><result>softfail</result></spf></auth_results></record>`;

describe('parseReportDocument', () => {
  it('reads a DMARC report: predefined entities decoded, one record a source', () => {
    expect(parseReportDocument(dmarc(record() + record('2001:db8::1', 'reject')))).toEqual({
      kind: 'dmarc',
      orgName: 'AT&T',
      reportId: 'r1',
      domain: 'example.com',
      beginAt: 1000,
      endAt: 2000,
      records: [
        { sourceIp: '192.0.2.1', count: 2, disposition: 'none', alignedDkim: 'pass', alignedSpf: 'fail', dkim: 'pass', spf: 'fail', headerFrom: 'example.com' },
        { sourceIp: '2001:db8::1', count: 2, disposition: 'reject', alignedDkim: 'pass', alignedSpf: 'fail', dkim: 'pass', spf: 'fail', headerFrom: 'example.com' },
      ],
    });
  });

  it.each([
    ['no XML or JSON', Buffer.from('hello')],
    ['a DTD', Buffer.from('<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><feedback/>')],
    ['XML not well-formed', Buffer.from('<feedback><report_metadata></feedback>')],
    ['no policy domain', dmarc(record(), '')],
    ['a source that is no IP', dmarc(record('mail.example.com'))],
    ['an unknown disposition', dmarc(record('192.0.2.1', 'discard'))],
    ['too many records', dmarc(record().repeat(MAX_DMARC_RECORDS + 1))],
    ['JSON without policies', Buffer.from('{"organization-name":"x","report-id":"1","date-range":{"start-datetime":"2026-01-01T00:00:00Z","end-datetime":"2026-01-02T00:00:00Z"}}')],
    ['a negative count', Buffer.from('{"organization-name":"x","report-id":"1","date-range":{"start-datetime":"2026-01-01T00:00:00Z","end-datetime":"2026-01-02T00:00:00Z"},"policies":[{"policy":{"policy-type":"sts","policy-domain":"example.com"},"summary":{"total-successful-session-count":-1,"total-failure-session-count":0}}]}')],
  ])('refuses %s', (_why, document) => {
    expect(() => parseReportDocument(document)).toThrow(ReportFormatError);
  });
});

describe('isReportAttachment', () => {
  it.each([
    [{ filename: 'google.com!example.com!1700000000!1700086399.xml.gz', contentType: 'application/gzip' }, '', true],
    [{ filename: 'report.json.gz', contentType: 'application/tlsrpt+gzip' }, '', true],
    [{ filename: 'report.zip', contentType: 'application/zip' }, 'Report Domain: example.com Submitter: x', true],
    [{ filename: 'holiday.zip', contentType: 'application/zip' }, 'Photos', false],
    [{ filename: 'invoice.xml', contentType: 'text/xml' }, 'Your invoice', false],
  ])('%o with subject %j → %s', (attachment, subject, expected) => {
    expect(isReportAttachment(attachment, subject)).toBe(expected);
  });
});
