import { invalid, tooLarge, type DomainError } from '../../lib/errors.js';
import { hasInvisibleFormat } from '../../lib/mail-text.js';
import type { ParsedAttachment } from '../messages/mime.js';

/** The decoded bytes of one message's attachments, all together (a draft's too). */
export const MAX_ATTACHMENT_BYTES = 25 * 1024 * 1024;
/** Files per message or draft: as many as any mail client attaches, few enough that the list stays a list. */
export const MAX_ATTACHMENTS = 100;
export const MAX_FILENAME_LENGTH = 255;
const MAX_CONTENT_TYPE_LENGTH = 255;
const MAX_CONTENT_ID_LENGTH = 255;

/**
 * An attachment as a send takes it: `content` is base64 text from a JSON body, or the bytes themselves (a draft's
 * stored upload). `content_id` makes it an inline part the HTML references as `cid:<content_id>`.
 */
export interface AttachmentInput {
  filename: string;
  content_type: string;
  content: string | Buffer;
  content_id?: string | null | undefined;
}

/** RFC 6838 section 4.2 restricted names: `type/subtype`, no parameters. */
const CONTENT_TYPE = /^[a-z0-9][\w!#$&^.+-]*\/[a-z0-9][\w!#$&^.+-]*$/i;
/** Printable ASCII without angle brackets: what fits `Content-ID: <…>` as it is. */
const CONTENT_ID = /^[\x21-\x3b=\x3f-\x7e]+$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
// eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
const CONTROL = /[\x00-\x1f\x7f]/;

/** `where` names the field in errors: `attachments[2]`. */
export function checkFilename(filename: string, where: string): string {
  if (filename.length === 0 || filename.length > MAX_FILENAME_LENGTH) throw invalid('invalid_request', `${where}.filename must be 1–${MAX_FILENAME_LENGTH} characters`);
  if (CONTROL.test(filename)) throw invalid('invalid_request', `${where}.filename must not contain control characters (CR, LF, …)`);
  // Refused rather than stripped: the sender chose the name, and a name that reads otherwise than it is (`…‮fdp.exe`) is
  // better named again by them than silently changed into another.
  if (hasInvisibleFormat(filename)) {
    throw invalid('invalid_request', `${where}.filename must not contain bidirectional controls or invisible format characters (U+202E, U+200F, U+2066, zero-width space, …)`);
  }
  return filename;
}

export function checkContentType(contentType: string, where: string): string {
  if (contentType.length > MAX_CONTENT_TYPE_LENGTH || !CONTENT_TYPE.test(contentType)) {
    throw invalid('invalid_request', `${where}.content_type must be a media type as type/subtype (e.g. application/pdf), without parameters`);
  }
  return contentType.toLowerCase();
}

/** The id without the angle brackets a caller may have copied from a header; null when there is none. */
export function checkContentId(contentId: string | null | undefined, where: string): string | null {
  if (contentId === undefined || contentId === null) return null;
  const bare = contentId.replace(/^<(.*)>$/, '$1');
  if (bare.length === 0 || bare.length > MAX_CONTENT_ID_LENGTH || !CONTENT_ID.test(bare)) {
    throw invalid('invalid_request', `${where}.content_id must be 1–${MAX_CONTENT_ID_LENGTH} printable ASCII characters without spaces or angle brackets`);
  }
  return bare;
}

/** The limit, in the words every refusal uses. */
export function tooManyBytes(total: number): DomainError {
  return tooLarge('payload_too_large', `attachments may total at most 25 MiB (${MAX_ATTACHMENT_BYTES} bytes) decoded per message; these total ${total} bytes`);
}

/** Standard base64 (RFC 4648 section 4), line breaks and spaces ignored as MIME encoders add them; the compact text, or null. */
export function base64Compact(text: string): string | null {
  const compact = /\s/.test(text) ? text.replace(/\s+/g, '') : text;
  if (!BASE64.test(compact) || compact.length % 4 === 1 || (compact.endsWith('=') && compact.length % 4 !== 0)) return null;
  return compact;
}

function compactBase64(text: string, where: string): string {
  const compact = base64Compact(text);
  if (compact === null) throw invalid('invalid_request', `${where}.content is not valid base64 (standard alphabet A–Z a–z 0–9 + /, optional = padding)`);
  return compact;
}

/**
 * Attachments of a large JSON body are decoded where the body was parsed, off the main thread (send-work.ts): their
 * bytes are kept here by the attachment object, whose `content` then holds DECODED_ELSEWHERE. That text is not
 * base64, so an attachment copied away from its bytes is refused (400) rather than sent empty.
 */
const decodedElsewhere = new WeakMap<object, Buffer>();
export const DECODED_ELSEWHERE = '(decoded off the main thread)';
export function keepDecoded(attachment: object, bytes: Buffer): void {
  decodedElsewhere.set(attachment, bytes);
}

const decodedLength = (compact: string) => Math.floor((compact.length * 3) / 4) - (compact.endsWith('==') ? 2 : compact.endsWith('=') ? 1 : 0);

/**
 * Every attachment checked and decoded, as the message store and the composer take them. The total is known from
 * the base64 lengths before anything is decoded, so an oversized request costs no copy of its bytes.
 */
export function decodeAttachments(list: readonly AttachmentInput[] | undefined): ParsedAttachment[] {
  if (list === undefined || list.length === 0) return [];
  if (list.length > MAX_ATTACHMENTS) throw invalid('invalid_request', `at most ${MAX_ATTACHMENTS} attachments per message`);
  const checked = list.map((a, i) => {
    const where = `attachments[${i}]`;
    const content = typeof a.content !== 'string' ? a.content : (decodedElsewhere.get(a) ?? compactBase64(a.content, where));
    return {
      filename: checkFilename(a.filename, where),
      contentType: checkContentType(a.content_type, where),
      contentId: checkContentId(a.content_id, where),
      content,
      size: typeof content === 'string' ? decodedLength(content) : content.length,
    };
  });
  const total = checked.reduce((sum, a) => sum + a.size, 0);
  if (total > MAX_ATTACHMENT_BYTES) throw tooManyBytes(total);
  return checked.map(({ filename, contentType, contentId, content }) => ({
    filename,
    contentType,
    contentId,
    // An inline part is one the HTML shows by its Content-ID; the rest are files to save.
    inline: contentId !== null,
    content: typeof content === 'string' ? Buffer.from(content, 'base64') : content,
  }));
}
