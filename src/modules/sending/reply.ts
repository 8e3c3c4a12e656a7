/**
 * Reply headers (RFC 5322 section 3.6.4). Message-IDs go back out with their letter case kept: the store
 * compares them case-insensitively, but the recipient's client may not.
 */

/** References kept on a reply: the thread's first id and the most recent ones (long threads would grow without end). */
export const MAX_REFERENCES = 50;
/** RFC 5322 section 2.1.1: no id longer than a line. */
const MAX_ID_LENGTH = 998;

/** Message-IDs in a header value, without angle brackets, letter case kept. */
export function headerMessageIds(value: string | undefined): string[] {
  if (!value) return [];
  const bracketed = value.match(/<[^<>\s]+>/g);
  const ids = bracketed ? bracketed.map((id) => id.slice(1, -1)) : value.split(/\s+/);
  return ids.map((id) => id.trim()).filter((id) => id.length > 0 && Buffer.byteLength(id) <= MAX_ID_LENGTH);
}

/** The header block of a raw message as unfolded fields, in order. */
export function rawHeaderFields(raw: Buffer): Array<{ name: string; value: string }> {
  const text = raw.toString('latin1');
  const split = text.search(/\r?\n\r?\n/);
  const head = split === -1 ? text : text.slice(0, split);
  const fields: Array<{ name: string; value: string }> = [];
  for (const line of head.split(/\r?\n(?![ \t])/)) {
    const colon = line.indexOf(':');
    if (colon > 0) fields.push({ name: line.slice(0, colon).trim(), value: line.slice(colon + 1).replace(/\r?\n[ \t]+/g, ' ').trim() });
  }
  return fields;
}

export interface ReplyHeaders {
  /** The parent's Message-ID; absent when the parent had none. */
  inReplyTo: string | undefined;
  references: string[];
}

/**
 * In-Reply-To and References of a reply to a message with these header fields: References is the
 * parent's References (or, lacking it, its single In-Reply-To) followed by the parent's Message-ID.
 * `storedId` (lower-case) stands in when the fields carry no Message-ID.
 */
export function replyHeaders(fields: ReadonlyArray<{ name: string; value: string }>, storedId: string | null): ReplyHeaders {
  const get = (name: string) => fields.find((f) => f.name.toLowerCase() === name)?.value;
  const own = headerMessageIds(get('message-id'))[0] ?? storedId ?? undefined;
  const references = headerMessageIds(get('references'));
  const inReplyTo = headerMessageIds(get('in-reply-to'));
  const chain = references.length > 0 ? references : inReplyTo.length === 1 ? inReplyTo : [];
  const seen = new Set<string>(own ? [own.toLowerCase()] : []);
  const unique: string[] = [];
  for (const id of chain) {
    const key = id.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    unique.push(id);
  }
  if (own) unique.push(own);
  // The parent's own id is last, so trimming from the middle always keeps it and the thread's root.
  const kept = unique.length > MAX_REFERENCES ? [unique[0]!, ...unique.slice(unique.length - (MAX_REFERENCES - 1))] : unique;
  return { inReplyTo: own, references: kept };
}
