import type { FastifyReply } from 'fastify';
import type { Download } from '../../../modules/messages/message.service.js';

/** `Content-Disposition: attachment` with an ASCII fallback name and the exact name per RFC 6266 / RFC 5987. */
export function contentDisposition(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  const encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

/** Send stored bytes as a download: never sniffed, never rendered inline. */
export function sendDownload(reply: FastifyReply, download: Download): FastifyReply {
  return reply
    .header('content-type', download.contentType)
    .header('content-disposition', contentDisposition(download.filename))
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', "default-src 'none'; sandbox")
    .send(download.content);
}
