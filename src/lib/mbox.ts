/**
 * The mbox format (RFC 4155, and the mboxrd/mboxo variants): messages one after another, each behind a `From `
 * separator line carrying its envelope sender and the time it arrived. mboxrd escapes every body line matching
 * `>*From ` with one more `>` (undone on reading, so any message survives byte for byte); mboxo escapes only
 * `From ` and is read as it is (its `>From ` lines are ambiguous). Reading streams: at most one message (and
 * never more than the size limit of it) is held at a time.
 */

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'] as const;
const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'] as const;
const NL = 0x0a;
const GT = 0x3e;
const FROM_ = Buffer.from('From ');

export type MboxFormat = 'mboxrd' | 'mboxo';

/** A time as C's asctime() writes it, in UTC: `Sat Nov  8 10:00:00 2026` (the date of a `From ` line). */
export function asctime(ms: number): string {
  const d = new Date(ms);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${DAYS[d.getUTCDay()]} ${MONTHS[d.getUTCMonth()]} ${String(d.getUTCDate()).padStart(2, ' ')} ${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())} ${d.getUTCFullYear()}`;
}

/**
 * A `From ` separator line (with its newline). The sender is one word: the null sender (bounces) is written
 * `MAILER-DAEMON`, as mail systems do, and white space in an address is replaced. `flags`, when given, is
 * appended after the date as `flags=<letters>` (Maildir's letters: `S` seen); readers of mbox skip what follows
 * the year.
 */
export function fromLine(sender: string, receivedAt: number, flags = ''): string {
  const word = sender.trim() === '' ? 'MAILER-DAEMON' : sender.trim().replace(/\s+/g, '_');
  return `From ${word} ${asctime(receivedAt)}${flags ? ` flags=${flags}` : ''}\n`;
}

/** Whether `line` (from `start`) is `>*From `: the lines mboxrd escapes. */
function isQuotedFrom(line: Buffer, start = 0): boolean {
  let i = start;
  while (i < line.length && line[i] === GT) i++;
  return line.length - i >= FROM_.length && line.compare(FROM_, 0, FROM_.length, i, i + FROM_.length) === 0;
}

/**
 * A message as it goes into an mboxrd file after its `From ` line: every line matching `>*From ` gets one more
 * `>`, and the message ends with an empty line (the separator's) after a newline of its own.
 */
export function mboxrdBody(raw: Buffer): Buffer {
  const pieces: Buffer[] = [];
  let copied = 0;
  for (let start = 0; start < raw.length; ) {
    if (isQuotedFrom(raw, start)) {
      pieces.push(raw.subarray(copied, start), Buffer.from('>'));
      copied = start;
    }
    const nl = raw.indexOf(NL, start);
    if (nl === -1) break;
    start = nl + 1;
  }
  pieces.push(raw.subarray(copied));
  pieces.push(Buffer.from(raw.length > 0 && raw[raw.length - 1] !== NL ? '\n\n' : '\n'));
  return Buffer.concat(pieces);
}

/** What a `From ` line says: the envelope sender, the time (when it parses), the `flags=` of Mailroom's export. */
export interface FromLine {
  sender: string;
  receivedAt: number | null;
  flags: string;
}

const ASCTIME = /^[A-Za-z]{3},? +([A-Za-z]{3}) +(\d{1,2}) +(\d{1,2}):(\d{2})(?::(\d{2}))?(?: +[A-Za-z]{1,5})?(?: +[+-]\d{4})? +(\d{4})(?:\s|$)/;

/** Parse a `From ` line (without its newline); a date that does not parse gives `receivedAt` null. */
export function parseFromLine(line: string): FromLine {
  const rest = line.replace(/^From /, '').trim();
  const space = rest.indexOf(' ');
  const sender = space === -1 ? rest : rest.slice(0, space);
  const dateText = space === -1 ? '' : rest.slice(space + 1).trim();
  const m = ASCTIME.exec(dateText);
  const month = m ? MONTHS.findIndex((name) => name.toLowerCase() === m[1]!.toLowerCase()) : -1;
  const receivedAt = m && month >= 0 ? Date.UTC(Number(m[6]), month, Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5] ?? 0)) : null;
  const flags = / flags=([A-Za-z]*)/.exec(dateText)?.[1] ?? '';
  return { sender, receivedAt: receivedAt !== null && Number.isFinite(receivedAt) ? receivedAt : null, flags };
}

/** One message read from an mbox: `raw` null when it was larger than the limit (then only its size is known). */
export interface MboxMessage {
  from: FromLine;
  raw: Buffer | null;
  size: number;
  /** Bytes of the file read up to the end of this message (for progress). */
  offset: number;
}

/** A line longer than this is passed on in pieces, so a file without newlines cannot fill memory. */
const MAX_LINE_PIECE = 64 * 1024;

/** Lines of a byte stream, each with its newline; `atStart` is false for the later pieces of a very long line. */
async function* lines(chunks: AsyncIterable<Buffer>): AsyncGenerator<{ line: Buffer; atStart: boolean; offset: number }> {
  // The start of a line not ended yet, in the pieces it came in (joined once, when it ends).
  let carry: Buffer[] = [];
  let carried = 0;
  let atStart = true;
  let offset = 0;
  const take = (last: Buffer): Buffer => {
    const line = carried > 0 ? Buffer.concat([...carry, last]) : last;
    carry = [];
    carried = 0;
    offset += line.length;
    return line;
  };
  for await (const chunk of chunks) {
    let start = 0;
    for (let nl = chunk.indexOf(NL, start); nl !== -1; nl = chunk.indexOf(NL, start)) {
      yield { line: take(chunk.subarray(start, nl + 1)), atStart, offset };
      atStart = true;
      start = nl + 1;
    }
    if (start < chunk.length) {
      carry.push(chunk.subarray(start));
      carried += chunk.length - start;
    }
    if (carried > MAX_LINE_PIECE) {
      yield { line: take(Buffer.alloc(0)), atStart, offset };
      atStart = false;
    }
  }
  if (carried > 0) yield { line: take(Buffer.alloc(0)), atStart, offset };
}

/** The message without the empty line that separates it from the next (`\n`, or `\r\n` in a CRLF file). */
function withoutSeparator(raw: Buffer): Buffer {
  const n = raw.length;
  if (n >= 2 && raw[n - 1] === NL && raw[n - 2] === NL) return raw.subarray(0, n - 1);
  if (n >= 4 && raw.subarray(n - 4).toString('latin1') === '\r\n\r\n') return raw.subarray(0, n - 2);
  return raw;
}

export class NotMboxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotMboxError';
  }
}

/** A message being read: its separator line, its pieces (none once past the limit) and its size. */
interface Pending {
  from: FromLine;
  pieces: Buffer[] | null;
  size: number;
}

function finish(pending: Pending, offset: number): MboxMessage {
  const raw = pending.pieces ? withoutSeparator(Buffer.concat(pending.pieces)) : null;
  // An oversized message's size counts its separator too: it is only reported.
  return { from: pending.from, raw, size: raw ? raw.length : pending.size, offset };
}

/**
 * The messages of an mbox stream, one at a time. A message larger than `maxBytes` comes with `raw` null (its
 * bytes are counted, not kept). Throws NotMboxError when the stream does not start with a `From ` line.
 */
export async function* readMbox(chunks: AsyncIterable<Buffer>, options: { format: MboxFormat; maxBytes: number }): AsyncGenerator<MboxMessage> {
  let pending: Pending | undefined;
  let lastOffset = 0;
  for await (const { line, atStart, offset } of lines(chunks)) {
    lastOffset = offset;
    if (atStart && line.subarray(0, FROM_.length).equals(FROM_)) {
      if (pending) yield finish(pending, offset - line.length);
      pending = { from: parseFromLine(line.toString('latin1').replace(/\r?\n$/, '')), pieces: [], size: 0 };
      continue;
    }
    if (!pending) {
      if (line.toString('latin1').trim() === '') continue;
      throw new NotMboxError('not an mbox file: it does not start with a "From " line');
    }
    const body = atStart && options.format === 'mboxrd' && line[0] === GT && isQuotedFrom(line) ? line.subarray(1) : line;
    pending.size += body.length;
    if (pending.pieces && pending.size > options.maxBytes + 2) pending.pieces = null;
    pending.pieces?.push(body);
  }
  if (pending) yield finish(pending, lastOffset);
}

/** The header block of a message (up to the first empty line), at most `limit` bytes of it. */
export function headerBlock(raw: Buffer, limit = 256 * 1024): string {
  const head = raw.subarray(0, limit).toString('latin1');
  const end = /\r?\n\r?\n/.exec(head);
  return end ? head.slice(0, end.index) : head;
}

/** The first value of a header (unfolded), or undefined. */
export function headerValue(block: string, name: string): string | undefined {
  const lower = name.toLowerCase();
  for (const line of block.split(/\r?\n(?![ \t])/)) {
    const colon = line.indexOf(':');
    if (colon > 0 && line.slice(0, colon).trim().toLowerCase() === lower) return line.slice(colon + 1).replace(/\r?\n[ \t]+/g, ' ').trim();
  }
  return undefined;
}
