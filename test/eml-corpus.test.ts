import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_SUBJECT_LENGTH, parseMessage, type AddressView, type ParsedMessage } from '../src/modules/messages/mime.js';
import { searchTokens } from '../src/lib/mail-text.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';

/**
 * A corpus of real-world-shaped messages (test/fixtures/eml) and exactly what each parses to: first
 * straight through parseMessage, then — for every fixture — through real SMTP, the store and the HTTP API.
 */

const FIXTURES = new URL('./fixtures/eml/', import.meta.url);
const read = (file: string) => readFileSync(new URL(file, FIXTURES));
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** An exact body, or (for very long ones) its length and distinctive pieces. */
type Body = string | null | { length: number; includes: string[] };

interface ExpectedAttachment {
  filename: string;
  contentType: string;
  inline: boolean;
  contentId: string | null;
  size: number;
  /** One of: the SHA-256 of the bytes, the bytes as UTF-8 text, or the bytes themselves. */
  sha256?: string;
  text?: string;
  content?: Buffer;
}

interface Expectation {
  file: string;
  /** What the shape proves. */
  proves: string;
  from: AddressView | null;
  to: AddressView[];
  cc?: AddressView[];
  replyTo?: AddressView[];
  subject: string;
  /** ISO 8601 of the Date header, or null when there is none (or it does not parse). */
  date: string | null;
  messageId: string | null;
  inReplyTo?: string | null;
  references?: string[];
  text: Body;
  html: Body;
  attachments?: ExpectedAttachment[];
  parseError?: string | null;
  /** Further checks of the parse that do not fit the columns. */
  check?: (parsed: ParsedMessage) => void;
}

const addr = (address: string, name = ''): AddressView => ({ name, address });
const BOB = [addr('bob@example.net')];

// Payloads the fixtures carry, by SHA-256 (computed when the fixtures were written, from the source bytes).
const SHA = {
  invoicePdf: 'b6a0962ecb6f75096f1363c1de02385946a04aa391c334785d5c7a52e0723de4',
  logoPng: '5cde428797d582e46db20972a01e6fba9d40f0b011a0d8cb372bf7b1f77d49de',
  bannerPng: 'afe6db2a8168bf64bb8a4e036010e99c39744d8e653e4829266f919c530cc572',
  pixelGif: '693d949d8c3fdc7fd4ace7c340b5f177a9f0c5be7bafee8bc93a7d88b7523d75',
  blob1024: 'ffbad8f947474cfdd5b2bb22d7e0bf5ee8ba2b7af859d0c2bb28622db6a4be47',
  blob300: '9b854f0a59eabeac0b0ecaee1f5cd7ab3bfbc93e9b33e2a89ac338b237f300f2',
  blob100: '5fb5d4b7ace49f5eac37422b8e1db12bab83cdbc2b7123abb61457e19c050d4c',
  budgetCsv: 'f7b08a4732e230b7c0ace958cb7fc4fcfe7e7a6b1c9948bb5b1d94ee3176f460',
};

const ICS_LINES = [
  'BEGIN:VCALENDAR',
  'PRODID:-//Example Corp//Calendar 1.0//EN',
  'VERSION:2.0',
  'METHOD:REQUEST',
  'BEGIN:VEVENT',
  'UID:evt-0001@calendar.example.com',
  'DTSTAMP:20250429T090000Z',
  'DTSTART:20250505T130000Z',
  'DTEND:20250505T140000Z',
  'SUMMARY:Design review',
  'ORGANIZER;CN=Alice:mailto:alice@example.org',
  'ATTENDEE;RSVP=TRUE;CN=Bob:mailto:bob@example.net',
  'END:VEVENT',
  'END:VCALENDAR',
];
// postal-mime hands calendar parts back as UTF-8 with LF line ends (even base64 ones; RFC 5545 wants CRLF).
const ICS_TEXT = ICS_LINES.join('\n') + '\n';
const LONG_SUBJECT = 'Long subject '.repeat(100).trim();

