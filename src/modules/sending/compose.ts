import MailComposer from 'nodemailer/lib/mail-composer/index.js';

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
  });
  return composer.compile().build();
}
