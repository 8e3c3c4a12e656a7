import { once } from 'node:events';
import { createWriteStream, rmSync, statSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { CliError } from './errors.js';
import { safeLine } from './format.js';
import type { Download } from './http-client.js';

/** Longest file name the client writes (in characters; most file systems allow 255 bytes). */
const MAX_FILENAME_CHARS = 150;

/**
 * A name from the server (from an email's attachment, so from anyone) made safe to create in the chosen
 * directory: no directory part, no control characters, no leading dots (`..`, hidden files).
 */
export function safeFilename(name: string | null, fallback: string): string {
  const last = (name ?? '').split(/[\\/]/).pop() ?? '';
  const cleaned = safeLine(last)
    .replace(/\ufffd/g, '_')
    .replace(/^[.\s]+/, '');
  return Array.from(cleaned || fallback)
    .slice(0, MAX_FILENAME_CHARS)
    .join('');
}

export interface SavedDownload {
  /** Where the bytes went; null for standard output. */
  path: string | null;
  bytes: number;
  content_type: string;
}

/**
 * Write a download to `output` (a file, a directory, or `-` for stdout), or to the server's file name
 * in the working directory. An existing file is kept unless `force`; a half-written file is removed.
 */
export async function saveDownload(download: Download, options: { output?: string; force?: boolean; fallbackName: string }): Promise<SavedDownload> {
  const body = download.body;
  const toStdout = options.output === '-';
  let path: string | null = null;
  let sink: NodeJS.WritableStream | WriteStream = process.stdout;
  if (!toStdout) {
    const name = safeFilename(download.filename, options.fallbackName);
    path = options.output === undefined ? name : isDirectory(options.output) ? join(options.output, name) : options.output;
    sink = createWriteStream(path, { flags: options.force ? 'w' : 'wx' });
    try {
      await once(sink, 'open');
    } catch (err) {
      body.destroy();
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new CliError(`${path} already exists; pass --force to replace it or --output to choose another name`);
      throw new CliError(`cannot write ${path}: ${(err as Error).message}`);
    }
  }
  let bytes = 0;
  try {
    for await (const chunk of body) {
      const buffer = chunk as Buffer;
      bytes += buffer.length;
      if (!sink.write(buffer)) await once(sink, 'drain');
    }
    if (path !== null) {
      (sink as WriteStream).end();
      await once(sink, 'close');
    }
  } catch (err) {
    if (path !== null) {
      (sink as WriteStream).destroy();
      rmSync(path, { force: true });
    }
    throw new CliError(`the download broke off after ${bytes} bytes: ${(err as Error).message}`);
  }
  return { path, bytes, content_type: download.contentType };
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