const CORPUS: Expectation[] = [
  {
    file: '01-plain-7bit.eml',
    proves: 'plain 7bit ASCII: addresses (quoted comma in a name, case folded), Reply-To, folded References, a quoted reply kept verbatim',
    from: addr('alice@example.org', 'Alice Liddell'),
    to: [addr('bob@example.net', 'Bob Builder'), addr('carol@example.net')],
    cc: [addr('dave.ops@example.net', 'Dave, the Ops Guy')],
    replyTo: [addr('team@example.org')],
    subject: 'Re: Quarterly numbers',
    date: '2025-04-14T09:12:40.000Z',
    messageId: '20250414091240.ga1234@mail.example.org',
    inReplyTo: 'cakx=ab12-xyz@mail.example.net',
    references: ['root.123@mail.example.org', 'cakx=ab12-xyz@mail.example.net'],
    text: 'Hi Bob,\n\nThe Q1 numbers are attached to the wiki page. Revenue is up 4.2%.\n\nOn Sun, Apr 13, 2025 at 18:03, Bob Builder wrote:\n> Can you send the quarterly numbers?\n\n-- \nAlice\n',
    html: null,
  },
  {
    file: '02-qp-utf8-soft-breaks.eml',
    proves: 'quoted-printable UTF-8: soft breaks joined (one splits a two-byte sequence), =3D and a trailing =20 kept',
    from: addr('zoe@example.de', 'Zoë Krüger'),
    to: BOB,
    subject: 'Grüße aus München',
    date: '2025-04-15T08:00:00.000Z',
    messageId: 'qp-soft-breaks@example.de',
    text:
      'Liebe Grüße aus München! Dieser Absatz ist absichtlich sehr lang, damit er mit einem weichen Zeilenumbruch umbrochen werden muss, und das Euro-Zeichen € steht hier, während dieses é quer über einen Umbruch geteilt ist.\n' +
      'Zeile mit Gleichheitszeichen: 2+2=4\nTrailing space kept: \nEnde.\n',
    html: null,
  },
  {
    file: '03-base64-text.eml',
    proves: 'a base64 text body decodes to its exact UTF-8 text (line ends as encoded)',
    from: addr('noreply@notifications.example.com'),
    to: [addr('bob@example.net', 'Bob')],
    subject: 'Base64 body',
    date: '2025-04-16T14:30:00.000Z',
    messageId: 'b64.text.0001@notifications.example.com',
    text: 'Ce message est encodé en base64.\r\nDeuxième ligne — avec des caractères accentués : àéîõü.\r\n日本語も少し。\r\n',
    html: null,
  },
  {
    file: '04-alternative.eml',
    proves: 'multipart/alternative keeps both representations; QP html decoded',
    from: addr('news@shop.example.com', 'Newsletter'),
    to: BOB,
    subject: 'Spring sale starts now',
    date: '2025-04-17T13:00:00.000Z',
    messageId: 'alt.0001@shop.example.com',
    text: 'Spring sale: 20% off everything until Sunday.\nhttps://shop.example.com/sale\n\n',
    html: '<div dir="ltr"><h1>Spring sale</h1><p>20% off <b>everything</b> until Sunday.</p><a href="https://shop.example.com/sale">Shop now</a></div>\n\n',
  },
  {
    file: '05-mixed-pdf.eml',
    proves: 'multipart/mixed with a base64 PDF: preamble ignored, the bytes come back exactly',
    from: addr('billing@vendor.example', 'Billing'),
    to: [addr('accounts@example.net')],
    subject: 'Invoice 2025-0042',
    date: '2025-04-18T09:15:00.000Z',
    messageId: 'inv-2025-0042@vendor.example',
    text: 'Please find invoice 2025-0042 attached.\n\n',
    html: null,
    attachments: [{ filename: 'Invoice-2025-0042.pdf', contentType: 'application/pdf', inline: false, contentId: null, size: 598, sha256: SHA.invoicePdf }],
  },
  {
    file: '06-related-inline-cid.eml',
    proves: 'multipart/related around multipart/alternative: the cid image is inline with its Content-ID (no brackets)',
    from: addr('hello@brand.example', 'Marketing'),
    to: BOB,
    subject: 'Our new logo',
    date: '2025-04-19T05:45:00.000Z',
    messageId: 'related.0001@brand.example',
    text: 'Meet our new logo (view in HTML).\n',
    html: '<html><body><p>Meet our new logo:</p><img src="cid:logo.png@01DB1234.ABCD5678" alt="logo"></body></html>\n',
    attachments: [{ filename: 'logo.png', contentType: 'image/png', inline: true, contentId: 'logo.png@01DB1234.ABCD5678', size: 537, sha256: SHA.logoPng }],
  },
  {
    file: '07-nested-mixed-alt-related.eml',
    proves: 'mixed > alternative > related (Apple Mail shape): one text, one html, a related image without disposition is inline, the csv is not',
    from: addr('someone@icloud.example', 'Apple User'),
    to: BOB,
    cc: [addr('carol@example.net')],
    subject: 'Trip photos and budget',
    date: '2025-04-20T23:20:00.000Z',
    messageId: '9f2e1a3b-44c1-4e5d-8a9b-0123456789ab@icloud.example',
    text: 'Budget attached, pixel inline.\n',
    html: '<html><body><div>Budget attached, pixel <img src="cid:pixel-0001"> inline.</div></body></html>\n',
    attachments: [
      { filename: 'pixel.gif', contentType: 'image/gif', inline: true, contentId: 'pixel-0001', size: 43, sha256: SHA.pixelGif },
      { filename: 'budget.csv', contentType: 'text/csv', inline: false, contentId: null, size: 44, sha256: SHA.budgetCsv },
    ],
  },
  {
    file: '08-iso-8859-1.eml',
    proves: 'an 8bit ISO-8859-1 body and Q-encoded Latin-1 headers; 0x93/0x94 under the Latin-1 label read as windows-1252 quotes (as every mail client does)',
    from: addr('francois@example.fr', 'François Pérez'),
    to: BOB,
    subject: 'Réunion à Noël',
    date: '2025-04-21T10:00:00.000Z',
    messageId: 'latin1.0001@example.fr',
    text: 'Ça va? Très bien, à bientôt.\nPrix: 5£ ou 6¤, «guillemets», ½ ¼ ¾ ÿ\n“Guillemets anglais” de Windows\n',
    html: null,
  },
  {
    file: '09-windows-1252.eml',
    proves: 'windows-1252 in a QP body and a Q-encoded subject: smart quotes, dashes, euro, ellipsis and ™ (bytes 0x80–0x9F)',
    from: addr('pat.obrien@corp.example', "O'Brien, Pat"),
    to: BOB,
    subject: '“Quoted” price – €100',
    date: '2025-04-22T13:30:00.000Z',
    messageId: 'cp1252.0001@corp.example',
    text: '“Smart quotes” and ‘single’ ones – en dash, — em dash, €100 total…\nNaïve café ™\n',
    html: null,
  },
  {
    file: '10-iso-2022-jp.eml',
    proves: 'ISO-2022-JP (7bit escape sequences) in the body and B-encoded subject and From name',
    from: addr('yamada@example.jp', '山田太郎'),
    to: BOB,
    subject: '会議のお知らせ',
    date: '2025-04-23T01:00:00.000Z',
    messageId: 'jis.0001@example.jp',
    text: 'お疲れ様です。\n明日の会議は十時からです。\nよろしくお願いします。\n',
    html: null,
  },
  {
    file: '11-shift-jis.eml',
    proves: 'an 8bit Shift_JIS html-only body (with 0x5C trail bytes: 表, 能) and a Shift_JIS B-encoded subject',
    from: addr('shop@example.jp'),
    to: BOB,
    subject: 'ご注文ありがとうございます',
    date: '2025-04-24T09:00:00.000Z',
    messageId: 'sjis.0001@example.jp',
    text: null,
    html: '<html><body><p>ご注文番号：１２３４５</p><p>表示と能力</p></body></html>\n',
  },
  {
    file: '12-encoded-words.eml',
    proves: 'RFC 2047: B and Q words folded over lines, mixed charsets, whitespace between adjacent words dropped; encoded names in To and a Cc group',
    from: addr('juergen@example.de', 'Jürgen Müller'),
    to: [addr('anna@example.de', 'Müller, Anna'), addr('wang@example.cn', '王小明')],
    cc: [addr('bjork@example.is', 'Björk'), addr('plain@example.is')],
    subject: 'Привет, мир und Grüße 🎉 and plain words',
    date: '2025-04-25T09:00:00.000Z',
    messageId: 'encoded-words.0001@example.de',
    text: 'Encoded words in the headers.\n',
    html: null,
  },
  {
    file: '13-rfc2231-filename.eml',
    proves: "RFC 2231 names: filename*=UTF-8''… and an ISO-8859-1 value split into filename*0*/*1*/*2 continuations",
    from: addr('sender@example.org'),
    to: BOB,
    subject: 'RFC 2231 names',
    date: '2025-04-26T11:11:11.000Z',
    messageId: 'rfc2231.0001@example.org',
    text: 'Two attachments with encoded names.\n',
    html: null,
    attachments: [
      { filename: '€ Rechnung März.pdf', contentType: 'application/pdf', inline: false, contentId: null, size: 598, sha256: SHA.invoicePdf },
      { filename: 'Très long nom de fichier été 2025.bin', contentType: 'application/octet-stream', inline: false, contentId: null, size: 1024, sha256: SHA.blob1024 },
    ],
  },
  {
    file: '14-smtputf8-raw-headers.eml',
    proves: 'raw 8-bit UTF-8 headers (RFC 6532): internationalised addresses, names and subject without encoded words',
    from: addr('δημήτρης@παράδειγμα.ελ', 'Δημήτρης Παπαδόπουλος'),
    to: [addr('bob@example.net', 'Ünïcødé Üser')],
    cc: [addr('用户@例子.广告')],
    subject: 'Καλημέρα κόσμε — 你好',
    date: '2025-04-27T10:37:00.000Z',
    messageId: 'utf8.0001@παράδειγμα.ελ',
    text: 'Σώμα με UTF-8 χωρίς κωδικοποίηση.\n',
    html: null,
  },
  {
    file: '15-forwarded-rfc822.eml',
    proves: 'a forwarded message/rfc822 attachment stays an attachment (its text does not leak into the body)',
    from: addr('alice@example.org', 'Alice Liddell'),
    to: BOB,
    subject: 'Fwd: The original',
    date: '2025-04-28T10:00:00.000Z',
    messageId: 'fwd.0001@example.org',
    text: 'See the message below.\n',
    html: null,
    attachments: [
      {
        filename: 'The original.eml',
        contentType: 'message/rfc822',
        inline: false,
        contentId: null,
        size: 257,
        // 7bit parts come back with LF line ends; the raw download keeps the CRLF original.
        text: 'Date: Mon, 07 Apr 2025 08:00:00 +0000\nFrom: Original Sender <orig@example.com>\nTo: alice@example.org\nSubject: The original\nMessage-ID: <original.0001@example.com>\nMIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\n\nThis is the original message body.\n',
      },
    ],
  },
  {
    file: '16-calendar-invite.eml',
    proves: 'a text/calendar part inside the alternative becomes invite.ics beside the application/ics attachment',
    from: addr('alice@example.org', 'Alice Liddell'),
    to: BOB,
    subject: 'Invitation: Design review @ Mon May 5, 2025 1pm - 2pm (UTC)',
    date: '2025-04-29T09:00:00.000Z',
    messageId: 'invite.0001@calendar.example.com',
    text: 'You have been invited to: Design review\n',
    html: null,
    attachments: [
      { filename: 'invite.ics', contentType: 'text/calendar', inline: false, contentId: null, size: 344, text: ICS_TEXT },
      { filename: 'invite.ics', contentType: 'application/ics', inline: false, contentId: null, size: 344, text: ICS_TEXT },
    ],
  },
  {
    file: '17-dsn-delivery-status.eml',
    proves: 'a DSN (multipart/report; delivery-status): the notification is the text, the status and returned headers are attachments; a From comment is the name',
    from: addr('mailer-daemon@mx.example.net', 'Mail Delivery System'),
    to: [addr('alice@example.org')],
    subject: 'Undelivered Mail Returned to Sender',
    date: '2025-04-30T12:00:05.000Z',
    messageId: '20250430120005.abc123@mx.example.net',
    text: "I'm sorry to have to inform you that your message could not\nbe delivered to one or more recipients.\n\n<nobody@example.net>: host mx.example.net said: 550 5.1.1 no such user\n\n",
    html: null,
    attachments: [
      {
        filename: 'attachment.delivery-status',
        contentType: 'message/delivery-status',
        inline: false,
        contentId: null,
        size: 208,
        text: 'Reporting-MTA: dns; mx.example.net\nArrival-Date: Wed, 30 Apr 2025 12:00:01 +0000 (UTC)\n\nFinal-Recipient: rfc822; nobody@example.net\nAction: failed\nStatus: 5.1.1\nDiagnostic-Code: smtp; 550 5.1.1 no such user\n\n',
      },
      {
        filename: 'attachment.rfc822-headers',
        contentType: 'text/rfc822-headers',
        inline: false,
        contentId: null,
        size: 103,
        text: 'From: alice@example.org\nTo: nobody@example.net\nSubject: hello?\nMessage-ID: <bounced.0001@example.org>\n\n',
      },
    ],
  },
  {
    file: '18-arf-feedback-report.eml',
    proves: 'an ARF report (multipart/report; feedback-report): the reported message stays an (inline) attachment, not body text',
    from: addr('abuse-report@isp.example'),
    to: [addr('abuse@example.org')],
    subject: 'FW: Spam report',
    date: '2025-05-01T00:00:00.000Z',
    messageId: 'arf.0001@isp.example',
    text: 'This is an email abuse report for an email message received from IP\n192.0.2.1 on Thu, 01 May 2025 00:00:00 +0000.\n\n',
    html: null,
    attachments: [
      {
        filename: 'attachment.feedback-report',
        contentType: 'message/feedback-report',
        inline: false,
        contentId: null,
        size: 153,
        text: 'Feedback-Type: abuse\nUser-Agent: SomeGenerator/1.0\nVersion: 1\nOriginal-Mail-From: <alice@example.org>\nSource-IP: 192.0.2.1\nReported-Domain: example.org\n\n',
      },
      {
        filename: 'message.eml',
        contentType: 'message/rfc822',
        inline: true,
        contentId: null,
        size: 247,
        text: 'From: <alice@example.org>\nReceived: from mailserver.example.org by isp.example; Thu, 01 May 2025 00:00:00 +0000\nTo: <someone@isp.example>\nSubject: Buy now\nMessage-ID: <spam.0001@example.org>\nDate: Wed, 30 Apr 2025 23:59:00 +0000\n\nSpam spam spam.\n\n',
      },
    ],
  },
  {
    file: '19-broken-missing-closing-boundary.eml',
    proves: 'a multipart cut off before its closing boundary: the text and every byte of the unterminated attachment survive',
    from: addr('truncated@example.com'),
    to: BOB,
    subject: 'Truncated multipart',
    date: '2025-05-02T10:00:00.000Z',
    messageId: 'truncated.0001@example.com',
    text: 'The body is here.\n',
    html: null,
    attachments: [{ filename: 'data.bin', contentType: 'application/octet-stream', inline: false, contentId: null, size: 300, sha256: SHA.blob300 }],
  },
  {
    file: '20-broken-boundary-never-appears.eml',
    proves: 'a multipart whose declared boundary never appears (all preamble): the body is kept as text instead of vanishing',
    from: addr('weird@example.com'),
    to: BOB,
    subject: 'Boundary that never appears',
    date: '2025-05-03T10:00:00.000Z',
    messageId: 'noboundary.0001@example.com',
    text: '--some-other-boundary\nContent-Type: text/plain\n\nText that a reader should still be able to see.\n--some-other-boundary--\n',
    html: null,
  },
  {
    file: '21-broken-wrong-cte.eml',
    proves: 'base64 declared over plain text: decoded as RFC 2045 section 6.8 says (non-alphabet characters skipped), never a crash',
    from: addr('misconfigured@example.com'),
    to: BOB,
    subject: 'Not really base64',
    date: '2025-05-04T10:00:00.000Z',
    messageId: 'wrongcte.0001@example.com',
    text: new TextDecoder().decode(Buffer.from('Hellothisisplaintext', 'base64')),
    html: null,
    attachments: [
      { filename: 'notes.txt', contentType: 'application/octet-stream', inline: false, contentId: null, size: 15, content: Buffer.from('thisisnotbase64atall', 'base64') },
    ],
  },
  {
    file: '22-broken-unknown-charset.eml',
    proves: 'unknown charset names (unknown-8bit body, x-unknown-charset encoded word) fall back to windows-1252',
    from: addr('legacy@example.com'),
    to: BOB,
    subject: 'café ok',
    date: '2025-05-05T10:00:00.000Z',
    messageId: 'unknowncs.0001@example.com',
    text: 'Café crème € 5\nfin\n',
    html: null,
  },
  {
    file: '23-broken-long-header.eml',
    proves: 'a 20,000-character header line and a 1,299-character subject: parsed, subject cut at 998, the header value clipped in the view',
    from: addr('longhdr@example.com'),
    to: BOB,
    subject: LONG_SUBJECT.slice(0, MAX_SUBJECT_LENGTH),
    date: '2025-05-06T10:00:00.000Z',
    messageId: 'longhdr.0001@example.com',
    text: 'Body after a very long header.\n',
    html: null,
    check: (parsed) => {
      expect(LONG_SUBJECT.length).toBe(1299);
      const long = parsed.headers.find((h) => h.name === 'X-Long-Header');
      expect(long?.value).toHaveLength(8192);
      expect(long?.value.startsWith('abcdefghijklmnopqrstuvwxyzabc')).toBe(true);
    },
  },
  {
    file: '24-broken-bare-lf.eml',
    proves: 'bare LF line ends throughout (a Unix script): headers, boundaries and both parts still found',
    from: addr('cron@host.example', 'Unix Script'),
    to: BOB,
    subject: 'Cron <root@host> backup',
    date: '2025-05-07T10:00:00.000Z',
    messageId: 'barelf.0001@host.example',
    text: 'backup ok\nline two\n',
    html: '<p>backup ok</p>\n',
  },
  {
    file: '25-no-body.eml',
    proves: 'a header block with no blank line, no body and no final newline',
    from: addr('empty@example.com'),
    to: BOB,
    subject: 'Nothing below',
    date: '2025-05-08T10:00:00.000Z',
    messageId: 'nobody.0001@example.com',
    text: null,
    html: null,
  },
  {
    file: '26-headers-only-no-subject-from-date.eml',
    proves: 'no From, Subject or Date: null sender, empty subject, null date',
    from: null,
    to: BOB,
    subject: '',
    date: null,
    messageId: 'headersonly.0001@example.com',
    text: null,
    html: null,
  },
  {
    file: '27-duplicate-headers.eml',
    proves: 'duplicated headers: the first Date/From/Subject/Message-ID/Content-Type wins, To lines add up, every line stays in the header list',
    from: addr('first@example.com', 'First'),
    to: [addr('one@example.net'), addr('two@example.net')],
    subject: 'First subject',
    date: '2025-05-09T10:00:00.000Z',
    messageId: 'dup.first@example.com',
    text: '<b>not html</b>\n',
    html: null,
    check: (parsed) => {
      expect(parsed.headers.filter((h) => h.name === 'Subject').map((h) => h.value)).toEqual(['First subject', 'Second subject']);
      expect(parsed.headers).toHaveLength(13);
    },
  },
  {
    file: '28-attachment-no-filename.eml',
    proves: 'attachments without any name get a name from their type; a part without disposition outside related is not inline',
    from: addr('scanner@office.example'),
    to: BOB,
    subject: 'Scan',
    date: '2025-05-10T10:00:00.000Z',
    messageId: 'noname.0001@office.example',
    text: null,
    html: null,
    attachments: [
      { filename: 'attachment.octet-stream', contentType: 'application/octet-stream', inline: false, contentId: null, size: 100, sha256: SHA.blob100 },
      { filename: 'attachment.png', contentType: 'image/png', inline: false, contentId: null, size: 417, sha256: SHA.bannerPng },
    ],
  },
  {
    file: '29-long-single-line-html.eml',
    proves: 'a 112,961-character html body on one line',
    from: addr('reports@bi.example'),
    to: BOB,
    subject: 'Daily report',
    date: '2025-05-11T10:00:00.000Z',
    messageId: 'longhtml.0001@bi.example',
    text: null,
    html: { length: 112_961, includes: ['<html><body><table><tr><td style="padding:2px">cell 0</td>', '<td style="padding:2px">cell 2999</td></tr></table><p>END-OF-REPORT</p></body></html>\n'] },
  },
  {
    file: '30-broken-nul-bytes.eml',
    proves: 'NUL bytes in the subject and in 8bit and base64 bodies become U+FFFD (PostgreSQL text cannot hold NUL)',
    from: addr('gateway@legacy.example'),
    to: BOB,
    subject: 'Null\ufffdbyte',
    date: '2025-05-12T10:00:00.000Z',
    messageId: 'nul.0001@legacy.example',
    text: 'before\ufffdafter\n',
    html: '<p>html\ufffdnul</p>',
  },
  {
    file: '31-pgp-signed-flowed.eml',
    proves: 'PGP/MIME multipart/signed: format=flowed; delsp=yes text unfolded, the signature an attachment',
    from: addr('careful@example.org', 'Careful Person'),
    to: BOB,
    subject: 'Signed',
    date: '2025-05-13T10:00:00.000Z',
    messageId: 'signed.0001@example.org',
    text: 'This paragraph was flowed by the sender and should be joined back into one line by the reader.\n\n-- \nCareful\n',
    html: null,
    attachments: [
      {
        filename: 'signature.asc',
        contentType: 'application/pgp-signature',
        inline: false,
        contentId: null,
        size: 133,
        text: '-----BEGIN PGP SIGNATURE-----\n\niHUEARYIAB0WIQTEST0000000000000000000000000000AAAAAAAAAAAAAAAAAAA=\n=abcd\n-----END PGP SIGNATURE-----\n\n',
      },
    ],
  },
  {
    file: '32-broken-deep-nesting.eml',
    proves: 'multipart nested 300 deep (past the parser limit): salvaged headers with decoded subject and names, the body as text, parseError set',
    from: addr('bomb@attacker.example', 'Bomb'),
    to: BOB,
    subject: 'Nested №300',
    date: '2025-05-14T10:00:00.000Z',
    messageId: 'deep.0001@attacker.example',
    text: { length: 17_242, includes: ['--d0\r\nContent-Type: multipart/mixed; boundary="d1"\r\n', 'deepest text\r\n--d300--\r\n'] },
    html: null,
    parseError: 'Maximum MIME nesting depth of 256 levels exceeded',
  },
];

