// RFC 5322 / RFC 2045 lexical pieces over a header value held as a latin1 string (one char per byte), read the
// way Dovecot 2.3 reads them: lenient, comments skipped, folding removed inside quoted strings. Results of -1
// (broken), 0 (end of input) and 1 (more follows) drive the callers exactly as in the reference.

/** U+FFFD in UTF-8, as latin1: what a NUL inside a quoted string or comment becomes. */
export const NUL_REPLACEMENT = '\xef\xbf\xbd';

const ATEXT = new Uint8Array(256);
for (let c = 0; c < 256; c++) {
  const ch = String.fromCharCode(c);
  if (c >= 0x80 || /[A-Za-z0-9]/.test(ch)) ATEXT[c] = 2;
  else if ("!#$%&'*+-^_`{|}~".includes(ch)) ATEXT[c] = 1;
  else if ('/=?'.includes(ch)) ATEXT[c] = 4;
}
export const isAtext = (c: number): boolean => c >= 0 && ATEXT[c] !== 0;
const isMimeTokenChar = (c: number): boolean => (ATEXT[c] === 1 || ATEXT[c] === 2) || c === 0x2e;

export class Rfc822Reader {
  pos = 0;
  /** The last comment skipped (address parsing takes a trailing comment as the display name). */
  lastComment = '';
  constructor(
    readonly data: string,
    /** Whether NULs in quoted strings and comments become U+FFFD (address and parameter parsing). */
    public replaceNul = false,
  ) {}

  get end(): boolean {
    return this.pos >= this.data.length;
  }
  peek(): number {
    return this.pos < this.data.length ? this.data.charCodeAt(this.pos) : -1;
  }

  skipComment(): number {
    const d = this.data;
    let level = 1;
    let out = '';
    let start = ++this.pos;
    for (; this.pos < d.length; this.pos++) {
      const c = d.charCodeAt(this.pos);
      if (c === 0 && this.replaceNul) {
        out += d.slice(start, this.pos) + NUL_REPLACEMENT;
        start = this.pos + 1;
      } else if (c === 0x28) level++;
      else if (c === 0x29) {
        if (--level === 0) {
          this.lastComment = out + d.slice(start, this.pos);
          this.pos++;
          return this.end ? 0 : 1;
        }
      } else if (c === 0x0a) {
        let len = this.pos - start;
        if (len > 0 && d.charCodeAt(start + len - 1) === 0x0d) len--;
        out += d.slice(start, start + len);
        start = this.pos + 1;
      } else if (c === 0x5c) {
        this.pos++;
        if (this.pos >= d.length) return -1;
        const n = d.charCodeAt(this.pos);
        if (n === 0x0d || n === 0x0a || n === 0) {
          this.pos--;
          continue;
        }
        out += d.slice(start, this.pos - 1);
        start = this.pos;
      }
    }
    return -1;
  }

  skipLwsp(): number {
    const d = this.data;
    while (this.pos < d.length) {
      const c = d.charCodeAt(this.pos);
      if (c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0a) {
        this.pos++;
        continue;
      }
      if (c !== 0x28) break;
      if (this.skipComment() < 0) return -1;
    }
    return this.end ? 0 : 1;
  }

  atom(out: string[]): number {
    const d = this.data;
    if (this.end || !isAtext(d.charCodeAt(this.pos))) return -1;
    const start = this.pos++;
    while (this.pos < d.length && isAtext(d.charCodeAt(this.pos))) this.pos++;
    out.push(d.slice(start, this.pos));
    return this.end ? 0 : this.skipLwsp();
  }

  dotAtom(out: string[]): number {
    const d = this.data;
    if (this.end || !isAtext(d.charCodeAt(this.pos))) return -1;
    let start = this.pos++;
    while (this.pos < d.length) {
      if (isAtext(d.charCodeAt(this.pos))) {
        this.pos++;
        continue;
      }
      if (start === this.pos) return -1;
      out.push(d.slice(start, this.pos));
      const ret = this.skipLwsp();
      if (ret <= 0) return ret;
      if (d.charCodeAt(this.pos) !== 0x2e) return 1;
      this.pos++;
      out.push('.');
      if (this.skipLwsp() <= 0) return -1;
      start = this.pos;
    }
    out.push(d.slice(start, this.pos));
    return 0;
  }

