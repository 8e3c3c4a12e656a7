/** Subject threading joins a thread only within this window: an old subject reused later starts a new thread. */
export const SUBJECT_THREAD_WINDOW_MS = 30 * 86_400_000;

// Reply/forward prefixes in the languages mail clients commonly add, with optional counters
// ("Re[2]:", "RE: RE:") and list tags ("[team] Re: …").
// White space is matched once between the word and the colon (a counter may stand in it), so that no two
// `\s*` compete for the same run.
const PREFIX = /^\s*(?:\[[^\]]{1,40}\]\s*)?(?:re|fw|fwd|aw|wg|sv|vs|antw|ref|rif|tr|odp|r|enc|res)\s*(?:(?:\[\d+\]|\(\d+\))\s*)?[:：]\s*/i;

/**
 * Characters of a normalised subject that threads compare. A PostgreSQL index entry (threads_subject_idx) may not
 * pass 2,704 bytes, which 998 characters of non-ASCII text can; 200 characters are at most 800 bytes of UTF-8.
 */
export const SUBJECT_KEY_LENGTH = 200;

/** The subject with reply/forward prefixes removed, white space folded, lower-cased, cut to SUBJECT_KEY_LENGTH: threads compare by this. */
export function normalizeSubject(subject: string): string {
  let current = subject;
  for (let i = 0; i < 20; i += 1) {
    const next = current.replace(PREFIX, '');
    if (next === current) break;
    current = next;
  }
  const key = current.replace(/\s+/g, ' ').trim().toLowerCase();
  return key.length > SUBJECT_KEY_LENGTH ? [...key].slice(0, SUBJECT_KEY_LENGTH).join('') : key;
}

/** Whether two participant lists share an address. */
export function shareParticipant(a: readonly string[], b: readonly string[]): boolean {
  const set = new Set(a);
  return b.some((x) => set.has(x));
}
