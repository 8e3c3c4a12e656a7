import { describe, expect, it } from 'vitest';
import { hashToken } from '../../lib/secrets.js';
import { checkDkim, checkReturnPathMx, checkReturnPathSpf, checkSpf, checkVerification, dkimTags, lookupMx, lookupTxt, summarize, type TxtLookup } from './dns-checks.js';

const values = (...v: string[]): TxtLookup => ({ kind: 'values', values: v });
const NONE: TxtLookup = { kind: 'none' };
const FAILED: TxtLookup = { kind: 'failed', code: 'ESERVFAIL' };

describe('lookupTxt', () => {
  it('joins character-strings, and tells no record from a DNS failure', async () => {
    const fail = (code: string) => () => Promise.reject(Object.assign(new Error(code), { code }));
    expect(await lookupTxt(() => Promise.resolve([['v=spf1 ', '-all'], ['b']]), 'x.example')).toEqual(values('v=spf1 -all', 'b'));
    expect(await lookupTxt(() => Promise.resolve([]), 'x.example')).toEqual(NONE);
    expect(await lookupTxt(fail('ENOTFOUND'), 'x.example')).toEqual(NONE);
    expect(await lookupTxt(fail('ENODATA'), 'x.example')).toEqual(NONE);
    expect(await lookupTxt(fail('ETIMEOUT'), 'x.example')).toEqual({ kind: 'failed', code: 'ETIMEOUT' });
    expect(await lookupTxt(() => Promise.reject(new Error('odd')), 'x.example')).toEqual({ kind: 'failed', code: 'EUNKNOWN' });
  });
});

describe('lookupMx', () => {
  it('gives each MX as `<preference> <host>`, most preferred first, and tells no record from a DNS failure', async () => {
    const answer = [
      { priority: 20, exchange: 'Backup.Example.' },
      { priority: 10, exchange: 'mx.example' },
    ];
    expect(await lookupMx(() => Promise.resolve(answer), 'x.example')).toEqual(values('10 mx.example', '20 backup.example'));
    expect(await lookupMx(() => Promise.resolve([]), 'x.example')).toEqual(NONE);
    expect(await lookupMx(() => Promise.reject(Object.assign(new Error('x'), { code: 'ENOTFOUND' })), 'x.example')).toEqual(NONE);
    expect(await lookupMx(() => Promise.reject(Object.assign(new Error('x'), { code: 'ESERVFAIL' })), 'x.example')).toEqual(FAILED);
  });
});

