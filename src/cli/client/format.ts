import { styleText } from 'node:util';

type Env = Record<string, string | undefined>;

/** Colour only on a terminal, and never when NO_COLOR is set to anything but the empty string (no-color.org). */
export function colourWanted(stream: { isTTY?: boolean }, env: Env = process.env): boolean {
  return stream.isTTY === true && !env.NO_COLOR;
}

type Format = Parameters<typeof styleText>[0];

/** Text styles that are the identity when colour is off. */
export interface Style {
  readonly enabled: boolean;
  bold(text: string): string;
  dim(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
  magenta(text: string): string;
}

export function createStyle(enabled: boolean): Style {
  // The caller decided whether the stream takes colour; styleText must not decide again from stdout.
  const apply = (format: Format) => (text: string) => (enabled && text ? styleText(format, text, { validateStream: false }) : text);
  return {
    enabled,
    bold: apply('bold'),
    dim: apply('dim'),
    red: apply('red'),
    green: apply('green'),
    yellow: apply('yellow'),
    cyan: apply('cyan'),
    magenta: apply('magenta'),
  };
}

// C0 and C1 controls (but tab and newline), DEL, and the bidirectional overrides and isolates: text from
// mail (subjects, names, bodies) must not move the cursor, recolour the terminal or reorder what is shown.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** Text from the server made safe for a terminal, keeping line breaks and tabs (bodies). */
export function safeText(text: string): string {
  return text.replace(/\r\n?/g, '\n').replace(UNSAFE, '\ufffd');
}

/**
 * `text` without the run of `char` at its end. A loop rather than `/\n+$/`, which a regex engine tries
 * from every `char` of the text: quadratic on text made of them.
 */
export function trimEnd(text: string, char: string): string {
  let end = text.length;
  while (end > 0 && text[end - 1] === char) end -= 1;
  return text.slice(0, end);
}

/** Text from the server made safe for one table cell or one line: whitespace runs become one space. */
export function safeLine(text: string): string {
  return safeText(text).replace(/\s+/g, ' ').trim();
}

// eslint-disable-next-line no-control-regex -- the escape character starts every SGR sequence
const ANSI = /\u001b\[[0-9;]*m/g;

/** Columns a string takes in a terminal: wide East Asian characters and emoji take two, combining marks none. */
export function displayWidth(text: string): number {
  let width = 0;
  for (const char of text.replace(ANSI, '')) width += charWidth(char);
  return width;
}

function charWidth(char: string): number {
  const code = char.codePointAt(0) ?? 0;
  if (/\p{Mn}|\p{Me}|\p{Cf}/u.test(char)) return 0;
  if (
    (code >= 0x1100 && code <= 0x115f) ||
    (code >= 0x2e80 && code <= 0xa4cf && code !== 0x303f) ||
    (code >= 0xac00 && code <= 0xd7a3) ||
    (code >= 0xf900 && code <= 0xfaff) ||
    (code >= 0xfe30 && code <= 0xfe4f) ||
    (code >= 0xff00 && code <= 0xff60) ||
    (code >= 0xffe0 && code <= 0xffe6) ||
    (code >= 0x1f300 && code <= 0x1faff) ||
    (code >= 0x20000 && code <= 0x3fffd)
  ) {
    return 2;
  }
  return 1;
}

/** Cut a plain (unstyled) string to `max` columns, ending with `…` when something was cut. */
export function truncate(text: string, max: number): string {
  if (displayWidth(text) <= max) return text;
  let out = '';
  let width = 0;
  for (const char of text) {
    const w = charWidth(char);
    if (width + w > max - 1) break;
    out += char;
    width += w;
  }
  return `${out}…`;
}

export interface Column<Row> {
  header: string;
  /** The cell's plain text; it is made safe for the terminal and cut to `max`. */
  value: (row: Row) => string;
  max?: number;
  align?: 'left' | 'right';
  /** Colour for the cell, applied after alignment so it does not disturb the widths. */
  style?: (text: string, row: Row) => string;
}

/**
 * Rows as an aligned table: a header line and one line per row, two spaces between columns, the last
 * column not padded (no trailing blanks).
 */
export function renderTable<Row>(rows: readonly Row[], columns: readonly Column<Row>[], style: Style): string[] {
  const cells = rows.map((row) => columns.map((column) => truncate(safeLine(column.value(row)), column.max ?? Number.POSITIVE_INFINITY)));
  const widths = columns.map((column, i) => Math.max(displayWidth(column.header), ...cells.map((row) => displayWidth(row[i] ?? ''))));
  const last = columns.length - 1;
  const line = (texts: readonly string[], styled: (text: string, i: number) => string): string =>
    texts
      .map((text, i) => {
        const gap = ' '.repeat(Math.max(0, (widths[i] ?? 0) - displayWidth(text)));
        const shown = styled(text, i);
        if (columns[i]?.align === 'right') return gap + shown;
        return i === last ? shown : shown + gap;
      })
      .join('  ')
      .trimEnd();
  return [
    line(
      columns.map((column) => column.header),
      (text) => style.bold(text),
    ),
    ...cells.map((texts, r) => line(texts, (text, i) => columns[i]?.style?.(text, rows[r] as Row) ?? text)),
  ];
}

/** `label  value` lines with the values aligned; null and undefined values are left out. */
export function renderFields(fields: readonly (readonly [string, string | null | undefined])[], style: Style): string[] {
  const shown = fields.filter((f): f is readonly [string, string] => f[1] !== null && f[1] !== undefined);
  const width = Math.max(0, ...shown.map(([label]) => displayWidth(label)));
  return shown.map(([label, value]) => `${style.dim(label.padEnd(width))}  ${safeLine(value)}`);
}

const UNITS: [string, number][] = [
  ['year', 365 * 86_400_000],
  ['month', 30 * 86_400_000],
  ['day', 86_400_000],
  ['hour', 3_600_000],
  ['minute', 60_000],
  ['second', 1000],
];

/**
 * An ISO time relative to `now`: `just now`, `5 minutes ago`, `in 14 days`. Times further than 30 days
 * in the past show as a date (`2026-09-01`): an old message is found by its date, not by "3 months ago".
 */
export function relativeTime(iso: string | null | undefined, now: number = Date.now()): string {
  if (!iso) return '-';
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return iso;
  const delta = at - now;
  if (Math.abs(delta) < 45_000) return 'just now';
  if (delta < -30 * 86_400_000) return iso.slice(0, 10);
  for (const [unit, ms] of UNITS) {
    if (Math.abs(delta) >= ms || unit === 'second') {
      // What Intl.RelativeTimeFormat('en') says, written out: building that formatter loads ICU data, which took
      // longer than the rest of a command's start.
      const count = Math.abs(Math.round(delta / ms));
      const amount = `${count} ${unit}${count === 1 ? '' : 's'}`;
      return delta < 0 ? `${amount} ago` : `in ${amount}`;
    }
  }
  return iso;
}

/** A byte count for a person: `34 B`, `1.2 KiB`, `3.4 MiB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}

/** `Name <address>`, or the address alone. */
export function formatAddress(address: { name: string; address: string } | null): string {
  if (!address) return '-';
  return address.name ? `${address.name} <${address.address}>` : address.address;
}

/** `1 message`, `2 messages`. */
export function plural(count: number, singular: string, pluralForm = `${singular}s`): string {
  return `${count} ${count === 1 ? singular : pluralForm}`;
}

/**
 * The footer of a page: how many there are and, when the page does not hold them all, which ones it
 * shows and how to get the next page. `noun` is `[singular, plural]`.
 */
export function pageFooter(page: { total: number; limit: number; offset: number }, shown: number, noun: readonly [string, string]): string {
  const [one, many] = noun;
  if (page.total === 0) return `no ${many}`;
  if (page.offset === 0 && shown === page.total) return plural(page.total, one, many);
  if (shown === 0) return `no ${many} at offset ${page.offset} (${page.total} in all)`;
  const last = page.offset + shown;
  const more = last < page.total ? `; next page: --offset ${last}` : '';
  return `${page.offset + 1}–${last} of ${page.total} ${many}${more}`;
}
