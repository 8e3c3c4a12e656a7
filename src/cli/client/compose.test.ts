import { describe, expect, it } from 'vitest';
import { draftTemplate, isEmptyDraft, parseDraftText } from './compose.js';

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
