// BODYSTRUCTURE and BODY (RFC 3501 section 7.4.2) of a parsed MIME tree, written as Dovecot 2.3 writes them:
// type and subtype as the header spells them (defaults in lower case), parameters as written (RFC 2231 pieces
// joined but not decoded), text/* without charset gets "charset" "us-ascii", md5 is Content-MD5 as written.
// Sizes are the stored bytes: we serve them unchanged, so a message stored with bare LFs has smaller sizes than
// Dovecot reports (Dovecot serves and counts such lines with CRLF).
import { envelopeData, envelopeValue } from './envelope.js';
import { readHeaderFields } from './header-fields.js';
import { bytes, oneLine, withoutNul } from './imap-strings.js';
import type { MimePart } from './mime-parser.js';
import { Rfc822Reader, isAtext, parseParams } from './rfc822-tokens.js';
import type { ImapValue } from './types.js';

/** The Content-* fields of one part. */
export interface PartFields {
  type: string | null;
  subtype: string | null;
  params: Array<[string, string]>;
  id: string | null;
  description: string | null;
  encoding: string | null;
  md5: string | null;
  disposition: string | null;
  dispositionParams: Array<[string, string]> | null;
  language: string[] | null;
  location: string | null;
}

const EMPTY_TEXT_PART: ImapValue = ['text', 'plain', ['charset', 'us-ascii'], null, null, '7bit', 0, 0];
const EMPTY_TEXT_PART_EXTENDED: ImapValue = [...EMPTY_TEXT_PART, null, null, null, null];

/** The Content-* fields of `part` (all absent unless the part is MIME). First field of each name wins. */
export function partFields(raw: Buffer, part: MimePart): PartFields {
  const f: PartFields = {
    type: null, subtype: null, params: [], id: null, description: null, encoding: null, md5: null,
    disposition: null, dispositionParams: null, language: null, location: null,
  };
  if (!part.isMime) return f;
  for (const field of readHeaderFields(raw, part.headerStart, part.bodyStart)) {
    const name = field.name.toLowerCase();
    if (!name.startsWith('content-')) continue;
    const value = field.value;
    switch (name.slice(8)) {
      case 'type':
        if (f.type === null) contentType(f, value);
        break;
      case 'transfer-encoding':
        if (f.encoding === null) f.encoding = transferEncoding(value);
        break;
      case 'id':
        f.id ??= withoutNul(value);
        break;
      case 'md5':
        f.md5 ??= withoutNul(value);
        break;
      case 'description':
        f.description ??= withoutNul(value);
        break;
      case 'location':
        f.location ??= withoutNul(value);
        break;
      case 'language':
        f.language ??= language(value);
        break;
      case 'disposition':
        // Dovecot looks at a later Content-Disposition while the first gave no parameters; kept for equal output.
        if (f.dispositionParams === null) disposition(f, value);
        break;
    }
  }
  return f;
}

function contentType(f: PartFields, value: string): void {
  const reader = new Rfc822Reader(value);
  const out: string[] = [];
  const ret = reader.contentType(out);
  const text = out.join('');
  const slash = text.indexOf('/');
  f.type = slash < 0 ? text : text.slice(0, slash);
  f.subtype = slash < 0 ? '' : text.slice(slash + 1);
  if (ret >= 0) f.params = parseParams(reader);
}

function transferEncoding(value: string): string | null {
  const reader = new Rfc822Reader(value);
  reader.skipLwsp();
  const out: string[] = [];
  const token = reader.mimeToken(out) >= 0 && reader.skipLwsp() === 0 ? out.join('') : '';
  return token === '' ? null : token;
}

function disposition(f: PartFields, value: string): void {
  const reader = new Rfc822Reader(value);
  reader.skipLwsp();
  const out: string[] = [];
  if (reader.mimeToken(out) < 0) return;
  f.disposition = out.join('');
  const params = parseParams(reader);
  f.dispositionParams = params.length > 0 ? params : null;
}

function language(value: string): string[] | null {
  const reader = new Rfc822Reader(value);
  const langs: string[] = [];
  reader.skipLwsp();
  for (;;) {
    const out: string[] = [];
    if (reader.end || !isAtext(reader.peek())) break;
    reader.atom(out);
    langs.push(out.join(''));
    if (reader.peek() !== 0x2c) break;
    reader.pos++;
    reader.skipLwsp();
  }
  return langs.length > 0 ? langs : null;
}

function params(list: Array<[string, string]> | null, defaultCharset: boolean): ImapValue {
  const out: ImapValue[] = [];
  for (const [key, value] of list ?? []) out.push(bytes(key), bytes(value));
  if (defaultCharset && !(list ?? []).some(([key]) => key.toLowerCase() === 'charset')) out.push('charset', 'us-ascii');
  return out.length > 0 ? out : null;
}

const nstringOneLine = (value: string | null): ImapValue => (value === null ? null : bytes(oneLine(value)));

function extension(f: PartFields): ImapValue[] {
  return [
    f.disposition === null ? null : [bytes(f.disposition), params(f.dispositionParams, false)],
    f.language === null ? null : f.language.map(bytes),
    nstringOneLine(f.location),
  ];
}

/** BODYSTRUCTURE (`extended`) or BODY of `part` of the message `raw`. */
export function bodyStructure(raw: Buffer, part: MimePart, extended: boolean): ImapValue {
  const f = partFields(raw, part);
  if (part.kind === 'multipart') {
    const children = part.children.length > 0 ? part.children.map((child) => bodyStructure(raw, child, extended)) : [extended ? EMPTY_TEXT_PART_EXTENDED : EMPTY_TEXT_PART];
    const out: ImapValue[] = [...children, bytes(f.subtype ?? '')];
    if (extended) out.push(params(f.params, false), ...extension(f));
    return out;
  }
  let text = false;
  const out: ImapValue[] = [];
  if (part.kind === 'message') out.push('message', 'rfc822');
  else if (isTruncated(part, f)) out.push('application', 'octet-stream');
  else if (f.type === null) {
    text = true;
    out.push('text', 'plain');
  } else {
    text = f.type.toLowerCase() === 'text';
    out.push(bytes(f.type), bytes(f.subtype ?? ''));
  }
  out.push(params(f.params, text), nstringOneLine(f.id), nstringOneLine(f.description), f.encoding === null ? '7bit' : bytes(f.encoding));
  out.push(part.bodyEnd - part.bodyStart);
  if (text) out.push(part.bodyLines);
  else if (part.kind === 'message') {
    const child = part.children[0] as MimePart;
    out.push(envelopeValue(envelopeData(readHeaderFields(raw, child.headerStart, child.bodyStart))), bodyStructure(raw, child, extended), part.bodyLines);
  }
  if (extended) out.push(nstringOneLine(f.md5), ...extension(f));
  return out;
}

/** A multipart or message/rfc822 (or a digest's untyped part) left whole because a limit was reached. */
function isTruncated(part: MimePart, f: PartFields): boolean {
  if (f.type === null) return part.parent?.digest === true;
  const type = f.type.toLowerCase();
  return (type === 'message' && (f.subtype ?? '').toLowerCase() === 'rfc822') || type === 'multipart';
}