function expectBody(actual: string | null | undefined, expected: Body, label: string) {
  if (expected === null || typeof expected === 'string') {
    expect(actual ?? null, label).toBe(expected);
    return;
  }
  expect(actual, label).toHaveLength(expected.length);
  for (const piece of expected.includes) expect(actual, label).toContain(piece);
}

function expectBytes(actual: Buffer, expected: ExpectedAttachment) {
  expect(actual.length, expected.filename).toBe(expected.size);
  if (expected.sha256 !== undefined) expect(sha256(actual), expected.filename).toBe(expected.sha256);
  if (expected.text !== undefined) expect(actual.toString('utf8'), expected.filename).toBe(expected.text);
  if (expected.content !== undefined) expect(actual.equals(expected.content), expected.filename).toBe(true);
}

describe('eml corpus: parseMessage', () => {
  it('has one expectation per fixture file', () => {
    const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.eml')).sort();
    expect(CORPUS.map((c) => c.file).sort()).toEqual(files);
    expect(files.length).toBeGreaterThanOrEqual(24);
  });

  it.each(CORPUS.map((fx) => [fx.file, fx] as const))('%s', async (_file, fx) => {
    const parsed = await parseMessage(read(fx.file));
    expect(parsed.parseError).toBe(fx.parseError ?? null);
    expect(parsed.from).toEqual(fx.from);
    expect(parsed.to).toEqual(fx.to);
    expect(parsed.cc).toEqual(fx.cc ?? []);
    expect(parsed.replyTo).toEqual(fx.replyTo ?? []);
    expect(parsed.subject).toBe(fx.subject);
    expect(parsed.date === null ? null : new Date(parsed.date).toISOString()).toBe(fx.date);
    expect(parsed.messageId).toBe(fx.messageId);
    expect(parsed.inReplyTo).toBe(fx.inReplyTo ?? null);
    expect(parsed.references).toEqual(fx.references ?? []);
    expectBody(parsed.text, fx.text, 'text');
    expectBody(parsed.html, fx.html, 'html');
    const expected = fx.attachments ?? [];
    expect(parsed.attachments.map(({ content: _content, ...meta }) => meta)).toEqual(
      expected.map(({ filename, contentType, inline, contentId }) => ({ filename, contentType, inline, contentId })),
    );
    parsed.attachments.forEach((a, i) => expectBytes(a.content, expected[i]!));
    fx.check?.(parsed);
  });
});

