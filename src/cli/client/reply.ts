// `mailroom messages reply|reply-all|forward`: loaded only when one of them runs (messages.commands.ts), so that
// the other commands start without it.
import { htmlToText } from '../../lib/mail-text.js';
import type { Schema } from './api.types.js';
import { composedContent, draftTemplate, isEmptyDraft, parseDraftText, type ComposeOptions, type EditableDraft } from './compose.js';
import type { Context } from './context.js';
import { ApiError, CliError } from './errors.js';
import { formatAddress, safeText, trimEnd } from './format.js';
import { editText } from './prompt.js';

type MessageDetail = Schema<'Message'>;

export type AnswerKind = 'reply' | 'reply-all' | 'forward';

export interface AnswerOptions extends Omit<ComposeOptions, 'htmlFile'> {
  /** -e: open the editor even when the text is given. */
  editor?: boolean;
  /** false with --no-edit. */
  edit?: boolean;
  /** false with --no-quote. */
  quote?: boolean;
  draft?: boolean;
}

const REPLY_PREFIX = /^\s*re\s*:/i;
const FORWARD_PREFIX = /^\s*fwd?\s*:/i;
/** What Gmail and Thunderbird put above a forwarded message, so that readers and their clients recognise it. */
export const FORWARD_MARKER = '---------- Forwarded message ---------';

const unique = (addresses: readonly string[]): string[] => [...new Set(addresses.map((a) => a.toLowerCase()))];

/**
 * The addresses of a header field's value (`"Doe, Jane" <jane@x.example>, bob@y.example`), lower-cased: split at the
 * commas outside quotes and angle brackets, each the part in angle brackets or the whole. One pass, no backtracking.
 */
export function addressesIn(value: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quoted = false;
  let angle = false;
  for (const char of value) {
    if (char === '"' && !angle) quoted = !quoted;
    else if (char === '<' && !quoted) angle = true;
    else if (char === '>' && !quoted) angle = false;
    if ((char === ',' || char === ';') && !quoted && !angle) {
      parts.push(current);
      current = '';
    } else current += char;
  }
  parts.push(current);
  const addresses = parts.map((part) => {
    const open = part.lastIndexOf('<');
    const close = open === -1 ? -1 : part.indexOf('>', open);
    // A group (`team: a@x.example`) names itself before a colon.
    return (open !== -1 && close !== -1 ? part.slice(open + 1, close) : part.slice(part.lastIndexOf(':') + 1)).trim();
  });
  return unique(addresses.filter((a) => a.includes('@') && !/\s/.test(a)));
}

/**
 * Whom an answer goes to. A reply: the original's Reply-To, else its From; the answer to a message of one's own goes
 * to its recipients, as mail clients do. Reply-all adds the original's To and Cc, less the mailbox answering. A
 * forward starts with no one.
 */
export function answerRecipients(m: MessageDetail, kind: AnswerKind): { to: string[]; cc: string[] } {
  if (kind === 'forward') return { to: [], cc: [] };
  const self = m.mailbox.toLowerCase();
  const replyTo = addressesIn(m.headers.find((h) => h.name.toLowerCase() === 'reply-to')?.value ?? '');
  const own = m.direction === 'outbound' || m.from?.address === self;
  const direct = own ? m.to.map((a) => a.address) : replyTo.length > 0 ? replyTo : m.from ? [m.from.address] : [];
  if (kind === 'reply') return { to: unique(direct), cc: [] };
  const to = unique([...direct, ...m.to.map((a) => a.address)]).filter((a) => a !== self);
  return { to, cc: unique(m.cc.map((a) => a.address)).filter((a) => a !== self && !to.includes(a)) };
}

/** `Re: ` or `Fwd: ` in front of the original's subject, unless it starts with one already. */
export function answerSubject(subject: string, kind: AnswerKind): string {
  if (kind === 'forward') return FORWARD_PREFIX.test(subject) ? subject : `Fwd: ${subject}`;
  return REPLY_PREFIX.test(subject) ? subject : `Re: ${subject}`;
}

