/**
 * The incremental command reader: bytes from a socket in, complete commands (or refusals) out.
 *
 * Shaped as push/pull: `push(chunk)` only queues, `next()` parses one event at a time. The session can therefore
 * change what it expects between two events (AUTHENTICATE's and IDLE's raw lines through `readLine()`), and it
 * stops reading the socket while a command runs, which is the backpressure that bounds the queue.
 *
 * Linear time: each byte is scanned for the line end once; a line is joined once, when its line end arrives (one
 * `Buffer.concat`), and a literal's large pieces are copied once (none at all when it lies in one chunk: it is a
 * view of it); small pieces are staged first (Gather, scan.ts) so that memory follows bytes, not packets.
 * Memory: the unparsed queue the caller let in, plus at most `maxLineLength` of line and one literal within its bound.
 *
 * Errors never throw: a malformed command is a `bad` event and the reader resynchronises at the next line end.
 * A non-synchronizing literal announced by a refused line is skipped byte-counted (never kept) so that message
 * bytes are never read as commands; one too large to skip ends the reader (`fatal`: the caller says BYE and closes).
 */
import { ATOM, EMPTY, Gather, LF, SP, TAG, atom, lineEnd, nonSyncLiteralAtEnd, quoted, tagOf } from './scan.js';
import type { Command, Token } from './token.js';

export interface ReaderOptions {
  /** Bytes of one command outside its literals, line ends included in the count but not the bound (64 KiB). */
  maxLineLength?: number;
  /** The largest literal, or the largest for a command name (APPENDLIMIT for APPEND, little otherwise). */
  maxLiteralSize?: number | ((name: string) => number);
  /** How deep parenthesised lists may nest (32). */
  maxDepth?: number;
  /** Tokens (lists included) in one command (10,000). */
  maxTokens?: number;
  /** Whether `{n+}` (RFC 7888 LITERAL+) is accepted (default true). */
  literalPlus?: boolean;
}

export type ReaderEvent =
  | { kind: 'command'; command: Command }
  /** A synchronizing literal was accepted: send `+ ` now, the client waits for it before sending the bytes. */
  | { kind: 'continue'; tag: string; name: string; size: number }
  /**
   * A refused command: reply `tag BAD text` (or `NO [TOOBIG]` when `code` says so; `* BAD` when the tag is
   * unknown). `fatal`: the stream cannot be resynchronised (a non-synchronizing literal over the bound): say BYE, close.
   */
  | { kind: 'bad'; tag: string | null; text: string; code?: 'TOOBIG'; fatal?: true }
  /** A raw line asked for with `readLine()`, line end removed. */
  | { kind: 'line'; line: Buffer };

export const DEFAULT_MAX_LINE_LENGTH = 64 * 1024;
export const DEFAULT_MAX_LITERAL_SIZE = 64 * 1024;
export const DEFAULT_MAX_DEPTH = 32;
export const DEFAULT_MAX_TOKENS = 10_000;

const TOO_LONG = Symbol('too long');

interface CommandState {
  tag: string;
  name: string;
  stack: Token[][];
  tokens: number;
  lineBytes: number;
}

type SegmentResult =
  | { done: true }
  | { literal: { size: number; sync: boolean; binary: boolean } }
  | { error: string }
  | { empty: true };

export class CommandReader {
  private readonly maxLine: number;
  private readonly literalLimit: (name: string) => number;
  private readonly maxDepth: number;
  private readonly maxTokens: number;
  private readonly literalPlus: boolean;

  private chunks: Buffer[] = [];
  private head = 0;
  private off = 0;
  private queued = 0;
  private mode: 'line' | 'literal' | 'skip' | 'skipLiteral' | 'dead' = 'line';
  private line = new Gather();
  private cmd: CommandState | null = null;
  private lit = { need: 0, binary: false, data: new Gather() };
  private skipTail = '';
  private skipLeft = 0;
  private skipName = '';
  private lineWanted = false;

  constructor(options: ReaderOptions = {}) {
    this.maxLine = options.maxLineLength ?? DEFAULT_MAX_LINE_LENGTH;
    const lim = options.maxLiteralSize ?? DEFAULT_MAX_LITERAL_SIZE;
    this.literalLimit = typeof lim === 'number' ? () => lim : lim;
    this.maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH;
    this.maxTokens = options.maxTokens ?? DEFAULT_MAX_TOKENS;
    this.literalPlus = options.literalPlus ?? true;
  }

