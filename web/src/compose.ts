import { longDate } from './format';
import { textToHtml } from './htmltext';
import { sanitizeHtml } from './sanitize';
import type { ComposeMode } from './router';
import type { DraftFields } from './sending';
import type { FullMessage } from './types';

// How an answer or a forward starts, from the message it answers: what a Gmail or Fastmail user expects.

const REPLY_PREFIX = /^\s*re\s*:/i;
const FORWARD_PREFIX = /^\s*(fwd?|fw)\s*:/i;

export function replySubject(subject: string): string {
  return REPLY_PREFIX.test(subject) ? subject : `Re: ${subject}`;
}

export function forwardSubject(subject: string): string {
  return FORWARD_PREFIX.test(subject) ? subject : `Fwd: ${subject}`;
}

/** The message's text: its text part, or its HTML as text (parsed inert by DOMParser: nothing runs or loads). */
export function plainText(message: Pick<FullMessage, 'text' | 'html'>): string {
  if (message.text !== null) return message.text;
  if (message.html === null) return '';
  const doc = new DOMParser().parseFromString(message.html, 'text/html');
  for (const el of doc.querySelectorAll('script, style, head')) el.remove();
  for (const el of doc.querySelectorAll('br, p, div, li, tr, h1, h2, h3, h4, h5, h6')) el.append('\n');
  return (doc.body.textContent ?? '').replace(/\n{3,}/g, '\n\n').trim();
}

function sender(message: FullMessage): string {
  if (message.from === null) return '(no sender)';
  return message.from.name ? `${message.from.name} <${message.from.address}>` : message.from.address;
}

/** The first address of a header value such as `Name <a@b.example>, c@d.example`. */
function firstAddress(value: string): string | null {
  const open = value.indexOf('<');
  const close = open >= 0 ? value.indexOf('>', open) : -1;
  const candidate = (close > open ? value.slice(open + 1, close) : (value.split(/[,;]/)[0] ?? '')).trim();
  return candidate.includes('@') && !/\s/.test(candidate) ? candidate.toLowerCase() : null;
}

/** Who an answer goes to: the Reply-To of the original, else its sender; our own sent copy goes back to its recipients. */
function replyTargets(message: FullMessage): string[] {
  if (message.direction === 'outbound') return message.to.map((a) => a.address);
  const replyTo = message.headers.find((h) => h.name.toLowerCase() === 'reply-to');
  const address = (replyTo && firstAddress(replyTo.value)) ?? message.from?.address;
  return address ? [address] : [];
}

function unique(addresses: string[], without: Set<string>): string[] {
  const seen = new Set(without);
  return addresses.filter((a) => {
    const key = a.toLowerCase();
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function quoted(message: FullMessage): string {
  const lines = plainText(message).split('\n').map((line) => (line.startsWith('>') ? `>${line}` : `> ${line}`));
  return `\n\nOn ${longDate(message.date ?? message.created_at)}, ${sender(message)} wrote:\n${lines.join('\n')}\n`;
}

function forwarded(message: FullMessage): string {
  const head = [
    '---------- Forwarded message ----------',
    `From: ${sender(message)}`,
    `Date: ${longDate(message.date ?? message.created_at)}`,
    `Subject: ${message.subject}`,
    `To: ${message.to.map((a) => a.address).join(', ')}`,
    ...(message.cc.length > 0 ? [`Cc: ${message.cc.map((a) => a.address).join(', ')}`] : []),
  ];
  return `\n\n${head.join('\n')}\n\n${plainText(message)}\n`;
}

/**
 * The form of an answer (`reply`, reply to `all`) or a `forward` of `message`, sent from the mailbox that holds it
 * so the answer joins its thread (a thread belongs to one mailbox). A forward starts a conversation of its own.
 */
export function startFrom(message: FullMessage, mode: Exclude<ComposeMode, 'new'>): DraftFields {
  const self = new Set([message.mailbox.toLowerCase()]);
  const base = { mailbox: message.mailbox, bcc: '' };
  if (mode === 'forward') {
    return { ...base, to: '', cc: '', subject: forwardSubject(message.subject), body: forwarded(message), html: null, in_reply_to: null };
  }
  const targets = unique(replyTargets(message), self);
  const everyone = mode === 'all' && message.direction === 'inbound' ? [...targets, ...message.to.map((a) => a.address)] : targets;
  const to = unique(everyone, self);
  const cc = mode === 'all' ? unique(message.cc.map((a) => a.address), new Set([...self, ...to])) : [];
  return { ...base, to: to.join(', '), cc: cc.join(', '), subject: replySubject(message.subject), body: quoted(message), html: null, in_reply_to: message.message_id };
}

export function emptyFields(mailbox: string): DraftFields {
  return { mailbox, to: '', cc: '', bcc: '', subject: '', body: '', html: null, in_reply_to: null };
}

/**
 * The HTML the editor starts with: the draft's own, else its text as HTML. A new message or an answer starts with an
 * empty line to write on, then the mailbox's signature, then the quote or the forwarded message.
 */
export function startingHtml(fields: DraftFields, signature: string | null): string {
  if (fields.html !== null) return fields.html;
  const text = textToHtml(fields.body);
  const blank = fields.body === '' || fields.body.startsWith('\n');
  const signed = signature === null ? '' : `<p></p>${sanitizeHtml(signature)}`;
  return blank ? `<p></p>${signed}${text ? `<p></p>${text}` : ''}` : `${signed}${text}`;
}

/** Error codes of a save or a send that are about the recipients, so they show by the recipient fields. */
export const RECIPIENT_ERRORS = new Set(['invalid_recipient', 'too_many_recipients', 'recipient_blocked']);
/** Error codes about the sender mailbox. */
export const SENDER_ERRORS = new Set(['domain_not_verified', 'mailbox_not_found']);