  mimeToken(out: string[]): number {
    const d = this.data;
    const start = this.pos;
    while (this.pos < d.length && isMimeTokenChar(d.charCodeAt(this.pos))) this.pos++;
    out.push(d.slice(start, this.pos));
    return this.end ? 0 : this.skipLwsp();
  }

  quotedString(out: string[]): number {
    const d = this.data;
    let start = ++this.pos;
    for (; this.pos < d.length; this.pos++) {
      const c = d.charCodeAt(this.pos);
      if (c === 0 && this.replaceNul) {
        out.push(d.slice(start, this.pos), NUL_REPLACEMENT);
        start = this.pos + 1;
      } else if (c === 0x22) {
        out.push(d.slice(start, this.pos));
        this.pos++;
        return this.skipLwsp();
      } else if (c === 0x0a) {
        let len = this.pos - start;
        if (len > 0 && d.charCodeAt(start + len - 1) === 0x0d) len--;
        out.push(d.slice(start, start + len));
        start = this.pos + 1;
      } else if (c === 0x5c) {
        this.pos++;
        if (this.pos >= d.length) return -1;
        const n = d.charCodeAt(this.pos);
        if (n === 0x0d || n === 0x0a || n === 0) {
          this.pos--;
          continue;
        }
        out.push(d.slice(start, this.pos - 1));
        start = this.pos;
      }
    }
    return -1;
  }

  private atomOrDot(out: string[]): number {
    const d = this.data;
    const start = this.pos;
    while (this.pos < d.length && (isAtext(d.charCodeAt(this.pos)) || d.charCodeAt(this.pos) === 0x2e)) this.pos++;
    out.push(d.slice(start, this.pos));
    return this.end ? 0 : this.skipLwsp();
  }

  phrase(out: string[]): number {
    if (this.end) return 0;
    if (this.peek() === 0x2e) return -1;
    for (;;) {
      const ret = this.peek() === 0x22 ? this.quotedString(out) : this.atomOrDot(out);
      if (ret <= 0) return ret;
      const c = this.peek();
      if (!isAtext(c) && c !== 0x22 && c !== 0x2e) break;
      out.push(' ');
    }
    return this.skipLwsp();
  }

  private domainLiteral(out: string[]): number {
    const d = this.data;
    let start = this.pos++;
    for (; this.pos < d.length; this.pos++) {
      const c = d.charCodeAt(this.pos);
      if (c === 0 && this.replaceNul) {
        out.push(d.slice(start, this.pos), NUL_REPLACEMENT);
        start = this.pos + 1;
      } else if (c === 0x5b) return -1;
      else if (c === 0x5d) {
        out.push(d.slice(start, this.pos + 1));
        this.pos++;
        return this.skipLwsp();
      } else if (c === 0x0a) {
        let len = this.pos - start;
        if (len > 0 && d.charCodeAt(start + len - 1) === 0x0d) len--;
        out.push(d.slice(start, start + len));
        start = this.pos + 1;
      } else if (c === 0x5c) {
        this.pos++;
        if (this.pos >= d.length) return -1;
        const n = d.charCodeAt(this.pos);
        if (n === 0x0d || n === 0x0a || n === 0) {
          out.push(d.slice(start, this.pos));
          start = this.pos;
          this.pos--;
        }
      }
    }
    return -1;
  }

  /** At '@': the domain after it. */
  domain(out: string[]): number {
    this.pos++;
    if (this.skipLwsp() <= 0) return -1;
    return this.peek() === 0x5b ? this.domainLiteral(out) : this.dotAtom(out);
  }

  /** `type/subtype` into out (joined); -1 when broken (out may then hold what could be read, as the reference). */
  contentType(out: string[]): number {
    const mark = out.length;
    if (this.skipLwsp() <= 0) return -1;
    if (this.mimeToken(out) <= 0 || out.slice(mark).join('') === '') return -1;
    if (this.peek() !== 0x2f) {
      out.length = mark;
      return -1;
    }
    this.pos++;
    if (this.skipLwsp() <= 0) {
      out.length = mark;
      return -1;
    }
    out.push('/');
    const subMark = out.length;
    const ret = this.mimeToken(out);
    if (ret < 0 || out.slice(subMark).join('') === '' || (!this.end && this.peek() !== 0x3b)) {
      out.length = mark;
      return -1;
    }
    return ret;
  }

