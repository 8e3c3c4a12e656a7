/**
 * An IMAP value for the response writer: `null` is NIL, a number is a number, a string or a Buffer is an IMAP
 * string (the writer picks quoted or literal: a Buffer may hold 8-bit bytes, a string is ASCII), an array is a
 * parenthesised list.
 */
export type ImapValue = null | number | string | Buffer | readonly ImapValue[];

/** A section as FETCH names it (RFC 3501 section 6.4.5, RFC 9051 section 6.4.5). */
export interface SectionSpec {
  /** Part numbers (`1.2` is [1, 2]); empty for the whole message. */
  part: readonly number[];
  /** What of the part: all of it (undefined), its header, header fields (not) named, its text, or its MIME header. */
  text?: 'HEADER' | 'HEADER.FIELDS' | 'HEADER.FIELDS.NOT' | 'TEXT' | 'MIME';
  /** The field names of HEADER.FIELDS (.NOT), any case. */
  fields?: readonly string[];
  /** `<origin.count>`: bytes from origin, at most count of them. */
  partial?: { origin: number; count: number };
}

/** The largest UID (and UIDNEXT) an IMAP client may be shown: RFC 9051's nz-number is 32-bit. */
export const MAX_IMAP_UID = 0xffff_ffff;
