import { randomFillSync } from 'node:crypto';

/** Prefixes of every public id: opaque, prefixed, time-sortable. */
export type IdPrefix =
  | 'msg' | 'thr' | 'att' | 'drf' | 'dom' | 'tok' | 'whk' | 'evt' | 'dlv' | 'ws' | 'usr'
  | 'mbx' | 'key' | 'ses' | 'job' | 'lst' | 'cap' | 'dns' | 'aud' | 'app' | 'rpt';

/** Crockford's base32 alphabet in lower case (no i, l, o, u), as ULIDs use it. */
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const RANDOM_BYTES = 10; // 80 bits: 16 characters
const POOL_BYTES = 4096;

// Randomness is drawn from the kernel 4 KiB at a time. The `ulid` package draws it once per character
// (16 crypto calls per id), which showed in a POST /send's profile as much as composing the message did
// (bench/HISTORY.md); that, and nothing else, is why this small ULID generator is written here.
const pool = Buffer.alloc(POOL_BYTES);
let poolOffset = POOL_BYTES;
let lastTime = -1;
const lastRandom = new Uint8Array(RANDOM_BYTES);

function freshRandom(): void {
  if (poolOffset + RANDOM_BYTES > POOL_BYTES) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  lastRandom.set(pool.subarray(poolOffset, poolOffset + RANDOM_BYTES));
  poolOffset += RANDOM_BYTES;
}

/** Add one to the random part; on the (2^-80) overflow move to the next millisecond. */
function incrementRandom(): void {
  for (let i = RANDOM_BYTES - 1; i >= 0; i--) {
    if (lastRandom[i]! < 255) {
      lastRandom[i]! += 1;
      return;
    }
    lastRandom[i] = 0;
  }
  lastTime += 1;
}

/**
 * A monotonic ULID (https://github.com/ulid/spec) in lower case: 48 bits of milliseconds, then 80 random
 * bits; within one millisecond (or if the clock steps back) the random part counts up, so ids made by one
 * process sort in creation order.
 */
export function ulid(now: number = Date.now()): string {
  if (now > lastTime) {
    lastTime = now;
    freshRandom();
  } else {
    incrementRandom();
  }
  let time = lastTime;
  let head = '';
  for (let i = 0; i < 10; i++) {
    head = ALPHABET[time % 32]! + head;
    time = Math.floor(time / 32);
  }
  let tail = '';
  let acc = 0;
  let bits = 0;
  for (const byte of lastRandom) {
    acc = (acc << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      tail += ALPHABET[(acc >> bits) & 31]!;
    }
    acc &= (1 << bits) - 1;
  }
  return head + tail;
}

/** A new id such as `msg_01jd3k…`: a ULID (time, then randomness) in lower case, so ids sort by creation. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${ulid()}`;
}

const ID_PATTERN = /^[a-z]{2,3}_[0-9a-hjkmnp-tv-z]{26}$/;

/** Whether a string has the shape of one of our ids (cheap pre-check before a lookup). */
export function looksLikeId(value: string, prefix: IdPrefix): boolean {
  return value.startsWith(`${prefix}_`) && ID_PATTERN.test(value);
}