/** What nodemailer puts on the wire for raw bytes: bare CR and bare LF become CRLF, and the data ends with CRLF. */
function onTheWire(raw: Buffer): Buffer {
  const crlf = Buffer.from(raw.toString('latin1').replace(/\r\n|\r|\n/g, '\r\n'), 'latin1');
  return crlf.length === 0 || crlf.subarray(-2).toString('latin1') === '\r\n' ? crlf : Buffer.concat([crlf, Buffer.from('\r\n')]);
}

interface ApiMessage {
  message_id: string;
  from: AddressView | null;
  to: AddressView[];
  cc: AddressView[];
  subject: string;
  date: string | null;
  internet_message_id: string | null;
  text: string | null;
  html: string | null;
  headers: Array<{ name: string; value: string }>;
  attachments: Array<{ attachment_id: string; filename: string; content_type: string; size: number; inline: boolean; content_id?: string | null }>;
}

describe(`eml corpus over real SMTP and the HTTP API (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let acme: Tenant;
  const mailbox = 'corpus@mailroom.localhost';
  const stored: string[] = [];
  const byFile = new Map<string, string>();

  beforeAll(async () => {
    h = await startMailHarness();
    acme = await createTenant(h, 'Corpus');
    expect((await h.app.inject({ method: 'POST', url: `/mailboxes?address=${mailbox}`, headers: bearer(acme.apiKey) })).statusCode).toBe(201);
  });
  afterAll(async () => h.close());

  const get = (url: string) => h.app.inject({ method: 'GET', url, headers: bearer(acme.apiKey) });

  // Every fixture goes through SMTP, the broken ones included.
  it.each(CORPUS.map((fx) => [fx.file, fx] as const))('%s: 250, stored byte for byte, parsed the same', async (_file, fx) => {
    const sent = read(fx.file);
    const info = await h.sendRaw(sent, { from: 'corpus@sender.test', to: [mailbox] });
    expect(info.response).toMatch(/^250 2\.0\.0 Stored as msg_\w+$/);
    const id = /Stored as (msg_\w+)/.exec(info.response)![1]!;
    stored.push(id);
    byFile.set(fx.file, id);

    // The raw download is the wire bytes with only Received-SPF and Authentication-Results in front.
    const wire = onTheWire(sent);
    const raw = await get(`/messages/${id}/raw`);
    expect(raw.statusCode).toBe(200);
    expect(raw.headers['content-type']).toBe('message/rfc822');
    const bytes = raw.rawPayload;
    expect(bytes.length).toBeGreaterThan(wire.length);
    expect(bytes.subarray(bytes.length - wire.length).equals(wire)).toBe(true);
    expect(bytes.subarray(0, bytes.length - wire.length).toString('latin1')).toMatch(
      /^Received-SPF: [^\r\n]*(?:\r\n[ \t][^\r\n]*)*\r\nAuthentication-Results: [^\r\n]*(?:\r\n[ \t][^\r\n]*)*\r\n$/,
    );

    const res = await get(`/messages/${id}`);
    expect(res.statusCode).toBe(200);
    const message = res.json<ApiMessage>();
    expect(message).toMatchObject({ from: fx.from, to: fx.to, cc: fx.cc ?? [], subject: fx.subject, date: fx.date, internet_message_id: fx.messageId });
    expectBody(message.text, fx.text, 'text');
    expectBody(message.html, fx.html, 'html');
    expect(message.headers.slice(0, 2).map((x) => x.name)).toEqual(['Received-SPF', 'Authentication-Results']);

    const expected = fx.attachments ?? [];
    expect(message.attachments.map(({ attachment_id: _id, ...meta }) => meta)).toEqual(
      expected.map((a) => ({ filename: a.filename, content_type: a.contentType, size: a.size, inline: a.inline, content_id: a.contentId })),
    );
    for (const [i, attachment] of message.attachments.entries()) {
      const download = await get(`/messages/${id}/attachments/${attachment.attachment_id}`);
      expect(download.statusCode).toBe(200);
      expect(download.headers['content-type']).toBe(attachment.content_type);
      expectBytes(download.rawPayload, expected[i]!);
    }
  });

  // The search index over real-world shapes: each message is found by its own subject, sender,
  // recipients, attachment names and body words, each through its operator (the words as the index makes them).
  it.each(CORPUS.map((fx) => [fx.file, fx] as const))('%s: found by search through every field it has', async (file, fx) => {
    const id = byFile.get(file)!;
    const phrase = (text: string) => searchTokens(text).slice(0, 6).join(' ');
    const bodyText = typeof fx.text === 'string' ? fx.text : typeof fx.html === 'string' && fx.text === null ? fx.html.replace(/<[^>]*>/g, ' ') : '';
    const queries = [
      phrase(fx.subject) && `subject:"${phrase(fx.subject)}"`,
      fx.from && phrase(fx.from.address) && `from:"${phrase(fx.from.address)}"`,
      ...fx.to.slice(0, 3).map((a) => phrase(a.address) && `to:"${phrase(a.address)}"`),
      ...(fx.cc ?? []).slice(0, 3).map((a) => phrase(a.address) && `cc:"${phrase(a.address)}"`),
      ...(fx.attachments ?? []).slice(0, 3).map((a) => phrase(a.filename) && `filename:"${phrase(a.filename)}"`),
      phrase(bodyText) && `"${phrase(bodyText)}"`,
      (fx.attachments ?? []).length > 0 ? 'has:attachment' : '-has:attachment',
    ].filter((q): q is string => typeof q === 'string' && q !== '');
    expect(queries.length).toBeGreaterThan(0);
    for (const q of queries) {
      const res = await get(`/inbox?mailbox=${mailbox}&limit=500&q=${encodeURIComponent(q)}`);
      expect(res.statusCode, `${q}: ${res.body}`).toBe(200);
      expect(res.json<{ messages: Array<{ message_id: string }> }>().messages.map((m) => m.message_id), q).toContain(id);
    }
  });

  it('is still serving after the whole corpus, with every message in the mailbox', async () => {
    const info = await h.send({ from: 'after@sender.test', to: mailbox, subject: 'Still here', text: 'ok' });
    expect(info.response).toMatch(/^250 /);
    const page = (await get(`/inbox?mailbox=${mailbox}&limit=500`)).json<{ total: number; messages: Array<{ message_id: string }> }>();
    expect(page.total).toBe(CORPUS.length + 1);
    expect(page.messages.map((m) => m.message_id)).toEqual(expect.arrayContaining(stored));
  });
});
