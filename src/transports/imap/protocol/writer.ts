/**
 * The response writer: typed values in, the bytes of untagged, tagged and continuation responses out.
 *
 * Framing cannot be broken through a value: a string is quoted only when it has no control character, no 8-bit
 * byte (unless UTF8=ACCEPT is on) and a modest length, and is a literal otherwise; a Buffer is always a literal,
 * written byte for byte; an atom or a pre-formatted item name that could end a line or forge a literal throws
 * (those come from our code, never from a message); free text has its control characters replaced.
 *
 * Output is collected as text pieces and Buffers and joined by one `Buffer.concat` in `take()`, so a FETCH of many
 * messages is one write per batch and a literal's bytes are copied once, into that write.
 */

export type Value =
  | null
  | number
  | bigint
  | string
  | Buffer
  | readonly Value[]
  | { atom: string }
  /** A pre-formatted item name such as `BODY[HEADER.FIELDS (FROM TO)]<0>`: printable ASCII, not ending in `}`. */
  | { raw: string }
  /** A literal; `binary` writes `~{n}` (literal8: BINARY fetch data may hold NUL). */
  | { literal: Buffer; binary?: boolean };

export interface ResponseCode {
  name: string;
  args?: readonly Value[];
}

export type Status = 'OK' | 'NO' | 'BAD' | 'BYE' | 'PREAUTH';

/** Strings longer than this go as literals even when they could be quoted (clients' line buffers stay small). */
export const MAX_QUOTED = 1024;

const ATOM = new Uint8Array(128);
for (let c = 0x21; c < 0x7f; c++) ATOM[c] = '(){"'.includes(String.fromCharCode(c)) ? 0 : 1;

export class ResponseWriter {
  /** Whether the client enabled UTF8=ACCEPT: 8-bit text may then be quoted and sent in free text. */
  utf8: boolean;
  private chunks: Buffer[] = [];
  private cur = '';
  private bytes = 0;

  constructor(options: { utf8?: boolean } = {}) {
    this.utf8 = options.utf8 ?? false;
  }

  /**
   * About the bytes collected so far (exact for ASCII text), for a FETCH loop that sends past some size; counting
   * characters instead of encoding keeps a call O(1).
   */
  get size(): number {
    return this.bytes + this.cur.length;
  }

  /** `* v1 v2 …` (e.g. `untagged(3, {atom: 'EXISTS'})`). */
  untagged(...values: readonly Value[]): this {
    this.cur += '*';
    for (const v of values) {
      this.cur += ' ';
      this.value(v);
    }
    this.cur += '\r\n';
    return this;
  }

  /** `* OK [CODE args] text` and the other untagged status responses. */
  status(status: Status, text: string, code?: ResponseCode): this {
    this.cur += `* ${status} `;
    this.respText(text, code);
    return this;
  }

  /** `tag OK [CODE args] text`. */
  tagged(tag: string, status: 'OK' | 'NO' | 'BAD', text: string, code?: ResponseCode): this {
    if (!isAtom(tag) || tag.includes('+')) throw new TypeError('invalid IMAP tag');
    this.cur += `${tag} ${status} `;
    this.respText(text, code);
    return this;
  }

  /** `+ text` (a continuation request), or `+ ` followed by base64 for AUTHENTICATE. */
  continuation(text = ''): this {
    this.cur += '+ ';
    this.cur += this.cleanText(text);
    this.cur += '\r\n';
    return this;
  }

  /** Everything written since the last call, as one Buffer. */
  take(): Buffer {
    this.flush();
    const out = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.bytes);
    this.chunks = [];
    this.bytes = 0;
    return out;
  }

  private respText(text: string, code?: ResponseCode): void {
    if (code) {
      if (!isAtom(code.name) || code.name.includes(']')) throw new TypeError('invalid response code');
      this.cur += `[${code.name}`;
      for (const v of code.args ?? []) {
        this.cur += ' ';
        this.value(v);
      }
      this.cur += '] ';
    }
    this.cur += this.cleanText(text);
    this.cur += '\r\n';
  }

  /** Free text with control characters (CR and LF among them) replaced, and never ending like a literal. */
  private cleanText(text: string): string {
    let out = '';
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c < 0x20 || c === 0x7f) out += ' ';
      else if (c > 0x7f && !this.utf8) out += '?';
      else out += text[i];
    }
    return out.endsWith('}') ? `${out}.` : out;
  }

  private value(v: Value): void {
    if (v === null) this.cur += 'NIL';
    else if (typeof v === 'number') this.number(v);
    else if (typeof v === 'bigint') this.number(v);
    else if (typeof v === 'string') this.string(v);
    else if (Buffer.isBuffer(v)) this.literal(v, false);
    else if (isList(v)) this.list(v);
    else if ('atom' in v) this.atom(v.atom);
    else if ('raw' in v) this.raw(v.raw);
    else this.literal(v.literal, v.binary ?? false);
  }

  private number(n: number | bigint): void {
    if (typeof n === 'number' && !(Number.isSafeInteger(n) && n >= 0)) throw new TypeError('invalid IMAP number');
    if (typeof n === 'bigint' && n < 0n) throw new TypeError('invalid IMAP number');
    this.cur += String(n);
  }

  private list(items: readonly Value[]): void {
    this.cur += '(';
    for (let i = 0; i < items.length; i++) {
      if (i > 0) this.cur += ' ';
      this.value(items[i]!);
    }
    this.cur += ')';
  }

  private atom(a: string): void {
    if (!isAtom(a)) throw new TypeError('invalid IMAP atom');
    this.cur += a;
  }

  private raw(r: string): void {
    for (let i = 0; i < r.length; i++) {
      const c = r.charCodeAt(i);
      if (c < 0x20 || c > 0x7e) throw new TypeError('invalid IMAP item name');
    }
    if (r.length === 0 || r.endsWith('}')) throw new TypeError('invalid IMAP item name');
    this.cur += r;
  }

  private string(s: string): void {
    if (quotable(s, this.utf8)) {
      this.cur += '"';
      this.cur += s.includes('"') || s.includes('\\') ? s.replace(/["\\]/g, '\\$&') : s;
      this.cur += '"';
      return;
    }
    this.literal(Buffer.from(s, 'utf8'), false);
  }

  private literal(b: Buffer, binary: boolean): void {
    this.cur += `${binary ? '~' : ''}{${b.length}}\r\n`;
    this.flush();
    if (b.length > 0) {
      this.chunks.push(b);
      this.bytes += b.length;
    }
  }

  private flush(): void {
    if (this.cur.length === 0) return;
    const b = Buffer.from(this.cur, 'utf8');
    this.chunks.push(b);
    this.bytes += b.length;
    this.cur = '';
  }
}

/** True when `a` can be sent (and read back) as an atom. */
export function isAtom(a: string): boolean {
  if (a.length === 0) return false;
  for (let i = 0; i < a.length; i++) {
    const c = a.charCodeAt(i);
    if (c >= 0x80 || !ATOM[c]) return false;
  }
  return true;
}

/** Array.isArray does not narrow a readonly array type. */
function isList(v: Value): v is readonly Value[] {
  return Array.isArray(v);
}

function quotable(s: string, utf8: boolean): boolean {
  if (s.length > MAX_QUOTED) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x7f || (c > 0x7f && !utf8)) return false;
  }
  return true;
}
