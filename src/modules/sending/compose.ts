import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import { buildHeaderValue, encodeWord, foldLines } from 'nodemailer/lib/mime-funcs/index.js';
import type { ParsedAttachment } from '../messages/mime.js';

export interface ComposeInput {
  messageId: string;
  from: { name: string; address: string };
  to: string[];
  cc: string[];
  /** Written as a Bcc field only for a draft's source (a message sent carries its Bcc in the envelope alone). */
  bcc?: string[] | undefined;
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

/** Encoded words of at most this many characters each, as nodemailer makes them (RFC 2047 section 2 allows 75). */
const ENCODED_WORD_LENGTH = 52;

/**
 * Every line break as CRLF. A bare CR or LF would be signed as it is, but the SMTP client sends each as CRLF
 * (and a receiver may read either as a line end), so the signature would not verify anywhere: the message is
 * made of CRLF lines only, and what is stored, signed and sent is the same bytes.
 */
export const crlfText = (text: string): string => (/\r(?!\n)|(?<!\r)\n/.test(text) ? text.replace(/\r\n|\r|\n/g, '\r\n') : text);

/**
 * Text a reader's decoder would take for an encoded word (`=?UTF-8?B?…?=`): nodemailer passes a valid one through
 * as it is, so a subject or name that shows one literally would decode to other text. Such text goes out as
 * encoded words itself, which decode back to exactly it.
 */
const looksEncoded = (text: string) => text.includes('=?');
const asEncodedWords = (text: string) => encodeWord(text, 'Q', ENCODED_WORD_LENGTH);

/**
 * The fields nodemailer cannot write as they must be, written here: a Subject or From name that looks like an
 * encoded word (above), and an empty Subject, which nodemailer leaves out although every send has one
 * (docs/api.md; RFC 5322 allows it empty). They go first; the order of fields carries no meaning.
 */
function ownFields(input: ComposeInput): { subject: boolean; from: boolean; lines: string } {
  const fields: string[] = [];
  const subject = input.subject === '' || looksEncoded(input.subject);
  const from = looksEncoded(input.from.name);
  if (subject) fields.push(input.subject === '' ? 'Subject: ' : foldLines(`Subject: ${asEncodedWords(input.subject)}`, 76));
  if (from) fields.push(foldLines(`From: ${asEncodedWords(input.from.name)} <${input.from.address}>`, 76));
  return { subject, from, lines: fields.map((f) => `${f}\r\n`).join('') };
}

/** An empty body is still a part, as no bytes (nodemailer drops an empty string): with HTML the message is multipart/alternative whatever the text. */
const bodyPart = (text: string): string | Buffer => (text === '' ? Buffer.alloc(0) : crlfText(text));

/** Build the RFC 5322 message (nodemailer's composer: encodings, line lengths, multipart/alternative). */
export async function composeMessage(input: ComposeInput): Promise<Buffer> {
  const own = ownFields(input);
  const composer = new MailComposer({
    messageId: `<${input.messageId}>`,
    date: input.date,
    ...(own.from ? {} : { from: input.from.name ? { name: input.from.name, address: input.from.address } : input.from.address }),
    to: input.to,
    ...(input.cc.length > 0 ? { cc: input.cc } : {}),
    ...(input.bcc && input.bcc.length > 0 ? { bcc: input.bcc } : {}),
    ...(input.replyTo ? { replyTo: input.replyTo } : {}),
    ...(own.subject ? {} : { subject: input.subject }),
    text: bodyPart(input.text),
    ...(input.html !== undefined ? { html: bodyPart(input.html) } : {}),
    ...(input.inReplyTo ? { inReplyTo: `<${input.inReplyTo}>` } : {}),
    ...(input.references && input.references.length > 0 ? { references: input.references.map((r) => `<${r}>`) } : {}),
    ...(input.attachments && input.attachments.length > 0 ? { attachments: input.attachments.map(composerAttachment) } : {}),
  });
  const node = composer.compile();
  node.keepBcc = input.bcc !== undefined && input.bcc.length > 0;
  const raw = await node.build();
  return own.lines === '' ? raw : Buffer.concat([Buffer.from(own.lines, 'latin1'), raw]);
}

const BASE64_LINE = 76;

/** The content as base64 in lines of 76 characters (RFC 2045 section 6.8), copied line by line out of one encoding. */
function base64Lines(content: Buffer): Buffer {
  const encoded = Buffer.from(content.toString('base64'), 'latin1');
  const breaks = Math.max(0, Math.ceil(encoded.length / BASE64_LINE) - 1);
  const out = Buffer.allocUnsafe(encoded.length + 2 * breaks);
  let at = 0;
  for (let from = 0; from < encoded.length; from += BASE64_LINE) {
    if (from > 0) {
      out[at++] = 0x0d;
      out[at++] = 0x0a;
    }
    at += encoded.copy(out, at, from, Math.min(from + BASE64_LINE, encoded.length));
  }
  return out;
}

/**
 * One MIME part, written here rather than by the composer, which puts a non-ASCII name into Content-Type as
 * RFC 2047 words inside a quoted `name=` (no encoded word belongs in a quoted string, RFC 2047 section 5): both `name`
 * and `filename` are RFC 2231 parameters (`name*=utf-8''…`) when they are not plain ASCII. The content is base64
 * (binary-safe whatever the bytes), in 76-character lines.
 */
function composerAttachment(a: ParsedAttachment) {
  const disposition = a.inline ? 'inline' : 'attachment';
  const lines = [
    `Content-Type: ${buildHeaderValue({ value: a.contentType, params: { name: a.filename } })}`,
    'Content-Transfer-Encoding: base64',
    `Content-Disposition: ${buildHeaderValue({ value: disposition, params: { filename: a.filename } })}`,
    ...(a.contentId !== null ? [`Content-ID: <${a.contentId}>`] : []),
  ];
  const head = lines.map((line) => foldLines(line, 76)).join('\r\n');
  return {
    raw: Buffer.concat([Buffer.from(`${head}\r\n\r\n`, 'latin1'), base64Lines(a.content)]),
    // The composer sorts parts by these: an inline part with a Content-ID goes beside the HTML.
    contentType: a.contentType,
    contentDisposition: disposition,
    ...(a.contentId !== null ? { cid: a.contentId } : {}),
  };
}
