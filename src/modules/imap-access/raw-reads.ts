/**
 * Raw sources are read a bounded amount at a time: at most `RAW_READ_MESSAGES` messages and `RAW_READ_BYTES` bytes
 * a statement (one message alone when it is larger), so what a session holds follows this bound, not how many
 * messages a command names or how large they are (a FETCH of 100 messages of 25 MB each would otherwise hold 2.5 GB).
 */
import { sizeChunks } from '../../lib/size-chunks.js';

export const RAW_READ_MESSAGES = 100;
export const RAW_READ_BYTES = 16 * 1024 * 1024;

/** A message to read the raw source of: its UID and its size (from the session's index, so no statement asks). */
export interface RawTarget {
  uid: number;
  size: number;
}

/** `rows` (in UID order, with their sizes) in consecutive chunks within the bound. */
export const rawChunks = <T extends { size: number }>(rows: readonly T[]): T[][] => sizeChunks(rows, RAW_READ_BYTES, RAW_READ_MESSAGES);

/** Ascending UIDs as ranges of consecutive ones. */
export function uidRanges(uids: readonly number[]): Array<[number, number]> {
  const ranges: Array<[number, number]> = [];
  for (const uid of uids) {
    const last = ranges[ranges.length - 1];
    if (last && uid === last[1] + 1) last[1] = uid;
    else ranges.push([uid, uid]);
  }
  return ranges;
}
