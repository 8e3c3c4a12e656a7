import pg from 'pg';

/**
 * Reads of many bytes from PostgreSQL as binary COPY (README-copy-binary.md).
 *
 * node-postgres turns every field of a result row into a string, even in binary mode, so a BYTEA column costs an
 * encoding on the server (escape or base64), a string and a decoding here. `COPY (SELECT …) TO STDOUT (FORMAT binary)`
 * sends each row as its fields' own bytes: no encoding on either side. A store writes the COPY with Kysely
 * (`copyBinary`, dialect.ts) and reads the rows as `BinaryRow`s; the pool wrapper (pg-named-statements.ts) runs such a
 * statement as a `BinaryCopy` instead of a query. COPY takes no bind parameters, so the statement's parameters are
 * written into its text as literals here: integers as numbers, strings through node-postgres's `escapeLiteral`.
 */

/** The statements run as binary COPY: exactly what `copyBinary` writes around its select. */
const COPY_BINARY = /^COPY \(.*\) TO STDOUT \(FORMAT binary\)$/s;

export const isBinaryCopy = (text: string): boolean => COPY_BINARY.test(text);

/** `text` with each `$n` replaced by the literal of its parameter (Kysely puts `$n` nowhere else in a select). */
export function withLiterals(text: string, parameters: readonly unknown[]): string {
  return text.replace(/\$(\d+)/g, (_, n: string) => literal(parameters[Number(n) - 1]));
}

function literal(value: unknown): string {
  // In parentheses: `a - $1` with -1 must not become a comment.
  if (typeof value === 'number' && Number.isSafeInteger(value)) return `(${value})`;
  if (typeof value === 'string') return pg.escapeLiteral(value);
  throw new TypeError(`a binary COPY binds only integers and strings, not ${typeof value}`);
}

/** One row of a binary COPY: its bytes (one copy of what the server sent) and where each field is. */
export class BinaryRow {
  /** @param at each field's start and length (-1: NULL), two numbers a field (a plain array: cheaper to make) */
  constructor(
    private readonly buf: Buffer,
    private readonly at: readonly number[],
  ) {}

  isNull(i: number): boolean {
    return this.at[2 * i + 1]! < 0;
  }

  /** An integer column (int2, int4 or int8; an int8 outside [-2^53, 2^53) throws rather than lose digits). */
  int(i: number): number {
    const start = this.at[2 * i]!;
    switch (this.at[2 * i + 1]) {
      case 2:
        return this.buf.readInt16BE(start);
      case 4:
        return this.buf.readInt32BE(start);
      case 8: {
        // Two halves, no BigInt a field: UIDs, modseqs and times are int8 and read for every row.
        const high = this.buf.readInt32BE(start);
        if (high >= 0x200000 || high < -0x200000) throw new RangeError('an int8 beyond 2^53');
        return high * 0x1_0000_0000 + this.buf.readUInt32BE(start + 4);
      }
      default:
        throw new TypeError(`field ${i} is not an integer`);
    }
  }

  /** A text column (the server sends UTF-8, the client encoding). */
  text(i: number): string {
    const start = this.at[2 * i]!;
    return this.buf.toString('utf8', start, start + this.at[2 * i + 1]!);
  }

  /** A BYTEA column: a view of the row's bytes, no copy. */
  bytes(i: number): Buffer {
    const start = this.at[2 * i]!;
    return this.buf.subarray(start, start + this.at[2 * i + 1]!);
  }
}

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

/**
 * The rows of a binary COPY stream fed a chunk at a time. PostgreSQL sends one CopyData message a row (the header
 * with the first), but nothing here relies on that: a row cut between chunks waits for the rest.
 */
export class BinaryCopyParser {
  readonly rows: BinaryRow[] = [];
  private pending: Buffer | null = null;
  private header = true;
  private ended = false;