describe('checkVerification', () => {
  const hash = hashToken('tok');
  it.each([
    [values('other', 'mailroom-verification=tok'), 'ok', /holds this domain's token/],
    [values('mailroom-verification= tok '), 'ok', /token/],
    [values('mailroom-verification=old'), 'mismatch', /holds another token/],
    [values('v=spf1 -all'), 'mismatch', /hold no mailroom-verification= value/],
    [NONE, 'missing', /no TXT record at _mailroom-verification\.a\.example yet/],
    [FAILED, 'error', /DNS did not answer for _mailroom-verification\.a\.example \(ESERVFAIL\)/],
  ] as const)('%j → %s', (lookup, status, reason) => {
    const check = checkVerification('a.example', hash, lookup);
    expect(check.status).toBe(status);
    expect(check.reason).toMatch(reason);
    expect(check.found).toEqual(lookup.kind === 'values' ? lookup.values : null);
  });
});

describe('checkDkim', () => {
  const record = { record_name: 's._domainkey.a.example', record_value: 'v=DKIM1; k=rsa; p=KEY' };
  it.each([
    [values('v=DKIM1; k=rsa; p=KEY'), 'ok', /the one mail from this domain is signed with/],
    [values('v=DKIM1;p=K E\tY'), 'ok', /signed with/],
    [values('v=DKIM1; k=rsa; p=OTHER', 'v=DKIM1; k=rsa; p=KEY'), 'ok', /signed with/],
    [values('v=DKIM1; k=rsa; p=OTHER'), 'mismatch', /another public key/],
    [values('v=DKIM1; k=rsa; p='), 'mismatch', /revoked key/],
    [values('v=DKIM1; k=ed25519; p=KEY'), 'mismatch', /k=ed25519 is not rsa/],
    [values('hello'), 'mismatch', /no p= tag/],
    [NONE, 'missing', /signed with this key all the same, and receivers cannot check the signature/],
    [FAILED, 'error', /DNS did not answer/],
  ] as const)('%j → %s', (lookup, status, reason) => {
    const check = checkDkim(record, 'a.example', 'KEY', lookup);
    expect(check).toMatchObject({ status, expected: record.record_value, record_name: record.record_name });
    expect(check.reason).toMatch(reason);
  });

  it('reads tag lists as RFC 6376 writes them', () => {
    expect([...dkimTags(' V=DKIM1 ;  p = AB\r\n CD ; ;x')]).toEqual([['v', 'DKIM1'], ['p', 'ABCD']]);
  });
});

describe('checkSpf', () => {
  it.each([
    [values('google-site-verification=x', 'v=spf1 include:rp.example ~all'), 'ok', /includes rp\.example/, ['v=spf1 include:rp.example ~all']],
    [values('v=spf1 redirect=rp.example'), 'ok', /includes/, ['v=spf1 redirect=rp.example']],
    [values('v=spf1 include:_spf.google.com -all'), 'mismatch', /does not include rp\.example\. Not required: .*bounces\+…@rp\.example/, ['v=spf1 include:_spf.google.com -all']],
    [values('v=spf1 -all', 'V=SPF1 ~all'), 'error', /2 SPF records.*RFC 7208 §4\.5/, ['v=spf1 -all', 'V=SPF1 ~all']],
    [values('v=spf10 nonsense'), 'missing', /no SPF record at a\.example\. Not required/, null],
    [NONE, 'missing', /no SPF record/, null],
    [FAILED, 'error', /DNS did not answer/, null],
  ] as const)('%j → %s', (lookup, status, reason, found) => {
    const check = checkSpf('a.example', 'rp.example', lookup);
    expect(check).toMatchObject({ status, record_name: 'a.example', expected: 'v=spf1 include:rp.example ~all', found });
    expect(check.reason).toMatch(reason);
  });
});

describe('checkSpf with a return-path host', () => {
  it('says the envelope sender is at the host, and without one names the option', () => {
    expect(checkSpf('a.example', 'rp.example', NONE, 'bounces.a.example').reason).toMatch(/envelope sender at its return-path host bounces\.a\.example once that is verified/);
    expect(checkSpf('a.example', 'rp.example', NONE).reason).toMatch(/set a return_path_host under it/);
  });
});

describe('checkReturnPathMx', () => {
  it.each([
    [values('10 mx.rp.example'), 'ok', /is Mailroom's inbound host mx\.rp\.example/],
    [values('10 mx.rp.example', '20 mx.rp.example'), 'ok', /inbound host/],
    [values('10 mx.rp.example', '20 backup.other.example'), 'mismatch', /also has MX 20 backup\.other\.example/],
    [values('10 mail.other.example'), 'mismatch', /the MX of bounces\.a\.example is not mx\.rp\.example.*keeps the hosted return path/],
    [NONE, 'missing', /no MX record at bounces\.a\.example: bounces sent there would not reach Mailroom; publish MX 10 mx\.rp\.example/],
    [FAILED, 'error', /DNS did not answer for bounces\.a\.example \(ESERVFAIL\)/],
  ] as const)('%j → %s', (lookup, status, reason) => {
    const check = checkReturnPathMx('bounces.a.example', 'mx.rp.example', lookup);
    expect(check).toMatchObject({ status, record_name: 'bounces.a.example', record_type: 'MX', expected: '10 mx.rp.example', found: lookup.kind === 'values' ? lookup.values : null });
    expect(check.reason).toMatch(reason);
  });
});

describe('checkReturnPathSpf', () => {
  it.each([
    [values('other', 'v=spf1 include:rp.example ~all'), 'ok', /includes rp\.example, which authorizes Mailroom's sending/, ['v=spf1 include:rp.example ~all']],
    [values('v=spf1 redirect=rp.example'), 'ok', /includes/, ['v=spf1 redirect=rp.example']],
    [values('v=spf1 ip4:192.0.2.1 -all'), 'mismatch', /does not include rp\.example, so mail with its envelope sender there would fail SPF/, ['v=spf1 ip4:192.0.2.1 -all']],
    [values('v=spf1 include:rp.example ~all', 'v=spf1 -all'), 'mismatch', /2 SPF records/, ['v=spf1 include:rp.example ~all', 'v=spf1 -all']],
    [values('hello'), 'missing', /no SPF record at bounces\.a\.example/, null],
    [NONE, 'missing', /no SPF record/, null],
    [FAILED, 'error', /DNS did not answer/, null],
  ] as const)('%j → %s', (lookup, status, reason, found) => {
    const check = checkReturnPathSpf('bounces.a.example', 'rp.example', lookup);
    expect(check).toMatchObject({ status, record_name: 'bounces.a.example', record_type: 'TXT', expected: 'v=spf1 include:rp.example ~all', found });
    expect(check.reason).toMatch(reason);
  });
});

describe('summarize', () => {
  const hash = hashToken('tok');
  const record = { record_name: 's._domainkey.a.example', record_value: 'v=DKIM1; k=rsa; p=KEY' };
  const checks = (v: TxtLookup, d: TxtLookup) => ({
    verification: checkVerification('a.example', hash, v),
    dkim: checkDkim(record, 'a.example', 'KEY', d),
    spf: checkSpf('a.example', 'rp.example', NONE),
  });
  it('names what blocks verification first, then what a verified domain lacks', () => {
    expect(summarize('a.example', false, checks(NONE, NONE))).toBe('a.example is pending: the verification record is not published yet; DKIM: missing');
    expect(summarize('a.example', false, checks(values('mailroom-verification=x'), values(record.record_value)))).toBe(
      "a.example is pending: the verification record does not hold this domain's token",
    );
    expect(summarize('a.example', false, checks(FAILED, NONE))).toMatch(/^a\.example is pending: DNS did not answer/);
    expect(summarize('a.example', true, checks(NONE, values(record.record_value)))).toBe('a.example is verified and its DKIM record is published');
    expect(summarize('a.example', true, checks(NONE, NONE))).toMatch(/^a\.example is verified, but its DKIM record is missing: mail from it is signed/);
  });

  it('adds the return-path host, verified or what it lacks', () => {
    const withHost = (mx: TxtLookup) => ({
      ...checks(NONE, values(record.record_value)),
      return_path_mx: checkReturnPathMx('bounces.a.example', 'mx.rp.example', mx),
      return_path_spf: checkReturnPathSpf('bounces.a.example', 'rp.example', values('v=spf1 include:rp.example ~all')),
    });
    expect(summarize('a.example', true, withHost(values('10 mx.rp.example')), true)).toBe('a.example is verified and its DKIM record is published; its return path bounces.a.example is verified');
    expect(summarize('a.example', true, withHost(NONE), false)).toBe(
      'a.example is verified and its DKIM record is published; its return path bounces.a.example is not verified (MX: missing, SPF: ok), so mail keeps the hosted one',
    );
  });
});
