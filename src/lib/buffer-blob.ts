/**
 * A Blob that holds its bytes in one Buffer, for worker threads that parse MIME.
 *
 * postal-mime collects every decoded part in `new Blob(lines)` and reads it back with
 * `blob.arrayBuffer()`. Node's Blob hands each part to its native blob store and reads it back through
 * an async stream, which was most of the parse of a typical message (decision 163; figures in
 * bench/HISTORY.md). No option of the parser avoids it and no
 * library offers a lighter Blob, hence these few lines. `install()` replaces the global only in the
 * thread that calls it; it is meant for the MIME analysis workers, whose only Blob user is the parser.
 */
export class BufferBlob {
  readonly #bytes: Buffer;
  readonly type: string;

  constructor(parts: Iterable<ArrayBuffer | ArrayBufferView | string | BufferBlob> = [], options: { type?: string } = {}) {
    const buffers: Buffer[] = [];
    for (const part of parts) {
      if (typeof part === 'string') buffers.push(Buffer.from(part, 'utf8'));
      else if (part instanceof BufferBlob) buffers.push(part.#bytes);
      else if (ArrayBuffer.isView(part)) buffers.push(Buffer.from(part.buffer, part.byteOffset, part.byteLength));
      else buffers.push(Buffer.from(part));
    }
    this.#bytes = Buffer.concat(buffers);
    this.type = options.type ?? '';
  }

  get size(): number {
    return this.#bytes.length;
  }

  arrayBuffer(): Promise<ArrayBuffer> {
    const bytes = this.#bytes;
    return Promise.resolve(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
  }

  bytes(): Promise<Uint8Array> {
    return Promise.resolve(new Uint8Array(this.#bytes));
  }

  text(): Promise<string> {
    return Promise.resolve(this.#bytes.toString('utf8'));
  }

  /** Make this class the thread's global `Blob`. */
  static install(): void {
    (globalThis as { Blob: unknown }).Blob = BufferBlob;
  }
}