  /** Bytes queued and not yet parsed: the caller pauses its socket above its own bound. */
  get buffered(): number {
    return this.queued;
  }

  /** True once a fatal event was returned: nothing more will be read. */
  get closed(): boolean {
    return this.mode === 'dead';
  }

  push(chunk: Buffer): void {
    if (this.mode === 'dead' || chunk.length === 0) return;
    this.chunks.push(chunk);
    this.queued += chunk.length;
  }

  /** The next event, or null when more bytes are needed. */
  next(): ReaderEvent | null {
    for (;;) {
      switch (this.mode) {
        case 'dead':
          return null;
        case 'literal':
          if (!this.readLiteral()) return null;
          break;
        case 'skipLiteral':
          if (!this.discardLiteral()) return null;
          break;
        case 'skip': {
          const ev = this.skipLine();
          if (ev === null) return null;
          if (ev !== true) return ev;
          break;
        }
        default: {
          const ev = this.lineStep();
          if (ev !== undefined) return ev;
        }
      }
    }
  }

  /**
   * The next raw line instead of a command (an AUTHENTICATE response, IDLE's DONE), or null when it has not
   * arrived yet. Call it only between commands.
   */
  readLine(): ReaderEvent | null {
    this.lineWanted = true;
    try {
      return this.next();
    } finally {
      this.lineWanted = false;
    }
  }

  /** One step in line mode: an event to return, null (out of input) or undefined (go on). */
  private lineStep(): ReaderEvent | null | undefined {
    const used = this.cmd?.lineBytes ?? 0;
    const seg = this.takeSegment(this.maxLine - used);
    if (seg === null) return null;
    if (seg === TOO_LONG) {
      const tag = this.cmd?.tag ?? this.pendingTag;
      this.skipName = this.cmd?.name ?? '';
      this.cmd = null;
      this.mode = 'skip';
      this.skipTail = '';
      return { kind: 'bad', tag, text: 'Too long argument.' };
    }
    if (this.lineWanted && this.cmd === null) {
      return { kind: 'line', line: seg.subarray(0, lineEnd(seg)) };
    }
    if (this.cmd) this.cmd.lineBytes += seg.length;
    const res = this.parseSegment(seg);
    if ('empty' in res) return undefined;
    if ('error' in res) return this.refuse(res.error, seg);
    if ('done' in res) {
      const { tag, name, stack } = this.cmd!;
      this.cmd = null;
      return { kind: 'command', command: { tag, name, args: stack[0]! } };
    }
    return this.startLiteral(res.literal);
  }

  /** The tag of the line being refused for length, read from its first piece (kept only until then). */
  private pendingTag: string | null = null;

  private startLiteral(l: { size: number; sync: boolean; binary: boolean }): ReaderEvent | undefined {
    const cmd = this.cmd!;
    if (l.size > this.literalLimit(cmd.name)) {
      this.cmd = null;
      if (l.sync) return { kind: 'bad', tag: cmd.tag, text: 'Literal too large.', code: 'TOOBIG' };
      this.die();
      return { kind: 'bad', tag: cmd.tag, text: 'Literal too large.', code: 'TOOBIG', fatal: true };
    }
    this.mode = 'literal';
    this.lit = { need: l.size, binary: l.binary, data: new Gather() };
    return l.sync ? { kind: 'continue', tag: cmd.tag, name: cmd.name, size: l.size } : undefined;
  }

  /** A refused segment: report it and skip what the client sends for the rest of the command. */
  private refuse(text: string, seg: Buffer): ReaderEvent {
    const tag = this.cmd?.tag ?? null;
    this.skipName = this.cmd?.name ?? '';
    this.cmd = null;
    this.skipTail = seg.toString('latin1', Math.max(0, seg.length - 40), seg.length - 1);
    const after = this.afterSkippedLine();
    if (after === 'fatal') return { kind: 'bad', tag, text, fatal: true };
    return { kind: 'bad', tag, text };
  }

