// The fields of one header block (RFC 5322 section 2.2), read as Dovecot reads them: a line starting with space or
// tab continues the field before it, a line without a colon is a field with no name (ignored by every caller),
// the value starts after the colon and any blanks, and keeps its inner line breaks (callers unfold as IMAP needs).

const LF = 0x0a;
const CR = 0x0d;
/** Longer names are treated as nameless lines, as Dovecot does (its MESSAGE_HEADER_NAME_MAX_LEN). */
const HEADER_NAME_MAX_LENGTH = 1000;

export interface HeaderField {
  /** The name as written (latin1), blanks before the colon removed; '' for a line without a colon. */
  name: string;
  /** The value (latin1: one char per byte) from after the colon and its blanks to the end of the last line, without the final line break. */
  value: string;
  /** Where the field starts and ends (its final line break included) in the message. */
  start: number;
  end: number;
}

const isBlank = (c: number | undefined): boolean => c === 0x20 || c === 0x09;

/** The fields of the header block [start, end) of `raw` (end excludes nothing: the empty line may be included). */
export function readHeaderFields(raw: Buffer, start: number, end: number): HeaderField[] {
  const fields: HeaderField[] = [];
  let pos = start;
  while (pos < end) {
    if (raw[pos] === LF || (raw[pos] === CR && raw[pos + 1] === LF && pos + 1 < end)) break;
    let next = nextLine(raw, pos, end);
    while (next < end && isBlank(raw[next])) next = nextLine(raw, next, end);
    fields.push(field(raw, pos, next));
    pos = next;
  }
  return fields;
}

function nextLine(raw: Buffer, pos: number, end: number): number {
  const lf = raw.indexOf(LF, pos);
  return lf < 0 || lf >= end ? end : lf + 1;
}

function field(raw: Buffer, start: number, end: number): HeaderField {
  let stop = end;
  if (stop > start && raw[stop - 1] === LF) stop--;
  if (stop > start && raw[stop - 1] === CR) stop--;
  const colon = raw.indexOf(0x3a, start);
  const firstLf = raw.indexOf(LF, start);
  if (colon < 0 || colon >= stop || (firstLf >= 0 && firstLf < colon)) {
    return { name: '', value: raw.toString('latin1', start, stop), start, end };
  }
  let nameEnd = colon;
  while (nameEnd > start && isBlank(raw[nameEnd - 1])) nameEnd--;
  if (nameEnd - start > HEADER_NAME_MAX_LENGTH) return { name: '', value: raw.toString('latin1', start, stop), start, end };
  // Blanks after the colon are skipped, but a first line of blanks only loses just its first blank (Dovecot's rule).
  let lineEnd = firstLf < 0 || firstLf > stop ? stop : firstLf;
  if (lineEnd > colon + 1 && raw[lineEnd - 1] === CR && lineEnd !== stop) lineEnd--;
  let valueStart = colon + 1;
  while (valueStart < lineEnd && isBlank(raw[valueStart])) valueStart++;
  if (valueStart === lineEnd && lineEnd > colon + 1) valueStart = colon + 2;
  return { name: raw.toString('latin1', start, nameEnd), value: raw.toString('latin1', valueStart, stop), start, end };
}