  /** Feed a chunk; it is not kept (node-postgres reuses its buffer), what is needed is copied. */
  push(chunk: Buffer): void {
    const data = this.pending ? Buffer.concat([this.pending, chunk]) : chunk;
    this.pending = null;
    let pos = 0;
    if (this.header) {
      const end = headerEnd(data);
      if (end < 0) return void (this.pending = Buffer.from(data));
      pos = end;
      this.header = false;
    }
    while (pos < data.length && !this.ended) {
      const end = this.row(data, pos);
      if (end < 0) break;
      pos = end;
    }
    if (pos < data.length && !this.ended) this.pending = Buffer.from(data.subarray(pos));
  }

  /** True once the trailer came, with nothing cut short. */
  get complete(): boolean {
    return this.ended && this.pending === null;
  }

  /** Parse the row at `pos` (or the trailer); its end, or -1 when it is not all in `data` yet. */
  private row(data: Buffer, pos: number): number {
    if (pos + 2 > data.length) return -1;
    const count = data.readInt16BE(pos);
    if (count === -1) {
      this.ended = true;
      return pos + 2;
    }
    if (count < 0) throw new Error('binary COPY: a negative field count');
    const at: number[] = [];
    let p = pos + 2;
    for (let i = 0; i < count; i++) {
      if (p + 4 > data.length) return -1;
      const len = data.readInt32BE(p);
      p += 4;
      at.push(p - pos, len);
      if (len > 0) p += len;
      if (p > data.length) return -1;
    }
    const bytes = Buffer.allocUnsafe(p - pos);
    data.copy(bytes, 0, pos, p);
    this.rows.push(new BinaryRow(bytes, at));
    return p;
  }
}

/** Where the header ends (signature, flags, extension), or -1 when `data` does not hold it all yet. */
function headerEnd(data: Buffer): number {
  const fixed = SIGNATURE.length + 8;
  if (data.length < fixed) return -1;
  if (!data.subarray(0, SIGNATURE.length).equals(SIGNATURE)) throw new Error('binary COPY: not a binary COPY header');
  const end = fixed + data.readUInt32BE(SIGNATURE.length + 4);
  return end <= data.length ? end : -1;
}

/** What node-postgres's connection offers a submitted query (the part used here). */
interface Connection {
  query(text: string): void;
  sendCopyFail(message: string): void;
}

/**
 * A binary COPY run on one node-postgres client, as a custom submittable (node-postgres's own Query drops CopyData):
 * settles with the rows at ReadyForQuery, or with the first error.
 */
export class BinaryCopy {
  private readonly parser = new BinaryCopyParser();
  private error: Error | null = null;
  private settled = false;

  constructor(
    private readonly text: string,
    private readonly done: (err: Error | null, rows: BinaryRow[]) => void,
  ) {}

  submit(connection: Connection): void {
    connection.query(this.text);
  }

  handleCopyData(msg: { chunk: Buffer }): void {
    if (this.error) return;
    try {
      this.parser.push(msg.chunk);
    } catch (err) {
      this.error = err as Error;
    }
  }

  handleCopyInResponse(connection: Connection): void {
    connection.sendCopyFail('not a COPY TO');
  }

  handleError(err: Error): void {
    this.settle(err);
  }

  handleReadyForQuery(): void {
    if (!this.error && !this.parser.complete) this.error = new Error('binary COPY: the stream ended early');
    this.settle(this.error);
  }

  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleCommandComplete(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}

  private settle(err: Error | null): void {
    if (this.settled) return;
    this.settled = true;
    this.done(err, err ? [] : this.parser.rows);
  }
}

/** Run `text` (a binary COPY, parameters as `$n`) on `client`: its rows. */
export function runBinaryCopy(client: pg.ClientBase, text: string, parameters: readonly unknown[]): Promise<BinaryRow[]> {
  return new Promise((resolve, reject) => {
    const copy = new BinaryCopy(withLiterals(text, parameters), (err, rows) => (err ? reject(err) : resolve(rows)));
    // node-postgres runs any object with `submit` as a query of its own.
    client.query(copy as unknown as pg.Submittable);
  });
}
