import { readFile } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { CliError } from './errors.js';
import type { UploadFile } from './http-client.js';

/** The media types of the files people attach most, by extension; anything else goes as application/octet-stream. */
const TYPES: Record<string, string> = {
  '.pdf': 'application/pdf',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.svg': 'image/svg+xml',
  '.txt': 'text/plain',
  '.csv': 'text/csv',
  '.html': 'text/html',
  '.htm': 'text/html',
  '.ics': 'text/calendar',
  '.json': 'application/json',
  '.xml': 'application/xml',
  '.zip': 'application/zip',
  '.gz': 'application/gzip',
  '.eml': 'message/rfc822',
  '.doc': 'application/msword',
  '.docx': 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  '.xlsx': 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  '.pptx': 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
};

export const contentTypeOf = (path: string): string => TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream';

/** A repeatable option's values, each as given (a file name may hold commas, so nothing is split). */
export const repeat = (value: string, previous: string[] = []): string[] => [...previous, value];

/** Read each file whole: its name (without the directory), its media type by extension, its bytes. */
export async function readAttachments(paths: readonly string[]): Promise<UploadFile[]> {
  return Promise.all(
    paths.map(async (path) => {
      try {
        return { filename: basename(path), contentType: contentTypeOf(path), content: await readFile(path) };
      } catch (err) {
        throw new CliError(`cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
      }
    }),
  );
}
