/**
 * The IMAP protocol layer: no sockets, no database, only bytes and typed values. The session layer
 *
 *   1. feeds socket data to a `CommandReader` (`push`), takes events with `next()` (or `readLine()` during
 *      AUTHENTICATE and IDLE), answers `continue` with `+ OK` and `bad` with a tagged BAD (BYE when fatal);
 *   2. parses a command's `args` with the parser of its name (`parseFetchCommand`, `parseSearchCommand`, …), each
 *      returning a typed value or a `ParseError` to send as `tag BAD text` (NO when `no` is set);
 *   3. writes responses with a `ResponseWriter` and sends `take()`'s Buffer.
 */
export * from './token.js';
export * from './reader.js';
export * from './writer.js';
export * from './sequence.js';
export * from './datetime.js';
export * from './mailbox.js';
export * from './flags.js';
export * from './fetch.js';
export * from './store.js';
export * from './search.js';
export * from './commands.js';
