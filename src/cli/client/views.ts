import type { Schema } from './api.types.js';

type Message = Schema<'MessageListItem'>;
import { formatAddress, formatBytes, relativeTime, renderFields, renderTable, safeText, trimEnd, type Style } from './format.js';

// Human views shared by more than one command (a message list is also a thread's body).

const correspondent = (m: Message): string =>
  m.direction === 'outbound' ? `to ${m.to[0]?.address ?? '-'}${m.to.length > 1 ? ` +${m.to.length - 1}` : ''}` : m.from?.name || m.from?.address || '-';

/** Messages as a table; `*` marks (and bold shows) the unread ones. */
export function messageTable(messages: readonly Message[], style: Style): string[] {
  return renderTable(
    messages,
    [
      { header: ' ', value: (m) => (m.read ? '' : '*'), style: (t) => style.bold(t) },
      { header: 'ID', value: (m) => m.message_id },
      { header: 'FROM', value: correspondent, max: 28, style: (t, m) => (m.read ? t : style.bold(t)) },
      { header: 'SUBJECT', value: (m) => m.subject || '(no subject)', max: 50, style: (t, m) => (m.read ? t : style.bold(t)) },
      { header: 'FOLDER', value: (m) => m.folder },
      { header: 'LABELS', value: (m) => m.labels.join(','), max: 30, style: (t) => style.cyan(t) },
      { header: 'RECEIVED', value: (m) => relativeTime(m.created_at), style: (t) => style.dim(t) },
    ],
    style,
  );
}

export function attachmentTable(attachments: readonly Schema<'Attachment'>[], style: Style): string[] {
  return renderTable(
    attachments,
    [
      { header: 'ID', value: (a) => a.attachment_id },
      { header: 'NAME', value: (a) => a.filename, max: 50 },
      { header: 'TYPE', value: (a) => a.content_type, max: 40 },
      { header: 'SIZE', value: (a) => formatBytes(a.size), align: 'right' },
      { header: 'INLINE', value: (a) => (a.inline ? 'yes' : '') },
    ],
    style,
  );
}

/** Delivery status in a colour that says how it went. */
export function statusStyle(style: Style): (status: string) => string {
  return (status) => {
    if (status === 'accepted' || status === 'verified') return style.green(status);
    if (status === 'failed') return style.red(status);
    if (status === 'unknown') return style.magenta(status);
    return style.yellow(status);
  };
}

/** What a send or a draft's send answered, in a line: a scheduled one says when it leaves and how to cancel it. */
export function queuedLine(queued: { message_id: string; status: string; send_at?: string }): string {
  if (queued.status === 'scheduled' && queued.send_at !== undefined) {
    return `${queued.message_id} is scheduled for ${queued.send_at} (mailroom messages cancel ${queued.message_id} cancels it)`;
  }
  return `${queued.message_id} is ${queued.status} (mailroom sent shows its delivery)`;
}

/** One message: its fields, its attachments, optionally its header fields, then its body. */
export function messageView(m: Schema<'Message'>, style: Style, options: { html?: boolean; headers?: boolean }): string[] {
  const lines = renderFields(
    [
      ['Message', m.message_id],
      ['Mailbox', m.mailbox],
      ['Folder', `${m.folder}${m.read ? '' : ' (unread)'}`],
      ['From', formatAddress(m.from)],
      ['To', m.to.map(formatAddress).join(', ') || '-'],
      ['Cc', m.cc.length > 0 ? m.cc.map(formatAddress).join(', ') : null],
      ['Subject', m.subject || '(no subject)'],
      ['Date', m.date ? `${m.date} (${relativeTime(m.date)})` : null],
      ['Labels', m.labels.length > 0 ? m.labels.join(', ') : null],
      ['Thread', m.thread_id],
      ['Auth', m.direction === 'inbound' ? `spf=${m.auth.spf} dkim=${m.auth.dkim} dmarc=${m.auth.dmarc}` : null],
      ['Delivery', m.status ?? null],
      ['Send at', m.send_at ?? null],
      ['Last error', m.last_error ?? null],
    ],
    style,
  );
  if (m.recipients && m.recipients.length > 0) {
    const table = renderTable(
      m.recipients,
      [
        { header: 'RECIPIENT', value: (r) => r.address },
        { header: 'STATUS', value: (r) => r.status, style: statusStyle(style) },
        { header: 'LAST REPLY', value: (r) => r.response ?? '', max: 60 },
      ],
      style,
    );
    lines.push('', style.bold('Recipients'), ...table.map((l) => `  ${l}`));
  }
  if (m.attachments.length > 0) lines.push('', style.bold('Attachments'), ...attachmentTable(m.attachments, style).map((l) => `  ${l}`));
  if (options.headers) {
    lines.push('', style.bold('Header fields'));
    for (const h of m.headers) lines.push(`  ${safeText(`${h.name}: ${h.value}`).replace(/\n/g, ' ')}`);
  }
  let body: string;
  if (options.html) body = m.html ?? '(this message has no HTML body)';
  else body = m.text ?? (m.html !== null ? '(this message has only an HTML body: --html shows it)' : '(no body)');
  lines.push('', trimEnd(safeText(body), '\n'));
  return lines;
}

/** A thread: its fields, then its messages oldest first. */
export function threadView(t: Schema<'ThreadDetail'>, style: Style): string[] {
  return [
    ...renderFields(
      [
        ['Thread', t.thread_id],
        ['Mailbox', t.mailbox],
        ['Subject', t.subject || '(no subject)'],
        ['Messages', `${t.message_count}${t.unread_count > 0 ? ` (${t.unread_count} unread)` : ''}`],
        ['Labels', t.labels.length > 0 ? t.labels.join(', ') : null],
        ['Participants', t.participants.join(', ')],
        ['Last message', relativeTime(t.last_message_at)],
      ],
      style,
    ),
    '',
    ...messageTable(t.messages, style),
  ];
}
