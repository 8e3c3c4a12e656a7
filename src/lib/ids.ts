import { monotonicFactory } from 'ulid';

/** Prefixes of every public id (contract §2): opaque, prefixed, time-sortable. */
export type IdPrefix =
  | 'msg' | 'thr' | 'att' | 'drf' | 'dom' | 'tok' | 'whk' | 'evt' | 'dlv' | 'ws' | 'usr'
  | 'mbx' | 'key' | 'ses' | 'job' | 'lst';

const nextUlid = monotonicFactory();

/** A new id such as `msg_01jd3k…`: a ULID (time, then randomness) in lower case, so ids sort by creation. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${nextUlid().toLowerCase()}`;
}

const ID_PATTERN = /^[a-z]{2,3}_[0-9a-hjkmnp-tv-z]{26}$/;

/** Whether a string has the shape of one of our ids (cheap pre-check before a lookup). */
export function looksLikeId(value: string, prefix: IdPrefix): boolean {
  return value.startsWith(`${prefix}_`) && ID_PATTERN.test(value);
}