  private die(): void {
    this.mode = 'dead';
    this.chunks = [];
    this.head = 0;
    this.off = 0;
    this.queued = 0;
    this.line = new Gather();
    this.lit.data = new Gather();
  }

  /**
   * The bytes up to and including the next LF (one Buffer), null when it has not arrived, or TOO_LONG once more
   * than `limit` bytes (plus the line end) came without one; the pieces held before then are dropped.
   */
  private takeSegment(limit: number): Buffer | null | typeof TOO_LONG {
    while (this.head < this.chunks.length) {
      const c = this.chunks[this.head]!;
      const lf = c.indexOf(LF, this.off);
      if (lf < 0) {
        const piece = this.off === 0 ? c : c.subarray(this.off);
        this.line.add(piece);
        this.advance(piece.length);
        if (this.line.length > limit + 1) return this.tooLong(EMPTY);
        continue;
      }
      const len = lf + 1 - this.off;
      // Left in place when too long: skip mode consumes it up to the line end and looks at its tail there.
      if (this.line.length + len > limit + 2) return this.tooLong(c.subarray(this.off, lf));
      const piece = c.subarray(this.off, lf + 1);
      this.advance(len);
      return this.line.take(piece);
    }
    return null;
  }

  /** Drops the line held so far, keeping only its tag for the refusal. */
  private tooLong(rest: Buffer): typeof TOO_LONG {
    const held = this.line.take(EMPTY);
    this.pendingTag = this.cmd === null ? tagOf(Buffer.concat([held.subarray(0, 256), rest.subarray(0, 256)])) : null;
    return TOO_LONG;
  }

  private advance(n: number): void {
    this.off += n;
    this.queued -= n;
    const c = this.chunks[this.head];
    if (c !== undefined && this.off >= c.length) {
      this.chunks[this.head] = EMPTY;
      this.head++;
      this.off = 0;
      if (this.head >= 64 && this.head * 2 >= this.chunks.length) {
        this.chunks = this.chunks.slice(this.head);
        this.head = 0;
      }
    }
  }

  private readLiteral(): boolean {
    const lit = this.lit;
    while (lit.data.length < lit.need && this.head < this.chunks.length) {
      const c = this.chunks[this.head]!;
      const take = Math.min(c.length - this.off, lit.need - lit.data.length);
      lit.data.add(c.subarray(this.off, this.off + take));
      this.advance(take);
    }
    if (lit.data.length < lit.need) return false;
    const value = lit.data.take(EMPTY);
    const stack = this.cmd!.stack;
    stack[stack.length - 1]!.push({ type: 'literal', value, binary: lit.binary });
    this.mode = 'line';
    return true;
  }

  private discardLiteral(): boolean {
    while (this.skipLeft > 0 && this.head < this.chunks.length) {
      const c = this.chunks[this.head]!;
      const take = Math.min(c.length - this.off, this.skipLeft);
      this.skipLeft -= take;
      this.advance(take);
    }
    if (this.skipLeft > 0) return false;
    this.mode = 'skip';
    this.skipTail = '';
    return true;
  }

  /** Discards up to the next LF: true at the line end, null when out of input, a fatal event for a huge literal. */
  private skipLine(): true | null | ReaderEvent {
    while (this.head < this.chunks.length) {
      const c = this.chunks[this.head]!;
      const lf = c.indexOf(LF, this.off);
      const end = lf < 0 ? c.length : lf;
      this.skipTail = (this.skipTail + c.toString('latin1', Math.max(this.off, end - 40), end)).slice(-40);
      this.advance(end - this.off + (lf < 0 ? 0 : 1));
      if (lf < 0) continue;
      if (this.afterSkippedLine() === 'fatal') {
        return { kind: 'bad', tag: null, text: 'Literal too large.', code: 'TOOBIG', fatal: true };
      }
      return true;
    }
    return null;
  }

  /**
   * At the end of a skipped line: a non-synchronizing literal announced there is on its way and is skipped too
   * (then the rest of its command); anything else ends the command.
   */
  private afterSkippedLine(): 'fatal' | 'ok' {
    const size = nonSyncLiteralAtEnd(this.skipTail);
    this.skipTail = '';
    if (size === null) {
      this.mode = 'line';
      return 'ok';
    }
    if (size > this.literalLimit(this.skipName)) {
      this.die();
      return 'fatal';
    }
    this.mode = 'skipLiteral';
    this.skipLeft = size;
    return 'ok';
  }

