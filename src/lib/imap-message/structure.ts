// The serialized ENVELOPE, BODYSTRUCTURE and BODY of a message: the exact bytes a FETCH writes for them, so they can
// be computed once and kept (the mail store's `message_structures`) instead of parsing the raw message every time.
import { bodyStructure } from './body-structure.js';
import { envelope } from './envelope.js';
import { parseMime, type MimePart } from './mime-parser.js';
import { serializeImapValue } from './serialize.js';

/**
 * The version of the bytes below. Raise it with any change that alters them (parser, envelope, body structure,
 * serializer): a kept copy of another version is never served, and is computed again and replaced on first use.
 * test/imap-fetch-cache.test.ts pins the bytes of the fixture corpus to this number.
 */
export const STRUCTURE_VERSION = 1;

/** A message's ENVELOPE, BODYSTRUCTURE and BODY values as FETCH writes them. */
export interface StructureBytes {
  envelope: Buffer;
  bodyStructure: Buffer;
  body: Buffer;
}

/** ENVELOPE's bytes (from the top-level header alone). */
export function envelopeBytes(raw: Buffer, root: MimePart): Buffer {
  return serializeImapValue(envelope(raw, root.headerStart, root.bodyStart));
}

/** BODYSTRUCTURE's bytes (`extended`) or BODY's. */
export function bodyStructureBytes(raw: Buffer, root: MimePart, extended: boolean): Buffer {
  return serializeImapValue(bodyStructure(raw, root, extended));
}

/** Bytes before the values in a packed structure: the lengths of ENVELOPE and BODYSTRUCTURE (BODY takes the rest). */
const PACKED_HEAD = 8;

/** The three values as one buffer, to be kept as one column (one allocation when read back). */
export function packStructure(s: StructureBytes): Buffer {
  const head = Buffer.allocUnsafe(PACKED_HEAD);
  head.writeUInt32BE(s.envelope.length, 0);
  head.writeUInt32BE(s.bodyStructure.length, 4);
  return Buffer.concat([head, s.envelope, s.bodyStructure, s.body]);
}

/** The three values of a packed structure, as views of it (no copy); null for bytes too short to be one. */
export function unpackStructure(packed: Buffer): StructureBytes | null {
  if (packed.length < PACKED_HEAD) return null;
  const envelopeEnd = PACKED_HEAD + packed.readUInt32BE(0);
  const bodyStructureEnd = envelopeEnd + packed.readUInt32BE(4);
  if (bodyStructureEnd > packed.length) return null;
  return { envelope: packed.subarray(PACKED_HEAD, envelopeEnd), bodyStructure: packed.subarray(envelopeEnd, bodyStructureEnd), body: packed.subarray(bodyStructureEnd) };
}

/** All three from one parse. */
export function structureBytes(raw: Buffer, root: MimePart = parseMime(raw)): StructureBytes {
  return { envelope: envelopeBytes(raw, root), bodyStructure: bodyStructureBytes(raw, root, true), body: bodyStructureBytes(raw, root, false) };
}
