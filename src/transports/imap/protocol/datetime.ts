/**
 * IMAP dates: `date` (`1-Feb-1994`, SEARCH) and `date-time` (`"17-Jul-1996 02:44:25 -0700"`, APPEND and
 * INTERNALDATE). Parsed by hand rather than with Date.parse, whose accepted forms vary and are not IMAP's.
 */
import { astringText, type ParseError, type Token } from './token.js';

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const MONTH_NAMES = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** A calendar day (SEARCH compares days in the server's zone, or UTC: the caller decides). */
export interface ImapDate {
  year: number;
  month: number; // 1-12
  day: number;
}

const DATE = /^(\d{1,2})-([A-Za-z]{3})-(\d{4})$/;
const DATE_TIME = /^([ \d]\d)-([A-Za-z]{3})-(\d{4}) (\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})$/;

function validDay(year: number, month: number, day: number): boolean {
  if (month < 1 || month > 12 || day < 1 || year < 1) return false;
  return day <= new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** `date`: an atom or a quoted string, `d-Mon-yyyy` or `dd-Mon-yyyy`. */
export function parseDate(t: Token | undefined): ImapDate | ParseError {
  const m = DATE.exec(t?.type === 'literal' ? '' : (astringText(t) ?? ''));
  const month = m ? MONTHS.indexOf(m[2]!.toUpperCase()) + 1 : 0;
  if (!m || !validDay(Number(m[3]), month, Number(m[1]))) return { bad: 'Invalid search date parameter.' };
  return { year: Number(m[3]), month, day: Number(m[1]) };
}

/** `date-time`: a quoted string; the instant, and the zone it was written in (minutes east of UTC). */
export function parseDateTime(t: Token | undefined): { date: Date; zone: number } | ParseError {
  const m = t?.type === 'string' ? DATE_TIME.exec(t.value.toString('latin1')) : null;
  if (!m) return { bad: 'Invalid date-time.' };
  const [, d, mon, y, hh, mm, ss, sign, zh, zm] = m as unknown as string[];
  const day = Number(d!.trim());
  const month = MONTHS.indexOf(mon!.toUpperCase()) + 1;
  const year = Number(y);
  const [h, mi, s] = [Number(hh), Number(mm), Number(ss)];
  if (!validDay(year, month, day) || h > 23 || mi > 59 || s > 60 || Number(zm) > 59) return { bad: 'Invalid date-time.' };
  const zone = (sign === '-' ? -1 : 1) * (Number(zh) * 60 + Number(zm));
  const ms = Date.UTC(year, month - 1, day, h, mi, Math.min(s, 59)) - zone * 60_000;
  return { date: new Date(ms), zone };
}

const pad = (n: number) => String(n).padStart(2, '0');

/** `17-Jul-1996 02:44:25 -0700` (the day space-padded, as `date-day-fixed`), in the zone given (minutes). */
export function formatDateTime(date: Date, zone = 0): string {
  const t = new Date(date.getTime() + zone * 60_000);
  const z = Math.abs(zone);
  const day = String(t.getUTCDate()).padStart(2, ' ');
  const time = `${pad(t.getUTCHours())}:${pad(t.getUTCMinutes())}:${pad(t.getUTCSeconds())}`;
  return `${day}-${MONTH_NAMES[t.getUTCMonth()]}-${t.getUTCFullYear()} ${time} ${zone < 0 ? '-' : '+'}${pad(Math.floor(z / 60))}${pad(z % 60)}`;
}

/** `1-Feb-1994`. */
export function formatDate(d: ImapDate): string {
  return `${d.day}-${MONTH_NAMES[d.month - 1]}-${d.year}`;
}
