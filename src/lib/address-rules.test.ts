import { describe, expect, it } from 'vitest';
import { createAddressPolicy, parseAllowList, refusalReason } from './address-rules.js';

describe('refusalReason', () => {
  it.each([
    // Global unicast: accepted.
    ['8.8.8.8', null],
    ['93.184.216.34', null],
    ['1.1.1.1', null],
    ['2606:4700:4700::1111', null],
    ['2a00:1450:4001:81c::200e', null],
    ['::ffff:8.8.8.8', null], // IPv4-mapped: judged as the IPv4 address
    // IPv4 special purpose.
    ['0.0.0.0', 'an unspecified address'],
    ['0.255.255.255', 'an unspecified address'],
    ['10.1.2.3', 'a private address'],
    ['172.16.0.1', 'a private address'],
    ['172.32.0.1', null],
    ['192.168.0.1', 'a private address'],
    ['100.64.0.0', 'a carrier-grade NAT address (100.64.0.0/10)'],
    ['100.128.0.0', null],
    ['127.0.0.1', 'a loopback address'],
    ['169.254.169.254', 'a link-local address'],
    ['192.0.0.170', 'an IETF protocol assignment (192.0.0.0/24)'],
    ['192.0.2.255', 'a documentation address (192.0.2.0/24)'],
    ['198.51.100.1', 'a documentation address (198.51.100.0/24)'],
    ['203.0.113.1', 'a documentation address (203.0.113.0/24)'],
    ['198.18.0.0', 'a benchmarking address (198.18.0.0/15)'],
    ['198.20.0.0', null],
    ['192.88.99.1', 'a 6to4 relay anycast address (192.88.99.0/24)'],
    ['224.0.0.251', 'a multicast address'],
    ['240.0.0.1', 'a reserved address (240.0.0.0/4)'],
    ['255.255.255.255', 'the broadcast address'],
    // IPv6 special purpose.
    ['::', 'an unspecified address'],
    ['::1', 'a loopback address'],
    ['::ffff:127.0.0.1', 'a loopback address'],
    ['::ffff:7f00:1', 'a loopback address'],
    ['::ffff:169.254.169.254', 'a link-local address'],
    ['::127.0.0.1', 'an IPv4-compatible address (::/96)'],
    ['::7f00:1', 'an IPv4-compatible address (::/96)'],
    ['::ffff:0:7f00:1', 'an IPv4-translated address'],
    ['64:ff9b::8.8.8.8', 'a NAT64 address'],
    ['64:ff9b:1::1', 'a NAT64 address'],
    ['2002:c000:204::1', 'a 6to4 address (2002::/16)'],
    ['2001::1', 'a Teredo address (2001::/32)'],
    ['2001:2::1', 'a benchmarking address'],
    ['2001:db8::1', 'a documentation address (2001:db8::/32)'],
    ['3fff:fff::1', 'a documentation address (3fff::/20)'],
    ['fc00::1', 'a unique-local address (fc00::/7)'],
    ['fdff::1', 'a unique-local address (fc00::/7)'],
    ['fe80::1', 'a link-local address'],
    ['fec0::1', 'a site-local address (fec0::/10)'],
    ['ff05::2', 'a multicast address'],
    ['100::1', 'a discard-only address (100::/64)'],
    ['5f00::1', 'a segment-routing SID (5f00::/16)'],
    ['4000::1', 'not a global unicast address (outside 2000::/3)'],
    ['1::1', 'not a global unicast address (outside 2000::/3)'],
    ['example.com', 'not an IP address'],
  ])('%s → %s', (address, reason) => {
    expect(refusalReason(address)).toBe(reason);
  });
});

describe('parseAllowList', () => {
  it('reads IPv4 and IPv6 CIDRs and names a bad one', () => {
    expect(parseAllowList(['127.0.0.0/8', 'fd00::/8'], 'MAILROOM_WEBHOOK_ALLOW_CIDRS')).toHaveLength(2);
    expect(() => parseAllowList(['300.0.0.0/8'], 'MAILROOM_WEBHOOK_ALLOW_CIDRS')).toThrow("MAILROOM_WEBHOOK_ALLOW_CIDRS: '300.0.0.0/8' is not a CIDR");
  });
});

describe('createAddressPolicy', () => {
  it('exempts the allow list, IPv4-mapped forms included, and nothing else', () => {
    const policy = createAddressPolicy(['127.0.0.0/8'], 'MAILROOM_DELIVERY_ALLOW_CIDRS');
    expect(policy.refusal('127.0.0.1')).toBeNull();
    expect(policy.refusal('::ffff:127.0.0.1')).toBeNull();
    expect(policy.refusal('10.0.0.1')).toBe('a private address');
    expect(policy.refusal('::1')).toBe('a loopback address');
    expect(policy.refusal('8.8.8.8')).toBeNull();
    expect(createAddressPolicy([], 'X').refusal('127.0.0.1')).toBe('a loopback address');
    expect(() => createAddressPolicy(['nonsense'], 'MAILROOM_DELIVERY_ALLOW_CIDRS')).toThrow("MAILROOM_DELIVERY_ALLOW_CIDRS: 'nonsense' is not a CIDR");
  });
});
