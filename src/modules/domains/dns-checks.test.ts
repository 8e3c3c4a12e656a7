import { describe, expect, it } from 'vitest';
import { hashToken } from '../../lib/secrets.js';
import { checkDkim, checkSpf, checkVerification, dkimTags, lookupTxt, summarize, type TxtLookup } from './dns-checks.js';

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
});
