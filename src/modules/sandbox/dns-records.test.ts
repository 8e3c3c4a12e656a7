import { describe, expect, it } from 'vitest';
import { DomainError } from '../../lib/errors.js';
import { parseRecord, toAnswer } from './dns-records.js';

const refusal = (input: { name: string; type: string; value: string }): string => {
  try {
    parseRecord(input);
  } catch (err) {
    if (err instanceof DomainError) return `${err.code}: ${err.message}`;
    throw err;
  }
  throw new Error('accepted');
};

describe('sandbox DNS records', () => {
  it.each([
    [{ name: 'Mx.Acme.Example.', type: 'a', value: ' 192.0.2.1 ' }, { name: 'mx.acme.example', type: 'A', value: '192.0.2.1' }],
    [{ name: 'mx.acme.example', type: 'AAAA', value: '2001:DB8::0:1' }, { name: 'mx.acme.example', type: 'AAAA', value: '2001:db8::1' }],
    [{ name: 'v6.example', type: 'AAAA', value: '::ffff:192.0.2.1' }, { name: 'v6.example', type: 'AAAA', value: '::ffff:c000:201' }],
    [{ name: 'acme.example', type: 'MX', value: '010   MX.acme.example.' }, { name: 'acme.example', type: 'MX', value: '10 mx.acme.example' }],
    [{ name: 'nomail.example', type: 'MX', value: '0 .' }, { name: 'nomail.example', type: 'MX', value: '0 .' }],
    [{ name: 'www.acme.example', type: 'cname', value: 'Acme.Example.' }, { name: 'www.acme.example', type: 'CNAME', value: 'acme.example' }],
    [{ name: '_dmarc.acme.example', type: 'TXT', value: '"v=DMARC1; p=none"' }, { name: '_dmarc.acme.example', type: 'TXT', value: 'v=DMARC1; p=none' }],
    [{ name: 'mr202611._domainkey.acme.example', type: 'TXT', value: 'v=DKIM1; k=rsa; p=MIIB' }, { name: 'mr202611._domainkey.acme.example', type: 'TXT', value: 'v=DKIM1; k=rsa; p=MIIB' }],
  ])('%j → %j', (input, expected) => {
    expect(parseRecord(input)).toEqual(expected);
  });

  it.each([
    [{ name: 'a b.example', type: 'A', value: '192.0.2.1' }, /^invalid_dns_record: name:/],
    [{ name: `${'a'.repeat(64)}.example`, type: 'A', value: '192.0.2.1' }, /^invalid_dns_record: name:/],
    [{ name: '-a.example', type: 'A', value: '192.0.2.1' }, /^invalid_dns_record: name:/],
    [{ name: 'a.example', type: 'NS', value: 'ns.example' }, /^invalid_dns_record: type: 'NS' is not one of A, AAAA, CNAME, MX, TXT/],
    [{ name: 'a.example', type: 'A', value: '2001:db8::1' }, /value: .* is not an IPv4 address/],
    [{ name: 'a.example', type: 'AAAA', value: '192.0.2.1' }, /value: .* is not an IPv6 address/],
    [{ name: 'a.example', type: 'MX', value: '70000 mx.example' }, /value: .* "PRIORITY HOST"/],
    [{ name: 'a.example', type: 'MX', value: '10 bad host' }, /value: .* "PRIORITY HOST"/],
    [{ name: 'a.example', type: 'CNAME', value: 'not a name' }, /value: 'not a name' is not a DNS name/],
    [{ name: 'a.example', type: 'TXT', value: '""' }, /value: .* text of 1 to 2048 characters/],
    [{ name: 'a.example', type: 'TXT', value: 'x'.repeat(2049) }, /text of 1 to 2048 characters/],
    [{ name: 'a.example', type: 'TXT', value: 'a\tb' }, /without control characters/],
  ])('refuses %j', (input, expected) => {
    expect(refusal(input)).toMatch(expected);
  });

  it('turns stored records into answers', () => {
    expect(toAnswer({ name: 'a.example', type: 'MX', value: '10 mx.a.example' })).toEqual({ name: 'a.example', type: 'MX', priority: 10, exchange: 'mx.a.example' });
    expect(toAnswer({ name: 'a.example', type: 'MX', value: '0 .' })).toEqual({ name: 'a.example', type: 'MX', priority: 0, exchange: '' });
    expect(toAnswer({ name: 'a.example', type: 'CNAME', value: 'b.example' })).toEqual({ name: 'a.example', type: 'CNAME', target: 'b.example' });
    expect(toAnswer({ name: 'a.example', type: 'TXT', value: 'x y' })).toEqual({ name: 'a.example', type: 'TXT', text: 'x y' });
    expect(toAnswer({ name: 'a.example', type: 'AAAA', value: '2001:db8::1' })).toEqual({ name: 'a.example', type: 'AAAA', address: '2001:db8::1' });
  });
});
