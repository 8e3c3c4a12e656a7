import { randomUUID } from 'node:crypto';
import { open, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';

export interface SpoolOptions {
  /** Bytes kept in memory; the rest of the message goes to a file. */
  memoryBytes: number;
  /** Bytes kept at all: past them the message is too big, and the rest is only counted. */
  maxBytes: number;
  /** Directory of the spill files (os.tmpdir() in a running service). */
  dir: string;
}

/**
 * Where one inbound message collects while the client sends it: the first `memoryBytes` in memory, the
 * rest in a file of its own (mode 0600), so a slow client holds a bounded amount of memory however big
 * its message. `read()` gives the whole message back; `discard()` removes the file (always call it).
 *
 * Not a Writable on purpose: `add` keeps a chunk synchronously while the message fits in memory, which is
 * every small message, at the cost of a plain array push; a stream pipeline costs more than that per message
 * (bench/HISTORY.md, decision 203).
 */
export class MessageSpool {
  /** Bytes received, counted past `maxBytes` too. */
  size = 0;
  /** The first error writing the file; later chunks are dropped. */
  failure: Error | null = null;
  private chunks: Buffer[] = [];
  private memoryUsed = 0;
  private file: FileHandle | null = null;
  private path: string | null = null;
  private fileBytes = 0;
  private discarded = false;
  /** File writes, one after the other (a stream may end while its last chunk is still being written). */
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly options: SpoolOptions) {}

  /**
   * Keep `chunk`. Returns nothing when it was kept in memory, or a promise of its write to the file: the
   * caller stops reading until it settles (it never rejects; a failure is kept in `failure`).
   */
  add(chunk: Buffer): Promise<void> | undefined {
    this.size += chunk.length;
    if (this.size > this.options.maxBytes || this.failure !== null || this.discarded) return undefined;
    if (this.file === null && this.memoryUsed + chunk.length <= this.options.memoryBytes) {
      this.chunks.push(chunk);
      this.memoryUsed += chunk.length;
      return undefined;
    }
    this.writing = this.writing.then(() =>
      this.failure === null && !this.discarded
        ? this.spill(chunk).catch((err: unknown) => {
            this.failure = err instanceof Error ? err : new Error(String(err));
          })
        : undefined,
    );
    return this.writing;
  }

  private async spill(chunk: Buffer): Promise<void> {
    if (this.file === null) {
      const path = join(this.options.dir, `mailroom-spool-${randomUUID()}.eml`);
      const file = await open(path, 'wx+', 0o600);
      if (this.discarded) {
        // Discarded while the file was being made (the client went away): nothing may be left behind.
        await file.close();
        await rm(path, { force: true });
        return;
      }
      this.file = file;
      this.path = path;
    }
    for (let at = 0; at < chunk.length; ) at += (await this.file.write(chunk, at, chunk.length - at)).bytesWritten;
    this.fileBytes += chunk.length;
  }

  /** The message as received (up to `maxBytes`), in one buffer. */
  async read(): Promise<Buffer> {
    await this.writing;
    if (this.failure) throw this.failure;
    if (this.file === null) return Buffer.concat(this.chunks, this.memoryUsed);
    const whole = Buffer.allocUnsafe(this.memoryUsed + this.fileBytes);
    let at = 0;
    for (const chunk of this.chunks) at += chunk.copy(whole, at);
    for (let read = 0; read < this.fileBytes; ) {
      const { bytesRead } = await this.file.read(whole, at + read, this.fileBytes - read, read);
      if (bytesRead === 0) throw new Error(`spool file ${this.path} is shorter than written`);
      read += bytesRead;
    }
    return whole;
  }

  /** Drop what was kept and remove the file. */
  async discard(): Promise<void> {
    this.discarded = true;
    this.chunks = [];
    await this.writing;
    const { file, path } = this;
    this.file = null;
    this.path = null;
    await file?.close().catch(() => undefined);
    if (path) await rm(path, { force: true });
  }
}
