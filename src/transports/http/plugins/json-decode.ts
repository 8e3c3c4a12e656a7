import { base64Compact, DECODED_ELSEWHERE } from '../../../modules/sending/attachments.js';

/** An attachment's bytes decoded from its base64 `content`: `message` is its message's place in a batch (null: the body's own). */
export interface DecodedContent {
  message: number | null;
  index: number;
  bytes: Uint8Array;
}

/** A JSON body parsed, with its attachments decoded; or the code of the Fastify error its parse failed with. */
export type DecodedBody = { ok: true; value: unknown; decoded: DecodedContent[] } | { ok: false; code: string };

/** A strict JSON parse (Fastify's own: prototype poisoning refused) that throws an error carrying a Fastify `code`. */
export type JsonParse = (text: string) => unknown;

/** Base64 shorter than this is decoded where the send is checked, as always: moving it would cost more than it saves. */
const DECODE_FROM_CHARS = 64 * 1024;

/**
 * The bytes of `base64` in shared memory: handing them to the thread that asked then copies nothing (a 25 MiB
 * copy on that thread was much of what moving the decode away saved).
 */
function sharedBytes(base64: string): Uint8Array {
  const out = Buffer.from(new SharedArrayBuffer(Math.ceil((base64.length * 3) / 4)));
  return out.subarray(0, out.write(base64, 'base64'));
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Decodes the `content` of each large attachment of a send's body (`attachments`, and each batch message's) and
 * puts DECODED_ELSEWHERE in its place. Content that is not valid base64 is left as it is: the send's own checks
 * refuse it with their usual answer.
 */
function decodeAttachments(list: unknown, message: number | null, decoded: DecodedContent[]): void {
  if (!Array.isArray(list)) return;
  list.forEach((attachment: unknown, index) => {
    if (!isObject(attachment) || typeof attachment.content !== 'string' || attachment.content.length < DECODE_FROM_CHARS) return;
    const compact = base64Compact(attachment.content);
    // Not base64: a short text the send's check refuses the same way, so that it needs no second look at the long one.
    attachment.content = compact === null ? '!' : DECODED_ELSEWHERE;
    if (compact !== null) decoded.push({ message, index, bytes: sharedBytes(compact) });
  });
}

/** The work of a large JSON body that can be done away from the thread answering requests: the parse, and the attachments' base64. */
export function decodeJsonBody(bytes: Uint8Array, parse: JsonParse): DecodedBody {
  let value: unknown;
  try {
    value = parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    return { ok: false, code: typeof code === 'string' ? code : 'FST_ERR_CTP_INVALID_JSON_BODY' };
  }
  const decoded: DecodedContent[] = [];
  if (isObject(value)) {
    decodeAttachments(value.attachments, null, decoded);
    if (Array.isArray(value.messages)) value.messages.forEach((message: unknown, at) => isObject(message) && decodeAttachments(message.attachments, at, decoded));
  }
  return { ok: true, value, decoded };
}
