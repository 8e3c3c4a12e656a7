import { isIPv4, isIPv6 } from 'node:net';
import ipaddr from 'ipaddr.js';
import { invalid } from '../../lib/errors.js';

/** The record types the sandbox's DNS server answers: what mail, verification and webhooks look up. */
export const RECORD_TYPES = ['A', 'AAAA', 'CNAME', 'MX', 'TXT'] as const;
export type RecordType = (typeof RECORD_TYPES)[number];

/** A TXT value's longest form here: a 4096-bit DKIM key (about 800 characters) with room to spare. */
export const MAX_TXT_LENGTH = 2048;
/** RFC 1035 section 2.3.4: a name of at most 253 characters in its text form, labels of at most 63. */
const MAX_NAME_LENGTH = 253;
/** Labels of letters, digits and hyphens, and an underscore where the mail records use one (`_dmarc`, `_domainkey`). */
const NAME = /^([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?\.)*[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/;
const MAX_MX_PRIORITY = 65535;

/** One record as published: the normalized name, type and value (the text the user reads back). */
export interface DnsRecordInput {
  name: string;
  type: RecordType;
  value: string;
}

/** A record as the DNS server puts it in an answer. */
export type DnsAnswer =
  | { name: string; type: 'A' | 'AAAA'; address: string }
  | { name: string; type: 'CNAME'; target: string }
  | { name: string; type: 'MX'; priority: number; exchange: string }
  | { name: string; type: 'TXT'; text: string };

/** A host name as DNS compares it: lower case, without the final dot; 400 naming `field` when it is none. */
export function normalizeName(raw: string, field = 'name'): string {
  const name = raw.trim().toLowerCase().replace(/\.$/, '');
  if (name.length === 0 || name.length > MAX_NAME_LENGTH || !NAME.test(name)) {
    throw invalid('invalid_dns_record', `${field}: '${raw.slice(0, 300)}' is not a DNS name`);
  }
  return name;
}

export function normalizeType(raw: string): RecordType {
  const type = RECORD_TYPES.find((t) => t === raw.trim().toUpperCase());
  if (!type) throw invalid('invalid_dns_record', `type: '${raw.slice(0, 20)}' is not one of ${RECORD_TYPES.join(', ')}`);
  return type;
}

function refuse(type: RecordType, raw: string, why: string): never {
  throw invalid('invalid_dns_record', `value: '${raw.slice(0, 300)}' is not ${why} (a ${type} record)`);
}

/** The value in the form it is stored and shown: addresses canonical, names without the final dot. */
export function normalizeValue(type: RecordType, raw: string): string {
  const value = raw.trim();
  switch (type) {
    case 'A':
      if (!isIPv4(value)) refuse(type, raw, 'an IPv4 address');
      return value;
    case 'AAAA':
      // RFC 5952 form: an embedded IPv4 tail (`::ffff:1.2.3.4`) written in hexadecimal groups, as the wire form holds it.
      if (!isIPv6(value)) refuse(type, raw, 'an IPv6 address');
      return ipaddr.IPv6.parse(value).toRFC5952String();
    case 'CNAME':
      return normalizeName(value, 'value');
    case 'MX': {
      const match = /^(\d{1,5})\s+(\S+)$/.exec(value);
      if (!match || Number(match[1]) > MAX_MX_PRIORITY) refuse(type, raw, '"PRIORITY HOST" such as "10 mx.example.com"');
      // RFC 7505: a null MX ("0 .") says the domain takes no mail.
      const host = match[2] === '.' ? '.' : normalizeName(match[2]!, 'value');
      return `${Number(match[1])} ${host}`;
    }
    case 'TXT': {
      // A value copied from a zone file or a DNS console keeps its quotes; the record is what is inside them.
      const text = value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value;
      if (text.length === 0 || text.length > MAX_TXT_LENGTH) refuse(type, raw, `text of 1 to ${MAX_TXT_LENGTH} characters`);
      // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
      if (/[\u0000-\u001f\u007f]/.test(text)) refuse(type, raw, 'text without control characters');
      return text;
    }
  }
}

/** Check and normalize a record as given. */
export function parseRecord(input: { name: string; type: string; value: string }): DnsRecordInput {
  const type = normalizeType(input.type);
  return { name: normalizeName(input.name), type, value: normalizeValue(type, input.value) };
}

/** A stored record (already normalized) as the DNS server answers it. */
export function toAnswer(record: { name: string; type: string; value: string }): DnsAnswer {
  const { name, value } = record;
  switch (record.type) {
    case 'A':
    case 'AAAA':
      return { name, type: record.type, address: value };
    case 'CNAME':
      return { name, type: 'CNAME', target: value };
    case 'MX': {
      const [priority = '0', exchange = '.'] = value.split(' ');
      return { name, type: 'MX', priority: Number(priority), exchange: exchange === '.' ? '' : exchange };
    }
    default:
      return { name, type: 'TXT', text: value };
  }
}
