// ENVELOPE (RFC 3501 section 7.4.2) from a header block alone, so it can be computed (or cached) without the body.
import { parseAddressList, type EnvelopeAddress } from './address.js';
import { readHeaderFields, type HeaderField } from './header-fields.js';
import { bytes, nulAs80, forHumans, oneLine } from './imap-strings.js';
import type { ImapValue } from './types.js';

const ADDRESS_FIELDS = ['from', 'sender', 'reply-to', 'to', 'cc', 'bcc'] as const;
type AddressField = (typeof ADDRESS_FIELDS)[number];

/** Envelope fields of one header, before they become IMAP values. */
export interface EnvelopeData {
  date: string | null;
  subject: string | null;
  messageId: string | null;
  inReplyTo: string | null;
  addresses: Record<AddressField, EnvelopeAddress[] | null>;
}

/**
 * The envelope fields of a header: for Date, Subject, Message-ID and In-Reply-To the LAST field wins; address
 * fields given more than once are joined, as if comma-separated (Dovecot: a checker reading the first From and a
 * client showing the second must not disagree).
 */
export function envelopeData(fields: readonly HeaderField[]): EnvelopeData {
  const data: EnvelopeData = {
    date: null,
    subject: null,
    messageId: null,
    inReplyTo: null,
    addresses: { from: null, sender: null, 'reply-to': null, to: null, cc: null, bcc: null },
  };
  for (const field of fields) {
    const name = field.name.toLowerCase();
    switch (name) {
      case 'date':
        data.date = nulAs80(field.value);
        break;
      case 'subject':
        // forHumans makes its NULs 0x80.
        data.subject = field.value;
        break;
      case 'message-id':
        data.messageId = nulAs80(field.value);
        break;
      case 'in-reply-to':
        data.inReplyTo = nulAs80(field.value);
        break;
      default:
        if ((ADDRESS_FIELDS as readonly string[]).includes(name)) {
          const key = name as AddressField;
          const merged = [...(data.addresses[key] ?? []), ...parseAddressList(nulAs80(field.value))];
          data.addresses[key] = merged.length > 0 ? merged : null;
        }
    }
  }
  return data;
}

function addressList(list: EnvelopeAddress[] | null): ImapValue {
  // A header with no address in it is NIL, as no header at all.
  if (!list || list.length === 0) return null;
  return list.map((a) => [a.name === null ? null : bytes(forHumans(a.name)), nstring(a.route), nstring(a.mailbox), nstring(a.domain)]);
}

const nstring = (value: string | null): ImapValue => (value === null ? null : bytes(value));
const nstringOneLine = (value: string | null): ImapValue => (value === null ? null : bytes(oneLine(value)));

/** The ENVELOPE value of parsed envelope fields; sender and reply-to default to from. */
export function envelopeValue(data: EnvelopeData): ImapValue {
  const a = data.addresses;
  return [
    nstringOneLine(data.date),
    data.subject === null ? null : bytes(forHumans(data.subject)),
    addressList(a.from),
    addressList(a.sender ?? a.from),
    addressList(a['reply-to'] ?? a.from),
    addressList(a.to),
    addressList(a.cc),
    addressList(a.bcc),
    nstringOneLine(data.inReplyTo),
    nstringOneLine(data.messageId),
  ];
}

/** ENVELOPE of a message from its header block: `header` may be the whole message or just its header. */
export function envelope(header: Buffer, start = 0, end = header.length): ImapValue {
  return envelopeValue(envelopeData(readHeaderFields(header, start, end)));
}
