import { describe, expect, it } from 'vitest';
import type { Schema } from './api.types.js';
import { addressesIn, answerDraft, answerRecipients, answerSubject, FORWARD_MARKER, originalText, quotedOriginal } from './reply.js';

type MessageDetail = Schema<'Message'>;

const SELF = 'helpdesk@mailroom.localhost';

function message(fields: Partial<MessageDetail>): MessageDetail {
  return {
    message_id: 'msg_1',
    mailbox: SELF,
    direction: 'inbound',
    folder: 'inbox',
    read: true,
    flagged: false,
    answered: false,
    labels: [],
    thread_id: 'thr_1',
    from: { name: 'Alice Example', address: 'alice@sender.test' },
    to: [{ name: '', address: SELF }, { name: 'Bob', address: 'bob@sender.test' }],
    cc: [{ name: '', address: 'carol@sender.test' }, { name: '', address: SELF }],
    subject: 'Order 1234',
    date: '2026-11-21T07:17:12.000Z',
    snippet: '',
    size: 1,
    attachments: [],
    auth: { spf: 'none', dkim: 'none', dmarc: 'none' },
    internet_message_id: 'order-1234@sender.test',
    created_at: '2026-11-21T07:17:13.000Z',
    text: 'Hello,\n\nmy order has not arrived.\n> an older quote\n',
    html: null,
    headers: [],
    spam: null,
    ...fields,
  };
}

describe('answers to a message', () => {
  it('reads the addresses of a header field, names and groups aside', () => {
    expect(addressesIn('"Doe, Jane" <Jane@X.example>, bob@y.example; team: c@z.example')).toEqual(['jane@x.example', 'bob@y.example', 'c@z.example']);
    expect(addressesIn('undisclosed-recipients:;')).toEqual([]);
    expect(addressesIn('')).toEqual([]);
  });

  it('replies to Reply-To, else From; reply-all adds To and Cc but the mailbox; a forward starts with no one', () => {
    expect(answerRecipients(message({}), 'reply')).toEqual({ to: ['alice@sender.test'], cc: [] });
    const withReplyTo = message({ headers: [{ name: 'Reply-To', value: 'Help Desk <help@alice.test>' }] });
    expect(answerRecipients(withReplyTo, 'reply')).toEqual({ to: ['help@alice.test'], cc: [] });
    expect(answerRecipients(withReplyTo, 'reply-all')).toEqual({ to: ['help@alice.test', 'bob@sender.test'], cc: ['carol@sender.test'] });
    expect(answerRecipients(message({}), 'forward')).toEqual({ to: [], cc: [] });
    // One's own message: the answer goes to whom it went to.
    const own = message({ direction: 'outbound', from: { name: '', address: SELF }, to: [{ name: '', address: 'customer@example.com' }], cc: [] });
    expect(answerRecipients(own, 'reply')).toEqual({ to: ['customer@example.com'], cc: [] });
  });

  it('puts Re: or Fwd: in front of the subject once', () => {
    expect([answerSubject('Order', 'reply'), answerSubject('RE: Order', 'reply-all'), answerSubject('re:Order', 'reply')]).toEqual(['Re: Order', 'RE: Order', 're:Order']);
    expect([answerSubject('Order', 'forward'), answerSubject('Fwd: Order', 'forward'), answerSubject('FW: Order', 'forward'), answerSubject('Re: Order', 'forward')]).toEqual([
      'Fwd: Order',
      'Fwd: Order',
      'FW: Order',
      'Fwd: Re: Order',
    ]);
  });

  it('quotes a reply under who wrote it and when, and heads a forward with the original fields', () => {
    expect(quotedOriginal(message({}), 'reply')).toBe(
      'On Sat, 21 Nov 2026 07:17:12 GMT, Alice Example <alice@sender.test> wrote:\n> Hello,\n>\n> my order has not arrived.\n>> an older quote',
    );
    const forward = quotedOriginal(message({ attachments: [{ attachment_id: 'att_1', filename: 'receipt.pdf', content_type: 'application/pdf', size: 3, inline: false }] }), 'forward');
    expect(forward).toBe(
      [
        FORWARD_MARKER,
        'From: Alice Example <alice@sender.test>',
        'Date: Sat, 21 Nov 2026 07:17:12 GMT',
        'Subject: Order 1234',
        'To: helpdesk@mailroom.localhost, Bob <bob@sender.test>',
        'Cc: carol@sender.test, helpdesk@mailroom.localhost',
        'Attachments (not included): receipt.pdf',
        '',
        'Hello,\n\nmy order has not arrived.\n> an older quote',
      ].join('\n'),
    );
  });

  it('quotes the text of an HTML-only message line by line, and nothing a terminal would obey', () => {
    const html = '<html><style>p{}</style><body><p>Hello\n  there,</p><p>line<br>two &amp; more</p></body></html>';
    expect(originalText(message({ text: null, html }))).toBe('Hello there,\nline\ntwo & more');
    expect(originalText(message({ text: 'evil \u001b[2J text' }))).toBe('evil \ufffd[2J text');
  });

  it('puts the text given above the original, with a line to write on in the editor', () => {
    const m = message({});
    const quote = quotedOriginal(m, 'reply');
    expect(answerDraft(m, 'reply', {}, undefined, true).body).toBe(`\n\n${quote}`);
    expect(answerDraft(m, 'reply', {}, 'Thanks.', false)).toEqual({ to: ['alice@sender.test'], cc: [], bcc: [], subject: 'Re: Order 1234', body: `Thanks.\n\n${quote}` });
    expect(answerDraft(m, 'forward', { quote: false, to: ['Dave@example.com'], subject: 'See this' }, 'FYI', false)).toEqual({ to: ['dave@example.com'], cc: [], bcc: [], subject: 'See this', body: 'FYI' });
  });
});
