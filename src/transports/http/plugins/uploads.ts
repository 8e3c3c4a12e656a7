import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { invalid, isDomainError, tooLarge } from '../../../lib/errors.js';
import { MAX_ATTACHMENT_BYTES, MAX_ATTACHMENTS, type AttachmentInput } from '../../../modules/sending/attachments.js';

/** The one form field beside the files: the Content-ID of the file part that follows it. */
const CONTENT_ID_FIELD = 'content_id';
const MAX_FIELDS = 10;

/**
 * multipart/form-data for the routes of `scope` alone (registered in their own scope, so every other route keeps
 * answering 415 to it). Every limit is set, so a hostile form (a thousand fields, endless headers, a huge file) is
 * a 4xx while it streams in, never a buffered body or a 5xx.
 */
export async function registerUploads(scope: FastifyInstance): Promise<void> {
  await scope.register(multipart, {
    throwFileSizeLimit: true,
    limits: {
      fieldNameSize: 100,
      fieldSize: 1024,
      fields: MAX_FIELDS,
      fileSize: MAX_ATTACHMENT_BYTES,
      files: MAX_ATTACHMENTS,
      parts: MAX_ATTACHMENTS + MAX_FIELDS,
      headerPairs: 100,
    },
  });
}

/**
 * The files of a multipart upload, read into memory one after another, within `room` (what the draft may still
 * take: bytes and files). Each `content_id` field names the file part after it. Errors name the part.
 */
export async function readUploads(request: FastifyRequest, room: { bytes: number; files: number }): Promise<AttachmentInput[]> {
  const files: AttachmentInput[] = [];
  let contentId: string | undefined;
  let total = 0;
  const over = () =>
    tooLarge('payload_too_large', `attachments may total at most 25 MiB (${MAX_ATTACHMENT_BYTES} bytes) per draft; this upload is larger than the ${room.bytes} bytes the draft has left`);
  try {
    // The parser stops a file at the room left (a file of exactly that size passes), before it is all in memory.
    const limits = { fileSize: room.bytes, files: room.files };
    for await (const part of request.parts({ limits })) {
      if (part.type === 'field') {
        if (part.fieldname !== CONTENT_ID_FIELD) throw invalid('invalid_request', `form field '${part.fieldname}' is not one this route takes (file parts and ${CONTENT_ID_FIELD})`);
        contentId = String(part.value);
        continue;
      }
      const where = `file part ${files.length + 1}`;
      if (!part.filename) throw invalid('invalid_request', `${where} ('${part.fieldname}') has no filename`);
      const content = await part.toBuffer();
      total += content.length;
      if (total > room.bytes) throw over();
      files.push({ filename: part.filename, content_type: part.mimetype || 'application/octet-stream', content, content_id: contentId });
      contentId = undefined;
    }
  } catch (err) {
    throw uploadError(err, over);
  }
  if (contentId !== undefined) throw invalid('invalid_request', `${CONTENT_ID_FIELD} comes before the file part it names; no file part followed it`);
  if (files.length === 0) throw invalid('invalid_request', 'the form has no file part: send each file as a part with a filename');
  return files;
}

/** What reading the form failed with, as an answer: ours as they are, the parser's limits as 413, the rest 400. */
function uploadError(err: unknown, fileTooLarge: () => Error): unknown {
  if (isDomainError(err)) return err;
  const code = (err as { code?: unknown }).code;
  if (code === 'FST_REQ_FILE_TOO_LARGE') return fileTooLarge();
  if (code === 'FST_FILES_LIMIT') return tooLarge('payload_too_large', `a draft has at most ${MAX_ATTACHMENTS} attachments; this upload has more than it has room for`);
  if (code === 'FST_PARTS_LIMIT' || code === 'FST_FIELDS_LIMIT') return tooLarge('payload_too_large', `the form has more parts than a draft upload takes (${MAX_FIELDS} fields at most)`);
  if (code === 'FST_INVALID_MULTIPART_CONTENT_TYPE') return err;
  // busboy's own: a malformed part header, an unexpected end of the form, a missing boundary.
  return invalid('invalid_multipart', `the multipart/form-data body could not be read: ${err instanceof Error ? err.message : String(err)}`);
}
