/**
 * The reads of a FETCH run (README-fetch-runs.md): the messages of the FETCHes a run serves, in reads of at most
 * `AHEAD_MESSAGES` raw sources and `AHEAD_BYTES` (or `AHEAD_ROWS` rows without raw bytes). A read starts when the
 * one before it is first answered from, so the database reads the next while the session writes this one's answers,
 * and at most two reads' rows are held at a time.
 */
import type { FetchEntry, FetchRead, RawTarget } from '../../modules/imap-access/imap-access.service.js';
import type { Command, FetchCommand } from './protocol/index.js';

/** Raw sources a read takes: a run of one-message FETCHes (mbsync) is several reads, each overlapping a write. */
const AHEAD_MESSAGES = 32;
/** Bytes of raw sources a read takes: two reads held stay within the 16 MiB a raw read may hold. */
const AHEAD_BYTES = 8 * 1024 * 1024;
/** Rows without raw bytes a read takes (flags, kept structures). */
const AHEAD_ROWS = 100;

/** Reads the rows of `uids` (ascending or not) with what `read` names. */
export type LoadRows = (uids: readonly number[], read: FetchRead) => Promise<FetchEntry[]>;

interface Read {
  uids: number[];
  bytes: number;
  rows: Promise<Map<number, FetchEntry>> | null;
}

export class RunReads {
  private readonly reads: Read[] = [];
  private readonly served = new Map<Command, { parsed: FetchCommand; read: number }>();
  /** Reads before this one are answered and let go. */
  private current = 0;

  constructor(
    readonly read: FetchRead,
    private readonly load: LoadRows,
  ) {}

  /** Takes a FETCH's messages into the reads; false when they would not fit one read (the FETCH reads its own). */
  add(cmd: Command, parsed: FetchCommand, messages: readonly RawTarget[]): boolean {
    const raw = this.read === 'raw';
    const limit = raw ? AHEAD_MESSAGES : AHEAD_ROWS;
    const bytes = raw ? messages.reduce((n, m) => n + m.size, 0) : 0;
    if (messages.length > limit || bytes > AHEAD_BYTES) return false;
    let last = this.reads[this.reads.length - 1];
    if (!last || last.uids.length + messages.length > limit || last.bytes + bytes > AHEAD_BYTES) {
      last = { uids: [], bytes: 0, rows: null };
      this.reads.push(last);
    }
    for (const m of messages) last.uids.push(m.uid);
    last.bytes += bytes;
    this.served.set(cmd, { parsed, read: this.reads.length - 1 });
    return true;
  }

  get empty(): boolean {
    return this.reads.length === 0;
  }

  /** The parsed FETCH when the reads serve it. */
  parsedOf(cmd: Command): FetchCommand | undefined {
    return this.served.get(cmd)?.parsed;
  }

  /** Starts the first read and the one after it. */
  start(): void {
    this.begin(0);
    this.begin(1);
  }

  /**
   * The rows of `uids` when `cmd` is served and its read holds them all; null otherwise (a message removed meanwhile:
   * the FETCH reads its own). FETCHes are answered in order, so the reads before its read are let go here.
   */
  async rowsOf(cmd: Command, uids: readonly number[]): Promise<FetchEntry[] | null> {
    const at = this.served.get(cmd)?.read;
    if (at === undefined) return null;
    if (uids.length === 0) return [];
    for (; this.current < at; this.current++) this.reads[this.current]!.rows = null;
    this.begin(at);
    this.begin(at + 1);
    const rows = await this.reads[at]!.rows!;
    const out: FetchEntry[] = [];
    for (const uid of uids) {
      const row = rows.get(uid);
      if (!row) return null;
      out.push(row);
    }
    return out;
  }

  private begin(i: number): void {
    const r = this.reads[i];
    if (!r || r.rows || i < this.current) return;
    r.rows = this.load(r.uids, this.read).then((rows) => new Map(rows.map((row) => [row.uid, row])));
    // A read that fails before its FETCH awaits it is not an unhandled rejection: that await throws.
    r.rows.catch(() => undefined);
  }
}
