// What IMAP FETCH says about a stored message: its MIME tree as byte ranges, ENVELOPE, BODY/BODYSTRUCTURE and
// section bytes. Pure functions over the raw bytes, Dovecot 2.3's answers being the reference.
export type { ImapValue, SectionSpec } from './types.js';
export { MAX_IMAP_UID } from './types.js';
export { parseMime, MAX_NESTING, MAX_PARTS, type MimePart, type PartKind } from './mime-parser.js';
export { envelope } from './envelope.js';
export { bodyStructure } from './body-structure.js';
export { fetchSection, fetchWhole, findPart, literalSafe, partialRange, sectionBody } from './section.js';
export { binarySection, type BinaryResult, type BinarySpec } from './binary.js';
export { serializeImapValue } from './serialize.js';
export { STRUCTURE_VERSION, bodyStructureBytes, envelopeBytes, packStructure, structureBytes, unpackStructure, type StructureBytes } from './structure.js';
