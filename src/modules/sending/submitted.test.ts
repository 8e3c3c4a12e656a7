import { describe, expect, it } from 'vitest';
import { prepareSubmitted } from './submitted.js';

const fill = { messageId: 'msg_1@acme.example', date: Date.UTC(2026, 10, 21, 12, 0, 0) };
const run = (text: string) => {
  const out = prepareSubmitted(Buffer.from(text, 'latin1'), fill);
  return { text: out.raw.toString('latin1'), messageId: out.messageId };
};

describe('prepareSubmitted', () => {
  it('removes every Bcc field with its folded lines, and nothing in the body', () => {
    const { text } = run('From: a@acme.example\r\nBcc: x@y.example,\r\n z@y.example\r\nTo: b@c.example\r\nbcc: w@y.example\r\nMessage-ID: <m@acme.example>\r\nDate: Mon, 02 Nov 2026 10:00:00 +0000\r\n\r\nBcc: in the body\r\n');
    expect(text).toBe('From: a@acme.example\r\nTo: b@c.example\r\nMessage-ID: <m@acme.example>\r\nDate: Mon, 02 Nov 2026 10:00:00 +0000\r\n\r\nBcc: in the body\r\n');
  });

  it('adds a missing Message-ID and Date on top, and keeps the ones given', () => {
    expect(run('From: a@acme.example\r\n\r\nhi\r\n')).toEqual({ text: 'Message-ID: <msg_1@acme.example>\r\nDate: Sat, 21 Nov 2026 12:00:00 +0000\r\nFrom: a@acme.example\r\n\r\nhi\r\n', messageId: 'msg_1@acme.example' });
    expect(run('Message-Id: <Their@host>\r\nFrom: a@acme.example\r\n\r\nhi\r\n')).toEqual({ text: 'Date: Sat, 21 Nov 2026 12:00:00 +0000\r\nMessage-Id: <Their@host>\r\nFrom: a@acme.example\r\n\r\nhi\r\n', messageId: 'Their@host' });
  });

  it('handles bare line feeds and a message without a body', () => {
    expect(run('From: a@acme.example\nBcc: x@y.example\n\nbody\n').text).toBe('Message-ID: <msg_1@acme.example>\nDate: Sat, 21 Nov 2026 12:00:00 +0000\nFrom: a@acme.example\n\nbody\n');
    expect(run('Bcc: x@y.example\r\nSubject: s\r\n').text).toBe('Message-ID: <msg_1@acme.example>\r\nDate: Sat, 21 Nov 2026 12:00:00 +0000\r\nSubject: s\r\n');
  });
});
