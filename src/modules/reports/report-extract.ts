/**
 * Getting a report's document out of its attachment: gzip (RFC 1952), a zip archive's one entry, or the bare file,
 * each bounded before and after decompression, so that a small hostile attachment cannot become a large buffer.
 */
import { promisify } from 'node:util';
import { gunzip, inflateRaw } from 'node:zlib';

/** An attachment larger than this is not looked at (reports are small; SMTP's own cap is the outer bound). */
export const MAX_REPORT_ATTACHMENT_BYTES = 5 * 1024 * 1024;
/** A report's document after decompression (a large receiver's daily DMARC report is well under this). */
export const MAX_REPORT_DOCUMENT_BYTES = 10 * 1024 * 1024;
/** Zip: entries looked at in the central directory (a report archive has one). */
const MAX_ZIP_ENTRIES = 16;

const gunzipAsync = promisify(gunzip);
const inflateRawAsync = promisify(inflateRaw);

/** Why an attachment held no readable report document. */
export class ReportFormatError extends Error {}

const GZIP_MAGIC = [0x1f, 0x8b];
const ZIP_MAGIC = [0x50, 0x4b, 0x03, 0x04];
const startsWith = (data: Buffer, magic: readonly number[]): boolean => magic.every((byte, i) => data[i] === byte);

/** The document inside an attachment: gunzipped, unzipped or as it is, never past MAX_REPORT_DOCUMENT_BYTES. */
export async function reportDocument(content: Buffer): Promise<Buffer> {
  if (content.length > MAX_REPORT_ATTACHMENT_BYTES) throw new ReportFormatError(`attachment over ${MAX_REPORT_ATTACHMENT_BYTES} bytes`);
  if (startsWith(content, GZIP_MAGIC)) return bounded(() => gunzipAsync(content, { maxOutputLength: MAX_REPORT_DOCUMENT_BYTES }));
  if (startsWith(content, ZIP_MAGIC)) return zipEntry(content);
  if (content.length > MAX_REPORT_DOCUMENT_BYTES) throw new ReportFormatError('document too large');
  return content;
}

async function bounded(decompress: () => Promise<Buffer>): Promise<Buffer> {
  try {
    return await decompress();
  } catch (err) {
    // zlib's RangeError for maxOutputLength, or its error for corrupt data: either way no document.
    throw new ReportFormatError(`decompression failed: ${(err as Error).message}`);
  }
}

/** End of central directory record (APPNOTE 4.3.16): 22 bytes plus a comment of up to 65,535. */
function endOfCentralDirectory(zip: Buffer): number {
  for (let at = zip.length - 22; at >= Math.max(0, zip.length - 22 - 0xffff); at--) {
    if (zip.readUInt32LE(at) === 0x06054b50) return at;
  }
  throw new ReportFormatError('zip without a central directory');
}

/** The first file entry of a zip archive (stored or deflated), decompressed within the bound. */
async function zipEntry(zip: Buffer): Promise<Buffer> {
  try {
    const eocd = endOfCentralDirectory(zip);
    const entries = zip.readUInt16LE(eocd + 10);
    let at = zip.readUInt32LE(eocd + 16);
    for (let i = 0; i < Math.min(entries, MAX_ZIP_ENTRIES); i++) {
      if (zip.readUInt32LE(at) !== 0x02014b50) throw new ReportFormatError('zip central directory damaged');
      const method = zip.readUInt16LE(at + 10);
      const compressed = zip.readUInt32LE(at + 20);
      const size = zip.readUInt32LE(at + 24);
      const nameLength = zip.readUInt16LE(at + 28);
      const local = zip.readUInt32LE(at + 42);
      const name = zip.subarray(at + 46, at + 46 + nameLength).toString('utf8');
      at += 46 + nameLength + zip.readUInt16LE(at + 30) + zip.readUInt16LE(at + 32);
      if (name.endsWith('/')) continue;
      if (size > MAX_REPORT_DOCUMENT_BYTES) throw new ReportFormatError('zip entry too large');
      if (zip.readUInt32LE(local) !== 0x04034b50) throw new ReportFormatError('zip local header damaged');
      const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
      const data = zip.subarray(start, start + compressed);
      if (data.length !== compressed) throw new ReportFormatError('zip entry truncated');
      if (method === 0) return data;
      // The declared size is the sender's word; the bound on the output is ours.
      if (method === 8) return await bounded(() => inflateRawAsync(data, { maxOutputLength: MAX_REPORT_DOCUMENT_BYTES }));
      throw new ReportFormatError(`zip compression method ${method} not supported`);
    }
  } catch (err) {
    if (err instanceof ReportFormatError) throw err;
    throw new ReportFormatError(`zip unreadable: ${(err as Error).message}`);
  }
  throw new ReportFormatError('zip without a file');
}
