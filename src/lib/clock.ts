/** The time source. Services take a Clock so tests can move time without touching the system clock. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock tests can move by hand. */
export function manualClock(start = Date.now()): Clock & { advance(ms: number): void; set(ms: number): void } {
  let current = start;
  return {
    now: () => current,
    advance: (ms: number) => {
      current += ms;
    },
    set: (ms: number) => {
      current = ms;
    },
  };
}

const DAY_MS = 86_400_000;
/** 0000-01-01 and 10000-01-01: outside, toISOString writes a signed six-digit year. */
const MIN_FAST_MS = -62_167_219_200_000;
const MAX_FAST_MS = 253_402_300_800_000;
let cachedDay = Number.NaN;
let cachedDayPrefix = '';
const pad2 = (n: number) => (n < 10 ? `0${n}` : `${n}`);

/**
 * Epoch milliseconds → ISO 8601 UTC string (the API's timestamp format), exactly as
 * `Date.prototype.toISOString` writes it. A page of messages writes a hundred of these, and
 * toISOString's cost showed in a page's profile (bench/HISTORY.md); here the date part is kept for
 * the last day seen (the messages of a page are mostly from the same few days) and the time of day is plain arithmetic.
 */
export function iso(ms: number): string;
export function iso(ms: number | null): string | null;
export function iso(ms: number | null): string | null {
  if (ms === null) return null;
  if (!Number.isInteger(ms) || ms < MIN_FAST_MS || ms >= MAX_FAST_MS) return new Date(ms).toISOString();
  const day = Math.floor(ms / DAY_MS);
  if (day !== cachedDay) {
    cachedDayPrefix = new Date(day * DAY_MS).toISOString().slice(0, 11);
    cachedDay = day;
  }
  let rest = ms - day * DAY_MS;
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = Math.floor(rest / 1000);
  const millis = rest - seconds * 1000;
  return `${cachedDayPrefix}${pad2(hours)}:${pad2(minutes)}:${pad2(seconds)}.${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}Z`;
}
