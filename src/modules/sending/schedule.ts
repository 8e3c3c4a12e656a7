import { invalid } from '../../lib/errors.js';

const DAY_MS = 86_400_000;
/** A message may be scheduled up to 30 days ahead (Resend's limit too). */
export const MAX_SCHEDULE_DAYS = 30;
export const MAX_SCHEDULE_MS = MAX_SCHEDULE_DAYS * DAY_MS;

/** RFC 3339's date-time: an ISO 8601 date and time with its offset (Z or ±hh:mm), seconds and fraction optional. */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T([01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d{1,9})?)?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)$/i;

const badSendAt = (detail: string) => invalid('invalid_request', `send_at ${detail}`);

/**
 * A send's `send_at` as epoch milliseconds, or null for "send now": absent, now or already past (as Resend does,
 * a time that has passed sends at once). Text that is not a date-time with an offset, and a time more than
 * MAX_SCHEDULE_DAYS ahead, are a 400 naming the field.
 */
export function scheduledTime(sendAt: string | undefined, now: number): number | null {
  if (sendAt === undefined) return null;
  const at = parseDateTime(sendAt);
  if (at === null) throw badSendAt(`'${sendAt.slice(0, 64)}' is not an ISO 8601 date-time with an offset (e.g. 2026-12-01T09:00:00Z)`);
  if (at > now + MAX_SCHEDULE_MS) throw badSendAt(`must be at most ${MAX_SCHEDULE_DAYS} days ahead (${new Date(now + MAX_SCHEDULE_MS).toISOString()})`);
  return at > now ? at : null;
}

/** The instant a date-time names, or null when it is no such text or names no real day (2026-02-30). */
function parseDateTime(text: string): number | null {
  const match = DATE_TIME.exec(text);
  if (!match) return null;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  // Date.UTC rolls an impossible day over into the next month; a real one comes back as it went in.
  const date = new Date(Date.UTC(year, month - 1, day));
  if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return null;
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? ms : null;
}

/** RFC 5322's date-time, in UTC, as nodemailer writes it: `Sun, 01 Nov 2026 03:04:05 +0000`. */
export function rfc5322Date(ms: number): string {
  return new Date(ms).toUTCString().replace(/GMT$/, '+0000');
}

/**
 * The message with its Date header set to `ms`: a scheduled message goes out dated when it is to leave, not when
 * it was scheduled (up to 30 days earlier), nor when a reschedule was asked for. Only the header block is read; the
 * body, and with it any attachment, is copied as it is, and not at all when the Date is already `ms`.
 */
export function withDate(raw: Buffer, ms: number): Buffer {
  const end = raw.indexOf('\r\n\r\n');
  const headEnd = end < 0 ? raw.length : end + 2;
  const head = raw.subarray(0, headEnd).toString('latin1');
  // The field with its folded continuation lines; a message without one gets it first.
  const field = /^Date:[^\r\n]*\r\n(?:[ \t][^\r\n]*\r\n)*/im;
  const line = `Date: ${rfc5322Date(ms)}\r\n`;
  if (field.exec(head)?.[0] === line) return raw;
  const dated = field.test(head) ? head.replace(field, line) : line + head;
  return Buffer.concat([Buffer.from(dated, 'latin1'), raw.subarray(headEnd)]);
}
