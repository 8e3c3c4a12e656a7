// Reading IMAP responses into values, so tests can compare what two servers say regardless of how each chose to
// quote a string (quoted or literal): strings become Buffers, atoms stay strings (NIL is null, numbers numbers).

export type ParsedValue = null | number | string | Buffer | ParsedValue[];

/** Reads one value at `pos`; returns it and the position after it. */
export function parseValue(data: Buffer, pos: number): [ParsedValue, number] {
  const c = data[pos];
  if (c === 0x28) {
    const list: ParsedValue[] = [];
    pos++;
    for (;;) {
      while (data[pos] === 0x20) pos++;
      if (data[pos] === 0x29) return [list, pos + 1];
      if (pos >= data.length) throw new Error('unterminated list');
      const [value, next] = parseValue(data, pos);
      list.push(value);
      pos = next;
    }
  }
  if (c === 0x22) {
    const bytes: number[] = [];
    for (pos++; data[pos] !== 0x22; pos++) {
      if (data[pos] === 0x5c) pos++;
      bytes.push(data[pos] as number);
    }
    return [Buffer.from(bytes), pos + 1];
  }
  if (c === 0x7e && data[pos + 1] === 0x7b) pos++; // literal8 (RFC 3516): ~{n}
  if (data[pos] === 0x7b) {
    const close = data.indexOf('}', pos);
    const length = Number(data.toString('latin1', pos + 1, close).replace('+', ''));
    const start = close + 3;
    return [Buffer.from(data.subarray(start, start + length)), start + length];
  }
  // An atom; a fetch item name carries a bracketed section that may hold spaces and parentheses.
  let end = pos;
  let depth = 0;
  while (end < data.length) {
    const ch = data[end];
    if (ch === 0x5b) depth++;
    else if (ch === 0x5d) depth--;
    else if (depth === 0 && (ch === 0x20 || ch === 0x29 || ch === 0x0d || ch === 0x28)) break;
    end++;
  }
  const atom = data.toString('latin1', pos, end);
  if (atom === 'NIL') return [null, end];
  if (/^\d+$/.test(atom)) return [Number(atom), end];
  return [atom, end];
}

/** The items of every `* n FETCH (...)` in a response, by message number. */
export function fetchItems(response: Buffer): Map<number, Map<string, ParsedValue>> {
  const out = new Map<number, Map<string, ParsedValue>>();
  let pos = 0;
  for (;;) {
    const at = response.indexOf('* ', pos);
    if (at < 0) break;
    const m = /^\* (\d+) FETCH /.exec(response.toString('latin1', at, at + 40));
    if (!m) {
      const lf = response.indexOf('\n', at);
      pos = lf < 0 ? response.length : lf + 1;
      continue;
    }
    const [list, next] = parseValue(response, at + m[0].length);
    const items = out.get(Number(m[1])) ?? new Map<string, ParsedValue>();
    const values = list as ParsedValue[];
    for (let i = 0; i + 1 < values.length; i += 2) items.set(values[i] as string, values[i + 1] as ParsedValue);
    out.set(Number(m[1]), items);
    pos = next;
  }
  return out;
}