/** The text of an HTML body, keeping its line and paragraph breaks (which a quote needs, unlike a preview). */
function textOfHtml(html: string): string {
  // Source line breaks mean nothing in HTML; these elements end a line.
  const marked = html.replace(/\s+/g, ' ').replace(/<(br|\/p|\/div|\/li|\/tr|\/h[1-6]|\/blockquote)\b/gi, '\n<$1');
  return htmlToText(marked)
    .split('\n')
    .map((line) => line.trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** The original's text body, else the text of its HTML body; made safe to show (format.ts safeText). */
export function originalText(m: MessageDetail): string {
  const text = m.text ?? (m.html !== null ? textOfHtml(m.html) : '');
  return trimEnd(safeText(text), '\n');
}

const quoteLine = (line: string): string => (line === '' ? '>' : line.startsWith('>') ? `>${line}` : `> ${line}`);

/**
 * The original as an answer carries it: a reply quotes it under "On DATE, NAME wrote:", a forward puts the original's
 * fields above its text. Attachments are not forwarded (drafts have none); the block names them.
 */
export function quotedOriginal(m: MessageDetail, kind: AnswerKind): string {
  const date = new Date(m.date ?? m.created_at).toUTCString();
  const text = originalText(m);
  if (kind !== 'forward') return safeText([`On ${date}, ${m.from ? formatAddress(m.from) : 'an unknown sender'} wrote:`, ...(text === '' ? [] : text.split('\n').map(quoteLine))].join('\n'));
  const attachments = m.attachments.filter((a) => !a.inline).map((a) => a.filename);
  const fields: Array<[string, string]> = [
    ['From', formatAddress(m.from)],
    ['Date', date],
    ['Subject', m.subject],
    ['To', m.to.map(formatAddress).join(', ')],
    ['Cc', m.cc.map(formatAddress).join(', ')],
    ['Attachments (not included)', attachments.join(', ')],
  ];
  const header = fields.filter(([, value]) => value !== '').map(([name, value]) => `${name}: ${value}`);
  return safeText([FORWARD_MARKER, ...header, '', text].join('\n'));
}

/** The answer as the options make it: recipients added to the computed ones, their text above the original. */
export function answerDraft(m: MessageDetail, kind: AnswerKind, options: AnswerOptions, text: string | undefined, forEditor: boolean): EditableDraft {
  const computed = answerRecipients(m, kind);
  const quote = options.quote === false ? '' : quotedOriginal(m, kind);
  // In the editor, an empty line to write on comes first.
  const body = forEditor ? (quote === '' ? (text ?? '') : `${text ?? ''}\n\n${quote}`) : [text ?? '', quote].filter((part) => part !== '').join('\n\n');
  return {
    to: unique([...computed.to, ...(options.to ?? [])]),
    cc: unique([...computed.cc, ...(options.cc ?? [])]),
    bcc: unique(options.bcc ?? []),
    subject: options.subject ?? answerSubject(m.subject, kind),
    body,
  };
}

/** The answer as written in the editor; an unchanged or empty file sends (or saves) nothing. */
function edit(start: EditableDraft, mailbox: string, asDraft: boolean): EditableDraft {
  const nothing = asDraft ? 'nothing was saved' : 'nothing was sent';
  const template = draftTemplate(start, mailbox, `An empty or unchanged file ${asDraft ? 'saves' : 'sends'} nothing.`);
  const text = editText(template);
  if (text === template) throw new CliError(`the message was left unchanged; ${nothing}`);
  const edited = parseDraftText(text);
  if (isEmptyDraft(edited)) throw new CliError(`the message is empty; ${nothing}`);
  return { ...edited, body: edited.body.replace(/^\n+/, '') };
}

/**
 * Answer message `id`: made a draft that replies to it (so the server sets In-Reply-To and References and threads
 * it, as for `drafts create --in-reply-to`), then sent, unless `--draft`. A send the server refuses leaves the
 * draft, and says so.
 */
export async function answer(ctx: Context, kind: AnswerKind, id: string, options: AnswerOptions): Promise<void> {
  const api = ctx.api();
  const { body: text } = await composedContent(options);
  const original = await api.get('/app/api/messages/{message_id}', { path: { message_id: id } });
  const interactive = options.editor === true || (options.edit !== false && text === undefined);
  let message = answerDraft(original, kind, options, text, interactive);
  if (interactive) message = edit(message, original.mailbox, options.draft === true);
  if (options.draft !== true && message.to.length + message.cc.length + message.bcc.length === 0) {
    throw new CliError(`give at least one recipient (${interactive ? 'the To: line' : '--to'}); nothing was sent`);
  }
  const draft = await api.post('/app/api/drafts', { body: { mailbox: original.mailbox, ...message, in_reply_to: original.message_id } });
  if (options.draft === true) {
    ctx.show(draft, () => [`saved draft ${draft.draft_id} (mailroom drafts send ${draft.draft_id} sends it)`]);
    return;
  }
  let queued: Schema<'Queued'>;
  try {
    queued = await api.post('/app/api/drafts/{draft_id}/send', { path: { draft_id: draft.draft_id } });
  } catch (err) {
    if (err instanceof ApiError) throw new ApiError(err.status, err.code, `${err.detail} (the message is kept as draft ${draft.draft_id})`);
    throw err;
  }
  ctx.show(queued, () => [`${queued.message_id} is ${queued.status} (mailroom sent shows its delivery)`]);
}