  /** One `; key=value`: [status, key, value]; status 0 at the end, -1 broken. */
  contentParam(): [number, string, string] {
    if (this.end) return [0, '', ''];
    if (this.peek() !== 0x3b) return [-1, '', ''];
    this.pos++;
    if (this.skipLwsp() <= 0) return [-1, '', ''];
    const key: string[] = [];
    if (this.mimeToken(key) <= 0) return [-1, '', ''];
    if (this.peek() !== 0x3d) return [-1, '', ''];
    this.pos++;
    const value: string[] = [];
    let ret = this.skipLwsp();
    if (ret <= 0) {
      // broken or no value
    } else if (this.peek() === 0x22) {
      ret = this.quotedString(value);
    } else if (this.peek() === 0x3d) {
      // Broken senders write name==?utf-8?b?...?= unquoted: take it up to the next separator.
      const start = this.pos;
      while (this.pos < this.data.length && !';  \t\r\n'.includes(this.data[this.pos] ?? ';')) this.pos++;
      value.push(this.data.slice(start, this.pos));
    } else {
      ret = this.mimeToken(value);
    }
    return [ret < 0 ? -1 : 1, key.join(''), value.join('')];
  }
}

interface Rfc2231Piece {
  key: string;
  value: string;
  idx: number;
  extended: boolean;
}

/**
 * The parameters after a Content-Type or Content-Disposition value, RFC 2231 continuations merged as Dovecot
 * merges them: `name*0*=a; name*1=b` becomes `name*` = "a" + "b" (plain pieces %-escaped when any piece is
 * extended), still percent-encoded and charset-prefixed (never decoded); pieces with gaps stay as they were.
 */
export function parseParams(reader: Rfc822Reader): Array<[string, string]> {
  const saved = reader.replaceNul;
  reader.replaceNul = true;
  const result: Array<[string, string]> = [];
  const pieces: Rfc2231Piece[] = [];
  // The reference keeps the index of the previous piece for a bare `key*` (no number): kept for equal output.
  let idx = 0;
  for (;;) {
    const [status, key, value] = reader.contentParam();
    if (status === 0) break;
    if (status < 0) {
      if (reader.end) break;
      reader.pos++;
      continue;
    }
    const star = key.indexOf('*');
    if (star < 0) {
      result.push([key, value]);
      continue;
    }
    let p = star;
    if (p + 1 < key.length) {
      p++;
      idx = 0;
      while (p < key.length && key.charCodeAt(p) >= 0x30 && key.charCodeAt(p) <= 0x39) idx = idx * 10 + key.charCodeAt(p++) - 0x30;
    }
    const extended = key[p] === '*';
    if (extended) p++;
    if (p < key.length) result.push([key, value]);
    else pieces.push({ key: key.slice(0, star), value, idx, extended });
  }
  reader.replaceNul = saved;
  if (pieces.length > 0) mergeRfc2231(pieces, result);
  return result;
}

function mergeRfc2231(pieces: Rfc2231Piece[], result: Array<[string, string]>): void {
  // Sorted by name (byte order) then index, as the reference does before merging.
  pieces.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.idx - b.idx));
  for (let i = 0; i < pieces.length; ) {
    const first = pieces[i] as Rfc2231Piece;
    let j = i;
    let ok = true;
    let anyExtended = false;
    for (let next = 0; j < pieces.length && (pieces[j] as Rfc2231Piece).key.toLowerCase() === first.key.toLowerCase(); j++, next++) {
      const piece = pieces[j] as Rfc2231Piece;
      if (piece.idx !== next) ok = false;
      if (piece.extended) anyExtended = true;
    }
    const group = pieces.slice(i, j);
    i = j;
    if (!ok) {
      for (const piece of group) result.push([`${piece.key}*${piece.idx}${piece.extended ? '*' : ''}`, piece.value]);
      continue;
    }
    let value = !first.extended && anyExtended ? "''" : '';
    for (const piece of group) value += !piece.extended && anyExtended ? piece.value.replaceAll('%', '%25') : piece.value;
    result.push([anyExtended ? `${first.key}*` : first.key, value]);
  }
}