  /** Tokenises one segment (a line, or the part of one up to a literal) into the command being read. */
  private parseSegment(seg: Buffer): SegmentResult {
    const end = lineEnd(seg);
    let i = 0;
    if (this.cmd === null) {
      if (end === 0) return { empty: true };
      const head = this.parseHead(seg, end);
      if ('error' in head) return head;
      i = head.at;
    }
    return this.parseArgs(seg, i, end);
  }

  private parseHead(seg: Buffer, end: number): { at: number } | { error: string } {
    let i = 0;
    while (i < end && TAG[seg[i]!]) i++;
    if (i === 0 || (i < end && seg[i] !== SP)) return { error: 'Error in IMAP command received by server.' };
    const tag = seg.toString('latin1', 0, i);
    this.cmd = { tag, name: '', stack: [[]], tokens: 0, lineBytes: seg.length };
    while (i < end && seg[i] === SP) i++;
    const start = i;
    while (i < end && ATOM[seg[i]!]) i++;
    if (i === start) return { error: 'Missing command name.' };
    if (i < end && seg[i] !== SP) return { error: 'Invalid command name.' };
    this.cmd.name = seg.toString('latin1', start, i).toUpperCase();
    return { at: i };
  }

  private parseArgs(seg: Buffer, from: number, end: number): SegmentResult {
    const cmd = this.cmd!;
    let i = from;
    while (i < end) {
      const c = seg[i]!;
      if (c === SP) {
        i++;
        continue;
      }
      if (c === 0x28 /* ( */) {
        if (cmd.stack.length > this.maxDepth) return { error: 'Too deeply nested lists.' };
        const items: Token[] = [];
        if (!this.add({ type: 'list', items })) return { error: 'Too many arguments.' };
        cmd.stack.push(items);
        i++;
        continue;
      }
      if (c === 0x29 /* ) */) {
        if (cmd.stack.length === 1) return { error: "Unexpected ')'." };
        cmd.stack.pop();
        i++;
        continue;
      }
      if (c === 0x7b /* { */ || (c === 0x7e /* ~ */ && seg[i + 1] === 0x7b)) return this.literalMarker(seg, i, end);
      const r = c === 0x22 /* " */ ? quoted(seg, i, end) : atom(seg, i, end);
      if ('error' in r) return r;
      if (!this.add(r.token)) return { error: 'Too many arguments.' };
      i = r.at;
    }
    if (cmd.stack.length > 1) return { error: "Missing ')'." };
    return { done: true };
  }

  /** Adds a token to the innermost open list; `UID` followed by an atom becomes one command name. */
  private add(t: Token): boolean {
    const cmd = this.cmd!;
    if (++cmd.tokens > this.maxTokens) return false;
    const top = cmd.stack[cmd.stack.length - 1]!;
    if (cmd.name === 'UID' && cmd.stack.length === 1 && top.length === 0 && t.type === 'atom') {
      cmd.name = `UID ${t.value.toUpperCase()}`;
      return true;
    }
    top.push(t);
    return true;
  }

  private literalMarker(seg: Buffer, i: number, end: number): SegmentResult {
    const binary = seg[i] === 0x7e;
    let j = binary ? i + 2 : i + 1;
    const start = j;
    while (j < end && seg[j]! >= 0x30 && seg[j]! <= 0x39) j++;
    const digits = j - start;
    const sync = seg[j] !== 0x2b; /* + */
    if (!sync) j++;
    if (digits === 0 || seg[j] !== 0x7d /* } */ || j + 1 !== end) return { error: 'Invalid literal.' };
    if (!sync && !this.literalPlus) return { error: 'Invalid literal.' };
    if (++this.cmd!.tokens > this.maxTokens) return { error: 'Too many arguments.' };
    const size = digits > 15 ? Number.MAX_SAFE_INTEGER : Number(seg.toString('latin1', start, start + digits));
    return { literal: { size, sync, binary } };
  }
}
