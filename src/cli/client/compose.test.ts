import { describe, expect, it } from 'vitest';
import { draftTemplate, isEmptyDraft, parseDraftText } from './compose.js';
import { safeFilename } from './download.js';
import { dispositionFilename, normaliseServer } from './http-client.js';

describe('the draft text the editor shows', () => {
  const draft = { to: ['a@example.com', 'b@example.org'], cc: [], bcc: ['c@example.com'], subject: 'Hello', body: 'Line one\n\nLine three' };

  it('reads back what it wrote', () => {
    expect(parseDraftText(draftTemplate(draft, 'me@mailroom.localhost'))).toEqual(draft);
  });

  it('takes fields in any case and order, drops comments, keeps the body as written but for its trailing newlines', () => {
    const text = 'subject:  Hi there \r\n# note\nCC: x@example.com,, y@example.com\r\n\r\n  indented\n\n\n';
    expect(parseDraftText(text)).toEqual({ to: [], cc: ['x@example.com', 'y@example.com'], bcc: [], subject: 'Hi there', body: '  indented' });
  });

  it('treats a text that starts with an empty line as all body, and refuses unknown fields', () => {
    expect(parseDraftText('\nTo: not a field here')).toMatchObject({ to: [], body: 'To: not a field here' });
    expect(() => parseDraftText('To: a@example.com\nFrom: me@example.com\n\nbody')).toThrow('line 2 of the draft is not one of To:, Cc:, Bcc:, Subject:');
  });

  it('knows an empty draft', () => {
    expect(isEmptyDraft(parseDraftText(''))).toBe(true);
    expect(isEmptyDraft(parseDraftText(draftTemplate({ to: [], cc: [], bcc: [], subject: '', body: '' }, 'me@x.example')))).toBe(true);
    expect(isEmptyDraft(parseDraftText('Subject: x'))).toBe(false);
  });
});

describe('file names from the server', () => {
  const cases: Array<[string | null, string]> = [
    ['receipt.pdf', 'receipt.pdf'],
    ['../../etc/passwd', 'passwd'],
    ['..\\..\\boot.ini', 'boot.ini'],
    ['..', 'fallback'],
    ['.bashrc', 'bashrc'],
    ['a\u001b[2Jb.txt', 'a_[2Jb.txt'],
    ['naïve résumé.txt', 'naïve résumé.txt'],
    [null, 'fallback'],
  ];
  it.each(cases)('%s → %s', (name, expected) => expect(safeFilename(name, 'fallback')).toBe(expected));

  it('reads Content-Disposition, preferring filename*', () => {
    expect(dispositionFilename(`attachment; filename="na_ve r_sum_.txt"; filename*=UTF-8''na%C3%AFve%20r%C3%A9sum%C3%A9.txt`)).toBe('naïve résumé.txt');
    expect(dispositionFilename('attachment; filename="quoted \\"name\\".txt"')).toBe('quoted "name".txt');
    expect(dispositionFilename('attachment; filename=plain.txt')).toBe('plain.txt');
    expect(dispositionFilename("attachment; filename=\"fallback.txt\"; filename*=UTF-8''%E0%A4%A")).toBe('fallback.txt');
    expect(dispositionFilename(null)).toBeNull();
  });
});

describe('normaliseServer', () => {
  it('keeps scheme, host, port and a path prefix, without a trailing slash', () => {
    expect(normaliseServer('http://127.0.0.1:8080/')).toBe('http://127.0.0.1:8080');
    expect(normaliseServer(' HTTPS://Mail.Example.com/mailroom// ')).toBe('https://mail.example.com/mailroom');
  });

  it('refuses what is not a plain http or https URL', () => {
    expect(() => normaliseServer('mail.example.com')).toThrow("--server 'mail.example.com' is not a URL");
    expect(() => normaliseServer('ftp://mail.example.com')).toThrow('must be an http:// or https:// URL');
    expect(() => normaliseServer('https://user:pw@mail.example.com')).toThrow('must not carry a user name or password');
    expect(() => normaliseServer('https://mail.example.com/?x=1')).toThrow('must not have a query or a fragment');
  });
});
