import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import type { ParsedAttachment } from '../messages/mime.js';

export interface ComposeInput {
  messageId: string;
  from: { name: string; address: string };
  to: string[];
  cc: string[];
  replyTo?: string | undefined;
  subject: string;
  text: string;
  html?: string | undefined;
  inReplyTo?: string | undefined;
  references?: string[] | undefined;
  date: Date;
  /** Decoded and checked (attachments.ts); an inline one (with a Content-ID) goes beside the HTML in multipart/related. */
  attachments?: readonly ParsedAttachment[] | undefined;
}

/** Build the RFC 5322 message (nodemailer's composer: encodings, line lengths, multipart/alternative). */
export async function composeMessage(input: ComposeInput): Promise<Buffer> {
  const composer = new MailComposer({
    messageId: `<${input.messageId}>`,
    date: input.date,
    from: input.from.name ? { name: input.from.name, address: input.from.address } : input.from.address,
    to: input.to,
    ...(input.cc.length > 0 ? { cc: input.cc } : {}),
    ...(input.replyTo ? { replyTo: input.replyTo } : {}),
    subject: input.subject,
    text: input.text,
    ...(input.html !== undefined ? { html: input.html } : {}),
    ...(input.inReplyTo ? { inReplyTo: `<${input.inReplyTo}>` } : {}),
    ...(input.references && input.references.length > 0 ? { references: input.references.map((r) => `<${r}>`) } : {}),
    ...(input.attachments && input.attachments.length > 0 ? { attachments: input.attachments.map(composerAttachment) } : {}),
  });
  return composer.compile().build();
}

/** One MIME part, base64 (binary-safe whatever the bytes); the name RFC 2231-encoded by the composer when not ASCII. */
function composerAttachment(a: ParsedAttachment) {
  return {
    filename: a.filename,
    content: a.content,
    contentType: a.contentType,
    contentTransferEncoding: 'base64' as const,
    contentDisposition: a.inline ? ('inline' as const) : ('attachment' as const),
    ...(a.contentId !== null ? { cid: a.contentId } : {}),
  };
}
